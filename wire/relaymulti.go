package wire

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"slices"
)

// Kind 29, added after the batch kinds: a client hands the relay one payload
// for several mailboxes (SubmitMulti), as a group message encrypted once under
// a sender chain is the same bytes for every member. The relay stores the
// payload once and puts a small entry (the envelope ID and the recipient) in
// each mailbox; each recipient is delivered an ordinary envelope of the
// given type, ID and recipient carrying the shared payload. Each mailbox is
// checked and charged as if its envelope came alone in a Submit, and the
// relay answers with BatchResults, one result per mailbox in the order
// given. A relay that serves it announces FeatureSubmitMulti; a client that
// does not see it submits one envelope per member, as before.
//
// Layout (docs/wire-format.md): the envelope type (u8), the sender (u8
// length and address), the payload (u32 length, 1 to
// MaxSubmitMultiPayloadSize, and its bytes), a u8 count (1 to
// MaxSubmitMultiMailboxes) and that many mailboxes, each an envelope ID (16
// bytes) and a recipient (u8 length and address), the recipients in strictly
// increasing byte order (so each once, and one encoding per message).

// RelaySubmitMulti is the multi-mailbox submit kind (client → server).
const RelaySubmitMulti RelayKind = 29

const (
	// FeatureSubmitMulti: the relay serves SubmitMulti.
	FeatureSubmitMulti FeatureSet = 1 << 5

	// MaxSubmitMultiMailboxes is the most mailboxes one SubmitMulti names:
	// a group's every member but the sender fits.
	MaxSubmitMultiMailboxes = MaxGroupMembers
	// MaxSubmitMultiPayloadSize is the largest payload of a SubmitMulti:
	// whatever its mailboxes, the message fits MaxRelayMessageSize.
	MaxSubmitMultiPayloadSize = MaxRelayMessageSize - relayHeaderSize - submitMultiFixed - MaxSubmitMultiMailboxes*submitMultiEntryMax

	submitMultiFixed    = 1 + 1 + MaxAddressSize + 4 + 1
	submitMultiEntryMax = 16 + 1 + MaxAddressSize
)

// Its answer, a BatchResults of MaxSubmitMultiMailboxes, fits the read limit.
var _ [MaxSubmitBatchEnvelopes - MaxSubmitMultiMailboxes]struct{}

// SubmitMulti hands the relay one payload for several mailboxes.
type SubmitMulti struct {
	Type      EnvelopeType
	Sender    string
	Payload   []byte
	Mailboxes []Mailbox
}

// Mailbox is one recipient of a SubmitMulti and the ID of its envelope.
type Mailbox struct {
	EnvelopeID EnvelopeID
	Recipient  string
}

// Envelope returns the envelope the i-th mailbox's recipient is delivered.
// Its payload is the SubmitMulti's, not a copy.
func (m SubmitMulti) Envelope(i int) Envelope {
	return Envelope{Type: m.Type, ID: m.Mailboxes[i].EnvelopeID, Sender: m.Sender, Recipient: m.Mailboxes[i].Recipient, Payload: m.Payload}
}

// RelayKind implements RelayMessage.
func (SubmitMulti) RelayKind() RelayKind { return RelaySubmitMulti }

func (SubmitMulti) isRelayMessage() {}

func (m SubmitMulti) check() error {
	if !m.Type.valid() {
		return fmt.Errorf("unknown envelope type %d: %w", m.Type, ErrMalformed)
	}
	if err := checkAddress(m.Sender); err != nil {
		return fmt.Errorf("sender: %w", err)
	}
	if len(m.Payload) == 0 {
		return fmt.Errorf("empty payload: %w", ErrMalformed)
	}
	if len(m.Payload) > MaxSubmitMultiPayloadSize {
		return fmt.Errorf("payload of %d bytes over %d: %w", len(m.Payload), MaxSubmitMultiPayloadSize, ErrMessageTooLarge)
	}
	n := len(m.Mailboxes)
	if n == 0 {
		return fmt.Errorf("no mailboxes: %w", ErrMalformed)
	}
	if n > MaxSubmitMultiMailboxes {
		return fmt.Errorf("%d mailboxes over %d: %w", n, MaxSubmitMultiMailboxes, ErrMessageTooLarge)
	}
	for i, mb := range m.Mailboxes {
		if err := checkAddress(mb.Recipient); err != nil {
			return fmt.Errorf("mailbox %d: %w", i, err)
		}
		if i > 0 && m.Mailboxes[i-1].Recipient >= mb.Recipient {
			return fmt.Errorf("mailboxes out of order at %d: %w", i, ErrMalformed)
		}
	}
	return nil
}

func appendSubmitMulti(b []byte, m SubmitMulti) ([]byte, error) {
	if err := m.check(); err != nil {
		return nil, err
	}
	b = slices.Grow(b, submitMultiFixed+len(m.Payload)+len(m.Mailboxes)*submitMultiEntryMax)
	b = append(b, byte(m.Type))
	b = appendAddress(b, m.Sender)
	b = binary.BigEndian.AppendUint32(b, uint32(len(m.Payload)))
	b = append(b, m.Payload...)
	b = append(b, byte(len(m.Mailboxes)))
	for _, mb := range m.Mailboxes {
		b = append(b, mb.EnvelopeID[:]...)
		b = appendAddress(b, mb.Recipient)
	}
	return b, nil
}

func (r *reader) submitMulti() RelayMessage {
	var m SubmitMulti
	m.Type = EnvelopeType(r.u8("envelope type"))
	if r.err == nil && !m.Type.valid() {
		r.fail(fmt.Errorf("unknown envelope type %d: %w", m.Type, ErrMalformed))
	}
	m.Sender = r.address("sender")
	p := r.sized("payload", 1, MaxSubmitMultiPayloadSize)
	n := int(r.u8("mailbox count"))
	if r.err == nil && (n < 1 || n > MaxSubmitMultiMailboxes) {
		r.fail(fmt.Errorf("mailbox count %d outside 1..%d: %w", n, MaxSubmitMultiMailboxes, ErrMalformed))
	}
	if r.err != nil {
		return nil
	}
	m.Mailboxes = make([]Mailbox, 0, n)
	for i := 0; i < n && r.err == nil; i++ {
		var mb Mailbox
		r.array(mb.EnvelopeID[:], "envelope ID")
		mb.Recipient = r.address("recipient")
		if r.err == nil && i > 0 && m.Mailboxes[i-1].Recipient >= mb.Recipient {
			r.fail(fmt.Errorf("mailboxes out of order at %d: %w", i, ErrMalformed))
		}
		m.Mailboxes = append(m.Mailboxes, mb)
	}
	m.Payload = bytes.Clone(p)
	return ok(r, m)
}
