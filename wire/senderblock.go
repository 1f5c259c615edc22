package wire

import "fmt"

// Kind 17, added after version 1 was frozen: a client asks its relay to
// discard (or deliver again) one sender's envelopes to it. A relay that
// serves it announces FeatureSenderBlock in Features; the relay answers with
// Done, or with an Error (ErrorBadRequest for an invalid address, or a full
// block list). Its layout (docs/wire-format.md): the sender's address (u8
// length and bytes, as everywhere) and one byte, 1 to block, 0 to unblock;
// any other value is malformed.

// SenderBlock asks the relay to discard (Blocked) or deliver again
// (!Blocked) the envelopes Sender submits to the authenticated address.
type SenderBlock struct {
	Sender  string
	Blocked bool
}

// RelayKind implements RelayMessage.
func (SenderBlock) RelayKind() RelayKind { return RelaySenderBlock }

func (SenderBlock) isRelayMessage() {}

func appendSenderBlock(b []byte, m SenderBlock) ([]byte, error) {
	if err := checkAddress(m.Sender); err != nil {
		return nil, fmt.Errorf("sender: %w", err)
	}
	b = appendAddress(b, m.Sender)
	if m.Blocked {
		return append(b, 1), nil
	}
	return append(b, 0), nil
}

func (r *reader) senderBlock() RelayMessage {
	var m SenderBlock
	m.Sender = r.address("sender")
	switch v := r.u8("blocked"); {
	case r.err != nil:
	case v > 1:
		r.fail(fmt.Errorf("blocked byte %d is neither 0 nor 1: %w", v, ErrMalformed))
	default:
		m.Blocked = v == 1
	}
	return ok(r, m)
}
