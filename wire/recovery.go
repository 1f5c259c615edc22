package wire

import "fmt"

// RecoveryKind says what a recovery request points at: the initiation of a
// PreKeyMessage that was refused, or the sending chain of a RatchetMessage
// that failed.
type RecoveryKind uint8

// Recovery kinds.
const (
	// RecoveryInitiation: Ref is the initiation ID of a refused
	// PreKeyMessage.
	RecoveryInitiation RecoveryKind = 1
	// RecoveryChain: Ref is the ratchet key in the header of a
	// RatchetMessage that could not be decrypted.
	RecoveryChain RecoveryKind = 2
)

const (
	// RecoveryRequestVersion is the only RecoveryRequest version.
	RecoveryRequestVersion = 1
	// RecoveryRequestSize is the size of an encoded RecoveryRequest.
	RecoveryRequestSize = 1 + 1 + 32 + 32 + 64
)

// RecoveryRequest is the payload of an EnvelopeRecovery: a device that could
// not use an envelope from the recipient tells it so, and names its own
// current session with it, so that the recipient can set up a fresh session
// that replaces exactly that one. It carries no plaintext and no key; the
// engine defines what the signature covers.
type RecoveryRequest struct {
	Kind RecoveryKind
	// Ref is what failed (see RecoveryKind).
	Ref [32]byte
	// Current is the sender's current session initiation ID with the
	// recipient; zero when it has none.
	Current [32]byte
	// Signature is the sender's Ed25519 identity signature.
	Signature [64]byte
}

// AppendSigned appends the request's fields that the signature covers
// (version byte through Current) to b.
func (r RecoveryRequest) AppendSigned(b []byte) []byte {
	b = append(b, RecoveryRequestVersion, byte(r.Kind))
	b = append(b, r.Ref[:]...)
	return append(b, r.Current[:]...)
}

// EncodeRecoveryRequest returns the request's bytes. An unknown kind fails
// with ErrMalformed.
func EncodeRecoveryRequest(r RecoveryRequest) ([]byte, error) {
	if r.Kind != RecoveryInitiation && r.Kind != RecoveryChain {
		return nil, fmt.Errorf("wire: encode recovery request: kind %d: %w", r.Kind, ErrMalformed)
	}
	b := r.AppendSigned(make([]byte, 0, RecoveryRequestSize))
	return append(b, r.Signature[:]...), nil
}

// DecodeRecoveryRequest parses one RecoveryRequest. It rejects, in this
// order: input longer than MaxPayloadSize, the most any envelope payload may
// be (ErrMessageTooLarge); a version other than RecoveryRequestVersion
// (ErrUnsupportedVersion); an unknown kind, truncation or trailing bytes
// (ErrMalformed).
func DecodeRecoveryRequest(b []byte) (RecoveryRequest, error) {
	if len(b) > MaxPayloadSize {
		return RecoveryRequest{}, fmt.Errorf("wire: decode recovery request: %d bytes over %d: %w", len(b), MaxPayloadSize, ErrMessageTooLarge)
	}
	rd := reader{b: b}
	rd.version(RecoveryRequestVersion)
	var r RecoveryRequest
	r.Kind = RecoveryKind(rd.u8("kind"))
	if rd.err == nil && r.Kind != RecoveryInitiation && r.Kind != RecoveryChain {
		rd.fail(fmt.Errorf("unknown kind %d: %w", r.Kind, ErrMalformed))
	}
	rd.array(r.Ref[:], "ref")
	rd.array(r.Current[:], "current")
	rd.array(r.Signature[:], "signature")
	if err := rd.end(); err != nil {
		return RecoveryRequest{}, fmt.Errorf("wire: decode recovery request: %w", err)
	}
	return r, nil
}
