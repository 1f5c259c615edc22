package wire

import (
	"encoding/binary"
	"fmt"
)

// Kinds 44 to 47 (issue 33): the relay's one-time provisioning mailboxes,
// through which a new device and a device of the account it joins talk
// while they link. A provisioning connection never authenticates: its first
// message, in place of Auth, is ProvisionOpen, and after ProvisionOpened it
// may send only ProvisionMessage. What the two devices say is sealed end to
// end (the engine's linking); the relay sees opaque payloads.
//
// Layout (docs/wire-format.md): ProvisionOpen is a mailbox ID [16] (all
// zero to open a new mailbox); ProvisionOpened a mailbox ID [16] and the
// expiry, i64 Unix seconds; ProvisionMessage a u32 length
// (1..MaxProvisionPayload) and the payload; ProvisionClosed a reason byte.

// Provisioning relay kinds.
const (
	RelayProvisionOpen    RelayKind = 44 // client → server, instead of Auth
	RelayProvisionOpened  RelayKind = 45 // server → client
	RelayProvisionMessage RelayKind = 46 // both ways
	RelayProvisionClosed  RelayKind = 47 // server → client

	relayProvisionFirst = RelayProvisionOpen
	relayProvisionLast  = RelayProvisionClosed
)

// FeatureProvisioning: the relay serves provisioning mailboxes (kinds 44
// to 47). A device about to link a new one checks it on its own
// connection; the new device, which has no address yet, learns it from the
// answer to ProvisionOpen.
const FeatureProvisioning FeatureSet = 1 << 9

// MaxProvisionPayload is the largest payload of one ProvisionMessage: room
// for a linking package (a device list of MaxDeviceListSize and the
// account's contacts and settings) under MaxRelayMessageSize.
const MaxProvisionPayload = 196608

// MailboxID names a provisioning mailbox: 16 random bytes the relay draws,
// a secret shared by the two devices that use it.
type MailboxID [16]byte

// ProvisionOpen opens a new provisioning mailbox (a zero Mailbox) or joins
// an open one. The relay answers ProvisionOpened, or Error: not found (no
// such mailbox, or it expired or has its two sides already), rate limited
// (the IP's open mailboxes), bad request (a relay without them).
type ProvisionOpen struct {
	Mailbox MailboxID
}

// ProvisionOpened tells a provisioning connection its mailbox and when it
// expires (Unix seconds); the relay ends both sides then.
type ProvisionOpened struct {
	Mailbox MailboxID
	Expires int64
}

// ProvisionMessage is one payload of a mailbox: sent by one side (answered
// Done, or Error), pushed to the other (request ID 0). A payload sent
// before the other side joined waits for it, a few at most.
type ProvisionMessage struct {
	Payload []byte
}

// ProvisionClosed tells a side its mailbox ended; the connection closes
// after it.
type ProvisionClosed struct {
	Reason ProvisionCloseReason
}

// ProvisionCloseReason says why a mailbox ended.
type ProvisionCloseReason uint8

// Provisioning close reasons.
const (
	ProvisionPeerLeft ProvisionCloseReason = 1 // the other side's connection ended
	ProvisionExpired  ProvisionCloseReason = 2 // the mailbox's time ran out
)

func (r ProvisionCloseReason) valid() bool { return r == ProvisionPeerLeft || r == ProvisionExpired }

// String returns "peer left" or "expired".
func (r ProvisionCloseReason) String() string {
	switch r {
	case ProvisionPeerLeft:
		return "peer left"
	case ProvisionExpired:
		return "expired"
	}
	return fmt.Sprintf("provisioning close reason %d", uint8(r))
}

// RelayKind implements RelayMessage.
func (ProvisionOpen) RelayKind() RelayKind { return RelayProvisionOpen }

// RelayKind implements RelayMessage.
func (ProvisionOpened) RelayKind() RelayKind { return RelayProvisionOpened }

// RelayKind implements RelayMessage.
func (ProvisionMessage) RelayKind() RelayKind { return RelayProvisionMessage }

// RelayKind implements RelayMessage.
func (ProvisionClosed) RelayKind() RelayKind { return RelayProvisionClosed }

func (ProvisionOpen) isRelayMessage()    {}
func (ProvisionOpened) isRelayMessage()  {}
func (ProvisionMessage) isRelayMessage() {}
func (ProvisionClosed) isRelayMessage()  {}

var relayProvisionKindNames = [...]string{
	"provision open", "provision opened", "provision message", "provision closed",
}

// maxProvisionMessageSize is the largest provisioning relay message.
const maxProvisionMessageSize = relayHeaderSize + 4 + MaxProvisionPayload

func isRelayProvision(m RelayMessage) bool {
	switch m.(type) {
	case ProvisionOpen, ProvisionOpened, ProvisionMessage, ProvisionClosed:
		return true
	}
	return false
}

func appendRelayProvision(b []byte, m RelayMessage) ([]byte, error) {
	switch m := m.(type) {
	case ProvisionOpen:
		return append(b, m.Mailbox[:]...), nil
	case ProvisionOpened:
		b = append(b, m.Mailbox[:]...)
		return binary.BigEndian.AppendUint64(b, uint64(m.Expires)), nil
	case ProvisionMessage:
		if len(m.Payload) == 0 {
			return nil, fmt.Errorf("empty provisioning payload: %w", ErrMalformed)
		}
		if len(m.Payload) > MaxProvisionPayload {
			return nil, fmt.Errorf("provisioning payload of %d bytes over %d: %w", len(m.Payload), MaxProvisionPayload, ErrMessageTooLarge)
		}
		b = binary.BigEndian.AppendUint32(b, uint32(len(m.Payload)))
		return append(b, m.Payload...), nil
	case ProvisionClosed:
		if !m.Reason.valid() {
			return nil, fmt.Errorf("unknown %s: %w", m.Reason, ErrMalformed)
		}
		return append(b, byte(m.Reason)), nil
	}
	return nil, fmt.Errorf("unsupported type %T: %w", m, ErrMalformed)
}

func (r *reader) relayProvision(kind RelayKind) RelayMessage {
	switch kind {
	case RelayProvisionOpen:
		var m ProvisionOpen
		r.array(m.Mailbox[:], "mailbox")
		return ok(r, m)
	case RelayProvisionOpened:
		var m ProvisionOpened
		r.array(m.Mailbox[:], "mailbox")
		m.Expires = r.i64("expires")
		return ok(r, m)
	case RelayProvisionMessage:
		p := r.sized("payload", 1, MaxProvisionPayload)
		if r.err != nil {
			return nil
		}
		return ok(r, ProvisionMessage{Payload: append([]byte(nil), p...)})
	case RelayProvisionClosed:
		m := ProvisionClosed{Reason: ProvisionCloseReason(r.u8("reason"))}
		if r.err == nil && !m.Reason.valid() {
			r.fail(fmt.Errorf("unknown %s: %w", m.Reason, ErrMalformed))
		}
		return ok(r, m)
	}
	r.fail(fmt.Errorf("kind %d: %w", kind, ErrUnknownRelayKind))
	return nil
}
