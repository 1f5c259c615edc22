package wire

import (
	"encoding/binary"
	"fmt"
	"slices"
)

// RelayKind names the kind of a relay message.
type RelayKind uint8

// Relay message kinds. The comment says who sends each.
const (
	RelayChallenge     RelayKind = 1  // server → client
	RelayAuth          RelayKind = 2  // client → server
	RelayAuthOK        RelayKind = 3  // server → client
	RelayPublishBundle RelayKind = 4  // client → server
	RelayFetchBundle   RelayKind = 5  // client → server
	RelayBundleReply   RelayKind = 6  // server → client
	RelaySubmit        RelayKind = 7  // client → server
	RelayAccepted      RelayKind = 8  // server → client
	RelayRefused       RelayKind = 9  // server → client
	RelayDeliver       RelayKind = 10 // server → client
	RelayAckRows       RelayKind = 11 // client → server
	RelayDone          RelayKind = 12 // server → client
	RelayError         RelayKind = 13 // server → client
	RelayPrekeyPool    RelayKind = 14 // server → client
	// Added after version 1 was frozen (relaystatus.go).
	RelayEnvelopeStatus RelayKind = 15 // server → client
	RelayFeatures       RelayKind = 16 // server → client
	RelaySenderBlock    RelayKind = 17 // client → server (senderblock.go)
)

var relayKindNames = [...]string{
	RelayChallenge:      "challenge",
	RelayAuth:           "auth",
	RelayAuthOK:         "auth ok",
	RelayPublishBundle:  "publish bundle",
	RelayFetchBundle:    "fetch bundle",
	RelayBundleReply:    "bundle reply",
	RelaySubmit:         "submit",
	RelayAccepted:       "accepted",
	RelayRefused:        "refused",
	RelayDeliver:        "deliver",
	RelayAckRows:        "ack rows",
	RelayDone:           "done",
	RelayError:          "error",
	RelayPrekeyPool:     "prekey pool",
	RelayEnvelopeStatus: "envelope status",
	RelayFeatures:       "features",
	RelaySenderBlock:    "sender block",
}

// String returns a short lowercase name such as "submit".
func (k RelayKind) String() string {
	if int(k) < len(relayKindNames) && relayKindNames[k] != "" {
		return relayKindNames[k]
	}
	if name := laterKindName(k); name != "" {
		return name
	}
	return fmt.Sprintf("relay kind %d", uint8(k))
}

const (
	// RelayVersion is the only relay protocol version.
	RelayVersion = 1
	// MaxPublishOneTimePreKeys is the most one-time prekeys one
	// PublishBundle carries.
	MaxPublishOneTimePreKeys = 200
	// MaxAckRows is the most mailbox rows one AckRows acknowledges.
	MaxAckRows = 256
	// MaxErrorMessageSize is the longest Error message in bytes.
	MaxErrorMessageSize = 512
	// MaxRelayMessageSize is the largest encoded relay message of any kind:
	// a Deliver carrying an envelope of MaxEnvelopeSize.
	MaxRelayMessageSize = max(
		relayHeaderSize+32+32+8,                  // Challenge
		relayHeaderSize+1+MaxAddressSize+32+8+64, // Auth
		maxPublishBundleSize,                     // PublishBundle
		relayHeaderSize+1+MaxAddressSize,         // FetchBundle
		relayHeaderSize+4+MaxBundleSize,          // BundleReply
		relayHeaderSize+4+MaxEnvelopeSize,        // Submit
		relayHeaderSize+16,                       // Accepted
		relayHeaderSize+16+1,                     // Refused
		relayHeaderSize+8+4+MaxEnvelopeSize,      // Deliver
		relayHeaderSize+2+MaxAckRows*8,           // AckRows
		relayHeaderSize+2+2+MaxErrorMessageSize,  // Error
		relayHeaderSize+4,                        // PrekeyPool, Features and EnvelopeLifetime
		relayHeaderSize+16+1,                     // EnvelopeStatus
		maxDeviceListMessageSize,                 // the device list kinds
		maxProvisionMessageSize,                  // the provisioning kinds
	)

	relayHeaderSize = 1 + 1 + 4 // version, kind, request ID
	// maxPublishBundleSize: a bundle of MaxBundleSize less its one-time
	// prekey, and MaxPublishOneTimePreKeys separate ones.
	maxPublishBundleSize = relayHeaderSize + 4 + MaxBundleSize - oneTimePreKeySize + 2 + MaxPublishOneTimePreKeys*oneTimePreKeySize
)

