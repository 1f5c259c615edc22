-- 0027: an entry names the device that sent it. history's sent_by is
-- the address of the device that wrote the entry's message when that is
-- not this device: here, for a sent copy (frame kind 14 or 17; state 4,
-- engine.SentCopied), the sibling whose copy made the entry; for a
-- received entry, the peer's device that sent it (written on receipt
-- from here on; received entries stored before keep NULL: no record says
-- for sure which device sent them). NULL on this device's own sent
-- entries and wherever the device is not known.
-- Only that device edits or deletes the message here, and adoption, when
-- it is removed, adopts exactly the copies it made: the finalized record
-- of a copy is keyed by (sender, id) alone, so another device's record of
-- the same ID (a copy to another conversation, a group message) no longer
-- passes for authorship of this entry.
--
-- The entries stored before this migration get the one own device
-- (user/*, this profile's user) with a committed finalized record of
-- their ID; an entry with none, or with two or more (an ID reused by a
-- sibling, as a hostile device would), keeps NULL: nobody edits, deletes
-- or adopts it. The records are read through their key's user prefix,
-- the entries through history_copied.
ALTER TABLE history ADD COLUMN sent_by TEXT;

WITH own(p) AS (
    SELECT substr(CAST(v AS TEXT), 1, instr(CAST(v AS TEXT), '/')) FROM meta
    WHERE k = 'address' AND instr(CAST(v AS TEXT), '/') > 1
),
cand(seq, sender) AS (
    SELECT h.seq, f.sender FROM own
    JOIN finalized f ON f.sender >= own.p AND f.sender < substr(own.p, 1, length(own.p) - 1) || '0' AND f.outcome = 1
    JOIN history h ON h.id = f.id AND h.direction = 2 AND h.state = 4
),
one(seq, sender) AS (
    SELECT seq, min(sender) FROM cand GROUP BY seq HAVING count(*) = 1
)
UPDATE history SET sent_by = (SELECT one.sender FROM one WHERE one.seq = history.seq)
WHERE seq IN (SELECT seq FROM one);
