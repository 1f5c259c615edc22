-- 0010: when the relay reported an attempt's envelope taken by the
-- recipient's device (wire.EnvelopeStatus): the message is then on that
-- device, waiting for its acknowledgement. NULL while nothing was heard,
-- which is every attempt logged before this version.
ALTER TABLE attempt ADD COLUMN taken_at INTEGER; -- Unix nanoseconds