// RelayMessage is one websocket binary message of the relay protocol. The set
// is closed: its members are the structs of this file, passed by value.
type RelayMessage interface {
	RelayKind() RelayKind
	isRelayMessage()
}

// Challenge opens every connection: the client signs it to prove it holds
// the identity key of its address.
type Challenge struct {
	Nonce   [32]byte
	RelayID [32]byte
	Expires int64 // Unix seconds
}

// Auth answers a Challenge. The engine defines the signed message.
type Auth struct {
	Address    string
	SigningKey [32]byte // Ed25519
	Expires    int64    // Unix seconds, the challenge's
	Signature  [64]byte
}

// AuthOK tells the client it is authenticated as its address.
type AuthOK struct{}

// PublishBundle stores the client's bundle, without a one-time prekey, and
// adds OneTimePreKeys to the ones the relay hands out. An empty list decodes
// as nil.
type PublishBundle struct {
	Bundle         Bundle
	OneTimePreKeys []OneTimePreKeyPublic
}

// FetchBundle asks for the bundle of Address.
type FetchBundle struct {
	Address string
}

// BundleReply answers FetchBundle, with at most one one-time prekey.
type BundleReply struct {
	Bundle Bundle
}

// Submit hands the relay one encoded envelope. The relay parses it; wire
// does not.
type Submit struct {
	Envelope []byte
}

// Accepted tells the sender its envelope is stored.
type Accepted struct {
	EnvelopeID EnvelopeID
}

// Refused tells the sender its envelope is not stored, and why.
type Refused struct {
	EnvelopeID EnvelopeID
	Reason     RefuseReason
}

// Deliver carries one envelope from the recipient's mailbox, with the row the
// recipient acknowledges it by.
type Deliver struct {
	Row      uint64
	Envelope []byte
}

// AckRows acknowledges mailbox rows, each after its envelope is durably
// staged.
type AckRows struct {
	Rows []uint64
}

// Done is the generic success reply to PublishBundle and AckRows.
type Done struct{}

// Error is the server's failure reply to a request, or a push before it
// closes the connection.
type Error struct {
	Code    ErrorCode
	Message string // UTF-8 without control characters (IsControl), at most MaxErrorMessageSize bytes
}

// PrekeyPool tells a client how many of its one-time prekeys the relay
// holds: pushed after AuthOK and whenever a fetch leaves the pool low, so
// that the client tops up against the relay's count, not its own.
type PrekeyPool struct {
	Count uint32
}

// RelayKind implements RelayMessage.
func (Challenge) RelayKind() RelayKind { return RelayChallenge }

// RelayKind implements RelayMessage.
func (Auth) RelayKind() RelayKind { return RelayAuth }

// RelayKind implements RelayMessage.
func (AuthOK) RelayKind() RelayKind { return RelayAuthOK }

// RelayKind implements RelayMessage.
func (PublishBundle) RelayKind() RelayKind { return RelayPublishBundle }

// RelayKind implements RelayMessage.
func (FetchBundle) RelayKind() RelayKind { return RelayFetchBundle }

// RelayKind implements RelayMessage.
func (BundleReply) RelayKind() RelayKind { return RelayBundleReply }

// RelayKind implements RelayMessage.
func (Submit) RelayKind() RelayKind { return RelaySubmit }

// RelayKind implements RelayMessage.
func (Accepted) RelayKind() RelayKind { return RelayAccepted }

// RelayKind implements RelayMessage.
func (Refused) RelayKind() RelayKind { return RelayRefused }

// RelayKind implements RelayMessage.
func (Deliver) RelayKind() RelayKind { return RelayDeliver }

// RelayKind implements RelayMessage.
func (AckRows) RelayKind() RelayKind { return RelayAckRows }

// RelayKind implements RelayMessage.
func (Done) RelayKind() RelayKind { return RelayDone }

// RelayKind implements RelayMessage.
func (Error) RelayKind() RelayKind { return RelayError }

// RelayKind implements RelayMessage.
func (PrekeyPool) RelayKind() RelayKind { return RelayPrekeyPool }

func (Challenge) isRelayMessage()     {}
func (Auth) isRelayMessage()          {}
func (AuthOK) isRelayMessage()        {}
func (PublishBundle) isRelayMessage() {}
func (FetchBundle) isRelayMessage()   {}
func (BundleReply) isRelayMessage()   {}
func (Submit) isRelayMessage()        {}
func (Accepted) isRelayMessage()      {}
func (Refused) isRelayMessage()       {}
func (Deliver) isRelayMessage()       {}
func (AckRows) isRelayMessage()       {}
func (Done) isRelayMessage()          {}
func (Error) isRelayMessage()         {}
func (PrekeyPool) isRelayMessage()    {}

// RefuseReason says why the relay refused an envelope.
type RefuseReason uint8

// Refusal reasons.
const (
	RefuseTooLarge         RefuseReason = 1
	RefuseMailboxFull      RefuseReason = 2
	RefuseUnknownRecipient RefuseReason = 3
	RefuseRateLimited      RefuseReason = 4
	RefuseMalformed        RefuseReason = 5
	RefuseWrongSender      RefuseReason = 6
	RefuseNotAuthenticated RefuseReason = 7
	RefuseSenderQuota      RefuseReason = 8
	RefuseStoreFull        RefuseReason = 9
)

var refuseReasonNames = [...]string{
	RefuseTooLarge:         "too large",
	RefuseMailboxFull:      "mailbox full",
	RefuseUnknownRecipient: "unknown recipient",
	RefuseRateLimited:      "rate limited",
	RefuseMalformed:        "malformed envelope",
	RefuseWrongSender:      "sender is not the authenticated address",
	RefuseNotAuthenticated: "not authenticated",
	RefuseSenderQuota:      "the sender's share of the mailbox is full",
	RefuseStoreFull:        "relay storage full",
}

// String returns a short lowercase phrase such as "mailbox full".
func (r RefuseReason) String() string {
	if r.valid() {
		return refuseReasonNames[r]
	}
	return fmt.Sprintf("refuse reason %d", uint8(r))
}

func (r RefuseReason) valid() bool { return r >= RefuseTooLarge && r <= RefuseStoreFull }

// ErrorCode classifies an Error reply.
type ErrorCode uint16

// Error codes.
const (
	ErrorBadRequest   ErrorCode = 1
	ErrorAuthFailed   ErrorCode = 2
	ErrorAddressTaken ErrorCode = 3
	ErrorNotFound     ErrorCode = 4
	ErrorRateLimited  ErrorCode = 5
	ErrorInternal     ErrorCode = 6
	ErrorExpired      ErrorCode = 7
)

var errorCodeNames = [...]string{
	ErrorBadRequest:   "bad request",
	ErrorAuthFailed:   "authentication failed",
	ErrorAddressTaken: "address taken",
	ErrorNotFound:     "not found",
	ErrorRateLimited:  "rate limited",
	ErrorInternal:     "internal error",
	ErrorExpired:      "expired",
}

// String returns a short lowercase phrase such as "address taken".
func (c ErrorCode) String() string {
	if c.valid() {
		return errorCodeNames[c]
	}
	return fmt.Sprintf("error code %d", uint16(c))
}

func (c ErrorCode) valid() bool { return c >= ErrorBadRequest && c <= ErrorExpired }

// EncodeRelay returns the bytes of m with the given request ID (0 for a push
// from the server). m is one of this package's relay structs, by value;
// anything else fails with ErrMalformed. Fields are checked as DecodeRelay
// checks them: a field out of range fails with ErrMalformed, an envelope,
// error message or list over its limit with ErrMessageTooLarge.
func EncodeRelay(request uint32, m RelayMessage) ([]byte, error) {
	switch m.(type) {
	case Challenge, Auth, AuthOK, PublishBundle, FetchBundle, BundleReply, Submit,
		Accepted, Refused, Deliver, AckRows, Done, Error, PrekeyPool, EnvelopeStatus, Features,
		BlobCreate, BlobCreated, BlobPut, BlobStat, BlobHeld, BlobGet, BlobData, BlobRefused, SenderBlock, EnvelopeLifetime,
		SubmitBatch, BatchResults, SubmitMulti, PublishDeviceList, FetchDeviceList, DeviceListReply, DeviceListRefused,
		ProvisionOpen, ProvisionOpened, ProvisionMessage, ProvisionClosed, CheckDeviceList:
	default:
		// Before m.RelayKind: a nil pointer would panic there.
		return nil, fmt.Errorf("wire: encode relay message: unsupported type %T: %w", m, ErrMalformed)
	}
	b := make([]byte, relayHeaderSize, relayHeaderSize+64)
	b[0], b[1] = RelayVersion, byte(m.RelayKind())
	binary.BigEndian.PutUint32(b[2:], request)
	b, err := appendRelayBody(b, m)
	if err != nil {
		return nil, fmt.Errorf("wire: encode relay %s: %w", m.RelayKind(), err)
	}
	return b, nil
}

func appendRelayBody(b []byte, m RelayMessage) ([]byte, error) {
	switch m := m.(type) {
	case Challenge:
		b = append(b, m.Nonce[:]...)
		b = append(b, m.RelayID[:]...)
		return binary.BigEndian.AppendUint64(b, uint64(m.Expires)), nil
	case Auth:
		if err := checkAddress(m.Address); err != nil {
			return nil, err
		}
		b = appendAddress(b, m.Address)
		b = append(b, m.SigningKey[:]...)
		b = binary.BigEndian.AppendUint64(b, uint64(m.Expires))
		return append(b, m.Signature[:]...), nil
	case AuthOK, Done:
		return b, nil
	case PublishBundle:
		if m.Bundle.OneTimePreKey != nil {
			return nil, fmt.Errorf("bundle carries a one-time prekey: %w", ErrMalformed)
		}
		if len(m.OneTimePreKeys) > MaxPublishOneTimePreKeys {
			return nil, fmt.Errorf("%d one-time prekeys over %d: %w", len(m.OneTimePreKeys), MaxPublishOneTimePreKeys, ErrMessageTooLarge)
		}
		b, err := appendBundle(b, &m.Bundle)
		if err != nil {
			return nil, err
		}
		b = binary.BigEndian.AppendUint16(b, uint16(len(m.OneTimePreKeys)))
		b = slices.Grow(b, len(m.OneTimePreKeys)*oneTimePreKeySize)
		for _, k := range m.OneTimePreKeys {
			b = appendOneTimePreKey(b, k)
		}
		return b, nil
	case FetchBundle:
		if err := checkAddress(m.Address); err != nil {
			return nil, err
		}
		return appendAddress(b, m.Address), nil
	case BundleReply:
		return appendBundle(b, &m.Bundle)
	case Submit:
		return appendEnvelope(b, m.Envelope)
	case Accepted:
		return append(b, m.EnvelopeID[:]...), nil
	case Refused:
		if !m.Reason.valid() {
			return nil, fmt.Errorf("unknown refuse reason %d: %w", m.Reason, ErrMalformed)
		}
		b = append(b, m.EnvelopeID[:]...)
		return append(b, byte(m.Reason)), nil
	case Deliver:
		return appendEnvelope(binary.BigEndian.AppendUint64(b, m.Row), m.Envelope)
	case AckRows:
		if len(m.Rows) == 0 {
			return nil, fmt.Errorf("no rows: %w", ErrMalformed)
		}
		if len(m.Rows) > MaxAckRows {
			return nil, fmt.Errorf("%d rows over %d: %w", len(m.Rows), MaxAckRows, ErrMessageTooLarge)
		}
		b = binary.BigEndian.AppendUint16(b, uint16(len(m.Rows)))
		b = slices.Grow(b, 8*len(m.Rows))
		for _, row := range m.Rows {
			b = binary.BigEndian.AppendUint64(b, row)
		}
		return b, nil
	case Error:
		if !m.Code.valid() {
			return nil, fmt.Errorf("unknown error code %d: %w", m.Code, ErrMalformed)
		}
		if len(m.Message) > MaxErrorMessageSize {
			return nil, fmt.Errorf("message of %d bytes over %d: %w", len(m.Message), MaxErrorMessageSize, ErrMessageTooLarge)
		}
		if err := checkErrorText(m.Message); err != nil {
			return nil, err
		}
		b = binary.BigEndian.AppendUint16(b, uint16(m.Code))
		b = binary.BigEndian.AppendUint16(b, uint16(len(m.Message)))
		return append(b, m.Message...), nil
	case PrekeyPool:
		return binary.BigEndian.AppendUint32(b, m.Count), nil
	}
	return appendRelayPush(b, m)
}

// appendBundle appends a u32 length and the encoded bundle.
func appendBundle(b []byte, bd *Bundle) ([]byte, error) {
	if err := bd.check(); err != nil {
		return nil, fmt.Errorf("bundle: %w", err)
	}
	n := bd.size()
	b = slices.Grow(b, 4+n)
	b = binary.BigEndian.AppendUint32(b, uint32(n))
	return bd.append(b), nil
}

// appendEnvelope appends a u32 length and the raw envelope bytes.
func appendEnvelope(b, env []byte) ([]byte, error) {
	if len(env) == 0 {
		return nil, fmt.Errorf("empty envelope: %w", ErrMalformed)
	}
	if len(env) > MaxEnvelopeSize {
		return nil, fmt.Errorf("envelope of %d bytes over %d: %w", len(env), MaxEnvelopeSize, ErrMessageTooLarge)
	}
	b = slices.Grow(b, 4+len(env))
	b = binary.BigEndian.AppendUint32(b, uint32(len(env)))
	return append(b, env...), nil
}

// DecodeRelay parses one relay message and returns its request ID and its
// message, one of this package's relay structs by value. It rejects, in this
// order: input longer than MaxRelayMessageSize (ErrMessageTooLarge); a
// version other than RelayVersion (ErrUnsupportedVersion); an unknown kind
// (ErrUnknownRelayKind, itself an ErrMalformed), truncation, a field out of
// range, a length or count over its limit, or trailing bytes
// (ErrMalformed). An embedded bundle is decoded as
// DecodeBundle does, so its own version byte may also give
// ErrUnsupportedVersion. Byte slices are copies; envelopes are not parsed.
func DecodeRelay(b []byte) (request uint32, m RelayMessage, err error) {
	if len(b) > MaxRelayMessageSize {
		return 0, nil, fmt.Errorf("wire: decode relay message: %d bytes over %d: %w", len(b), MaxRelayMessageSize, ErrMessageTooLarge)
	}
	r := reader{b: b}
	r.version(RelayVersion)
	kind := RelayKind(r.u8("kind"))
	if r.err == nil && !knownRelayKind(kind) {
		r.fail(fmt.Errorf("kind %d: %w", kind, ErrUnknownRelayKind))
	}
	request = r.u32("request ID")
	if r.err != nil {
		return 0, nil, fmt.Errorf("wire: decode relay message: %w", r.err)
	}
	m = r.relayBody(kind)
	if err := r.end(); err != nil {
		return 0, nil, fmt.Errorf("wire: decode relay %s: %w", kind, err)
	}
	return request, m, nil
}

// relayBody reads the body of a message of the given kind.
func (r *reader) relayBody(kind RelayKind) RelayMessage {
	switch kind {
	case RelayChallenge:
		var c Challenge
		r.array(c.Nonce[:], "nonce")
		r.array(c.RelayID[:], "relay ID")
		c.Expires = r.i64("expires")
		return ok(r, c)
	case RelayAuth:
		var a Auth
		a.Address = r.address("address")
		r.array(a.SigningKey[:], "signing key")
		a.Expires = r.i64("expires")
		r.array(a.Signature[:], "signature")
		return ok(r, a)
	case RelayAuthOK:
		return ok(r, AuthOK{})
	case RelayPublishBundle:
		var p PublishBundle
		p.Bundle = r.bundle()
		if r.err == nil && p.Bundle.OneTimePreKey != nil {
			r.fail(fmt.Errorf("bundle carries a one-time prekey: %w", ErrMalformed))
		}
		n := int(r.u16("one-time prekey count"))
		if n > MaxPublishOneTimePreKeys {
			r.fail(fmt.Errorf("%d one-time prekeys over %d: %w", n, MaxPublishOneTimePreKeys, ErrMalformed))
		}
		// The list is allocated only once its bytes are known to be present,
		// so a forged count cannot cost memory.
		keys := reader{b: r.take(n*oneTimePreKeySize, "one-time prekeys")}
		if r.err == nil && n > 0 {
			p.OneTimePreKeys = make([]OneTimePreKeyPublic, n)
			for i := range p.OneTimePreKeys {
				keys.oneTimePreKey(&p.OneTimePreKeys[i])
			}
		}
		return ok(r, p)
	case RelayFetchBundle:
		return ok(r, FetchBundle{Address: r.address("address")})
	case RelayBundleReply:
		return ok(r, BundleReply{Bundle: r.bundle()})
	case RelaySubmit:
		return ok(r, Submit{Envelope: slices.Clone(r.sized("envelope", 1, MaxEnvelopeSize))})
	case RelayAccepted:
		var a Accepted
		r.array(a.EnvelopeID[:], "envelope ID")
		return ok(r, a)
	case RelayRefused:
		var f Refused
		r.array(f.EnvelopeID[:], "envelope ID")
		f.Reason = RefuseReason(r.u8("reason"))
		if r.err == nil && !f.Reason.valid() {
			r.fail(fmt.Errorf("unknown refuse reason %d: %w", f.Reason, ErrMalformed))
		}
		return ok(r, f)
	case RelayDeliver:
		var d Deliver
		d.Row = r.u64("row")
		d.Envelope = slices.Clone(r.sized("envelope", 1, MaxEnvelopeSize))
		return ok(r, d)
	case RelayAckRows:
		n := int(r.u16("row count"))
		if r.err == nil && (n < 1 || n > MaxAckRows) {
			r.fail(fmt.Errorf("row count %d outside 1..%d: %w", n, MaxAckRows, ErrMalformed))
		}
		p := r.take(8*n, "rows")
		if r.err != nil {
			return nil
		}
		a := AckRows{Rows: make([]uint64, n)}
		for i := range a.Rows {
			a.Rows[i] = binary.BigEndian.Uint64(p[8*i:])
		}
		return ok(r, a)
	case RelayDone:
		return ok(r, Done{})
	case RelayError:
		var e Error
		e.Code = ErrorCode(r.u16("code"))
		if r.err == nil && !e.Code.valid() {
			r.fail(fmt.Errorf("unknown error code %d: %w", e.Code, ErrMalformed))
		}
		n := int(r.u16("message length"))
		if r.err == nil && n > MaxErrorMessageSize {
			r.fail(fmt.Errorf("message length %d over %d: %w", n, MaxErrorMessageSize, ErrMalformed))
		}
		p := r.take(n, "message")
		if err := checkErrorText(string(p)); r.err == nil && err != nil {
			r.fail(err)
		}
		e.Message = string(p)
		return ok(r, e)
	case RelayPrekeyPool:
		return ok(r, PrekeyPool{Count: r.u32("count")})
	}
	return r.relayPush(kind)
}

// ok boxes m, unless the reader failed: a failed decode returns nil without
// copying a large struct such as a Bundle to the heap.
func ok[M RelayMessage](r *reader, m M) RelayMessage {
	if r.err != nil {
		return nil
	}
	return m
}

// bundle reads a u32 length and a bundle of that length, decoded strictly.
func (r *reader) bundle() Bundle {
	p := r.sized("bundle", 1, MaxBundleSize)
	if r.err != nil {
		return Bundle{}
	}
	bd, err := decodeBundle(p)
	if err != nil {
		r.fail(fmt.Errorf("bundle: %w", err))
	}
	return bd
}
