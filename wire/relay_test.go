package wire_test

import (
	"bytes"
	"encoding/binary"
	"strings"
	"testing"

	"github.com/parley-chat/parley/wire"
)

// relayValue is one relay message with its request ID, the unit the vector
// and strictness helpers work on.
type relayValue struct {
	Request uint32
	Msg     wire.RelayMessage
}

func encodeRelay(v relayValue) ([]byte, error) { return wire.EncodeRelay(v.Request, v.Msg) }

func decodeRelay(b []byte) (relayValue, error) {
	req, m, err := wire.DecodeRelay(b)
	return relayValue{req, m}, err
}

var relayFormat = format[relayValue]{
	file:   "relay.txt",
	title:  "relay protocol messages",
	fuzz:   "FuzzDecodeRelay",
	encode: encodeRelay,
	decode: decodeRelay,
}

func relayVectors() []vector[relayValue] {
	// Relay messages carry an envelope unparsed: these keep the version-1
	// envelope "ratchet" of envelope.txt they were frozen with.
	envelope := mustHex("0102000102030405060708090a0b0c0d0e0f07616c6963652f3105626f622f31000000380102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f200000000000000000a0a1a2a3a4a5a6a7a8a9aaabacadaeaf")
	return []vector[relayValue]{
		{
			name: "challenge",
			doc:  `kind 1, request 0 (a push), nonce bytes 00.., relay ID bytes 20.., expires 1767225660 (2026-01-01T00:01:00Z)`,
			v:    relayValue{0, wire.Challenge{Nonce: seq32(0x00), RelayID: seq32(0x20), Expires: jan2026 + 60}},
		},
		{
			name: "auth",
			doc:  `kind 2, request 1, address "alice/1", signing key bytes 10.., expires 1767225660, signature bytes 40.. (64)`,
			v:    relayValue{1, wire.Auth{Address: "alice/1", SigningKey: seq32(0x10), Expires: jan2026 + 60, Signature: seq64(0x40)}},
		},
		{
			name: "auth-ok",
			doc:  `kind 3, request 1`,
			v:    relayValue{1, wire.AuthOK{}},
		},
		{
			name: "publish-bundle",
			doc: `kind 4, request 2, bundle: the bundle "no-one-time-prekey" of bundle.txt,
			      one-time prekeys: ID 100 with public key bytes d0.., ID 101 with public key bytes e0..`,
			v: relayValue{2, wire.PublishBundle{Bundle: bundle(false), OneTimePreKeys: []wire.OneTimePreKeyPublic{
				{ID: 100, PublicKey: seq32(0xd0)}, {ID: 101, PublicKey: seq32(0xe0)},
			}}},
		},
		{
			name: "publish-bundle-no-keys",
			doc:  `kind 4, request 3, bundle: the bundle "no-one-time-prekey" of bundle.txt, no one-time prekeys`,
			v:    relayValue{3, wire.PublishBundle{Bundle: bundle(false)}},
		},
		{
			name: "fetch-bundle",
			doc:  `kind 5, request 4, address "bob/1"`,
			v:    relayValue{4, wire.FetchBundle{Address: "bob/1"}},
		},
		{
			name: "bundle-reply",
			doc:  `kind 6, request 4, bundle: the bundle "one-time-prekey" of bundle.txt`,
			v:    relayValue{4, wire.BundleReply{Bundle: bundle(true)}},
		},
		{
			name: "submit",
			doc:  `kind 7, request 5, envelope: the envelope "ratchet" of envelope.txt`,
			v:    relayValue{5, wire.Submit{Envelope: envelope}},
		},
		{
			name: "accepted",
			doc:  `kind 8, request 5, envelope ID bytes 00..`,
			v:    relayValue{5, wire.Accepted{EnvelopeID: seq16(0x00)}},
		},
		{
			name: "refused",
			doc:  `kind 9, request 6, envelope ID bytes 80.., reason 2 (mailbox full)`,
			v:    relayValue{6, wire.Refused{EnvelopeID: seq16(0x80), Reason: wire.RefuseMailboxFull}},
		},
		{
			name: "deliver",
			doc:  `kind 10, request 0 (a push), row 1, envelope: the envelope "ratchet" of envelope.txt`,
			v:    relayValue{0, wire.Deliver{Row: 1, Envelope: envelope}},
		},
		{
			name: "ack-rows",
			doc:  `kind 11, request 7, rows 1, 2 and 2^64-1`,
			v:    relayValue{7, wire.AckRows{Rows: []uint64{1, 2, 1<<64 - 1}}},
		},
		{
			name: "done",
			doc:  `kind 12, request 0xffffffff`,
			v:    relayValue{0xffffffff, wire.Done{}},
		},
		{
			name: "error",
			doc:  `kind 13, request 8, code 3 (address taken), message "address taken: alice/1 ✓" (UTF-8)`,
			v:    relayValue{8, wire.Error{Code: wire.ErrorAddressTaken, Message: "address taken: alice/1 ✓"}},
		},
		{
			name: "error-empty",
			doc:  `kind 13, request 0 (a push), code 6 (internal error), empty message`,
			v:    relayValue{0, wire.Error{Code: wire.ErrorInternal}},
		},
		{
			name: "prekey-pool",
			doc:  `kind 14, request 0 (a push), count 17`,
			v:    relayValue{0, wire.PrekeyPool{Count: 17}},
		},
		{
			name: "refused-store-full",
			doc:  `kind 9, request 6, envelope ID bytes 80.., reason 9 (relay storage full)`,
			v:    relayValue{6, wire.Refused{EnvelopeID: seq16(0x80), Reason: wire.RefuseStoreFull}},
		},
	}
}

// relayBytes is a relay header and the given body, unchecked.
func relayBytes(kind wire.RelayKind, body ...[]byte) []byte {
	b := []byte{wire.RelayVersion, byte(kind), 0, 0, 0, 9}
	for _, p := range body {
		b = append(b, p...)
	}
	return b
}

func u16(n int) []byte    { return binary.BigEndian.AppendUint16(nil, uint16(n)) }
func u32(n int) []byte    { return binary.BigEndian.AppendUint32(nil, uint32(n)) }
func u64(n uint64) []byte { return binary.BigEndian.AppendUint64(nil, n) }

func otks(n int) []wire.OneTimePreKeyPublic {
	if n == 0 {
		return nil
	}
	ks := make([]wire.OneTimePreKeyPublic, n)
	for i := range ks {
		ks[i] = wire.OneTimePreKeyPublic{ID: uint32(i), PublicKey: seq32(byte(i))}
	}
	return ks
}

func rows(n int) []uint64 {
	if n == 0 {
		return nil
	}
	rs := make([]uint64, n)
	for i := range rs {
		rs[i] = uint64(i) * 0x0101010101
	}
	return rs
}

// TestRelayBoundaries encodes messages at and around every limit; those
// that encode must decode to themselves, those that fail must fail the same
// way once forged onto the wire.
func TestRelayBoundaries(t *testing.T) {
	bundleBytes := func(b wire.Bundle) []byte {
		p := forgeBundle(b)
		return append(u32(len(p)), p...)
	}
	withOTK := bundle(true)
	tests := []struct {
		name   string
		msg    wire.RelayMessage
		forged []byte // the same message laid out unchecked; nil if it cannot be
		want   error
	}{
		{"auth address 0", wire.Auth{}, relayBytes(wire.RelayAuth, []byte{0}, make([]byte, 32+8+64)), wire.ErrMalformed},
		{"auth address 1", wire.Auth{Address: "a"}, nil, nil},
		{"auth address 75", wire.Auth{Address: longAddress}, nil, nil},
		{"auth address 76", wire.Auth{Address: longAddress + "1"}, relayBytes(wire.RelayAuth, []byte{76}, []byte(longAddress+"1"), make([]byte, 32+8+64)), wire.ErrMalformed},
		{"fetch address 0", wire.FetchBundle{}, relayBytes(wire.RelayFetchBundle, []byte{0}), wire.ErrMalformed},
		{"fetch address 75", wire.FetchBundle{Address: longAddress}, nil, nil},
		{"fetch address 76", wire.FetchBundle{Address: "1" + longAddress}, relayBytes(wire.RelayFetchBundle, []byte{76}, []byte("1"+longAddress)), wire.ErrMalformed},
		{"fetch address with DEL", wire.FetchBundle{Address: "bob/\x7f"}, relayBytes(wire.RelayFetchBundle, []byte{5}, []byte("bob/\x7f")), wire.ErrMalformed},
		{"publish 0 keys", wire.PublishBundle{Bundle: bundle(false)}, nil, nil},
		{"publish 0 keys, empty slice", wire.PublishBundle{Bundle: bundle(false), OneTimePreKeys: []wire.OneTimePreKeyPublic{}}, nil, nil},
		{"publish 200 keys", wire.PublishBundle{Bundle: bundle(false), OneTimePreKeys: otks(200)}, nil, nil},
		{"publish 201 keys", wire.PublishBundle{Bundle: bundle(false), OneTimePreKeys: otks(201)}, relayBytes(wire.RelayPublishBundle, bundleBytes(bundle(false)), u16(201), make([]byte, 201*36)), wire.ErrMessageTooLarge},
		{"publish a bundle with a one-time prekey", wire.PublishBundle{Bundle: withOTK}, relayBytes(wire.RelayPublishBundle, bundleBytes(withOTK), u16(0)), wire.ErrMalformed},
		{"publish an invalid bundle", wire.PublishBundle{}, relayBytes(wire.RelayPublishBundle, bundleBytes(wire.Bundle{}), u16(0)), wire.ErrMalformed},
		{"reply with an invalid bundle", wire.BundleReply{}, relayBytes(wire.RelayBundleReply, bundleBytes(wire.Bundle{})), wire.ErrMalformed},
		{"submit 0", wire.Submit{}, relayBytes(wire.RelaySubmit, u32(0)), wire.ErrMalformed},
		{"submit 1", wire.Submit{Envelope: []byte{1}}, nil, nil},
		{"submit max", wire.Submit{Envelope: seq(1, wire.MaxEnvelopeSize)}, nil, nil},
		{"submit max+1", wire.Submit{Envelope: seq(1, wire.MaxEnvelopeSize+1)}, relayBytes(wire.RelaySubmit, u32(wire.MaxEnvelopeSize+1), make([]byte, wire.MaxEnvelopeSize+1)), wire.ErrMessageTooLarge},
		{"deliver 0", wire.Deliver{Row: 1}, relayBytes(wire.RelayDeliver, u64(1), u32(0)), wire.ErrMalformed},
		{"deliver 1", wire.Deliver{Row: 1, Envelope: []byte{1}}, nil, nil},
		{"deliver max", wire.Deliver{Row: 1<<64 - 1, Envelope: seq(1, wire.MaxEnvelopeSize)}, nil, nil},
		{"deliver max+1", wire.Deliver{Envelope: seq(1, wire.MaxEnvelopeSize+1)}, nil, wire.ErrMessageTooLarge},
		{"ack 0 rows", wire.AckRows{}, relayBytes(wire.RelayAckRows, u16(0)), wire.ErrMalformed},
		{"ack 0 rows, empty slice", wire.AckRows{Rows: []uint64{}}, relayBytes(wire.RelayAckRows, u16(0)), wire.ErrMalformed},
		{"ack 1 row", wire.AckRows{Rows: rows(1)}, nil, nil},
		{"ack 256 rows", wire.AckRows{Rows: rows(256)}, nil, nil},
		{"ack 257 rows", wire.AckRows{Rows: rows(257)}, relayBytes(wire.RelayAckRows, u16(257), make([]byte, 257*8)), wire.ErrMessageTooLarge},
		{"refused reason 0", wire.Refused{}, relayBytes(wire.RelayRefused, make([]byte, 16), []byte{0}), wire.ErrMalformed},
		{"refused reason 1", wire.Refused{Reason: wire.RefuseTooLarge}, nil, nil},
		{"refused reason 7", wire.Refused{Reason: wire.RefuseNotAuthenticated}, nil, nil},
		{"refused reason 9", wire.Refused{Reason: 9}, relayBytes(wire.RelayRefused, make([]byte, 16), []byte{9}), nil},
		{"refused reason 10", wire.Refused{Reason: 10}, relayBytes(wire.RelayRefused, make([]byte, 16), []byte{10}), wire.ErrMalformed},
		{"error code 0", wire.Error{}, relayBytes(wire.RelayError, u16(0), u16(0)), wire.ErrMalformed},
		{"error code 7", wire.Error{Code: wire.ErrorExpired}, nil, nil},
		{"error code 8", wire.Error{Code: 8}, relayBytes(wire.RelayError, u16(8), u16(0)), wire.ErrMalformed},
		{"error message 512", wire.Error{Code: 1, Message: strings.Repeat("é", 256)}, nil, nil},
		{"error message 513", wire.Error{Code: 1, Message: strings.Repeat("x", 513)}, relayBytes(wire.RelayError, u16(1), u16(513), bytes.Repeat([]byte("x"), 513)), wire.ErrMessageTooLarge},
		{"error message not UTF-8", wire.Error{Code: 1, Message: "bad \xff"}, relayBytes(wire.RelayError, u16(1), u16(5), []byte("bad \xff")), wire.ErrMalformed},
		{"error message cut inside a rune", wire.Error{Code: 1, Message: "é"[:1]}, relayBytes(wire.RelayError, u16(1), u16(1), []byte("é")[:1]), wire.ErrMalformed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := relayValue{9, tt.msg}
			if tt.want == nil {
				roundTrip(t, relayFormat, mustEncode(encodeRelay, v))
				return
			}
			wantEncodeError(t, encodeRelay, v, tt.want)
			if tt.forged != nil {
				// A decoder sees only a length or a count over its
				// limit, which is malformed, not too large.
				wantReject(t, decodeRelay, tt.forged, wire.ErrMalformed)
			}
		})
	}
}

func TestDecodeRelayRejects(t *testing.T) {
	tests := []struct {
		name string
		in   []byte
		want error
	}{
		{"empty", nil, wire.ErrMalformed},
		{"version 0", []byte{0, 3, 0, 0, 0, 0}, wire.ErrUnsupportedVersion},
		{"version 2", []byte{2, 3, 0, 0, 0, 0}, wire.ErrUnsupportedVersion},
		{"version 2 alone", []byte{2}, wire.ErrUnsupportedVersion},
		{"over the limit", make([]byte, wire.MaxRelayMessageSize+1), wire.ErrMessageTooLarge},
		{"kind 0", relayBytes(0), wire.ErrMalformed},
		{"kind 17 without a body", relayBytes(17), wire.ErrMalformed},
		{"kind ff", relayBytes(0xff), wire.ErrMalformed},
		{"header without request ID", []byte{1, 3, 0, 0, 0}, wire.ErrMalformed},
		{"auth ok with a body", relayBytes(wire.RelayAuthOK, []byte{0}), wire.ErrMalformed},
		{"done with a body", relayBytes(wire.RelayDone, []byte{0}), wire.ErrMalformed},
		{"bundle length 0", relayBytes(wire.RelayBundleReply, u32(0)), wire.ErrMalformed},
		{"bundle length over MaxBundleSize", relayBytes(wire.RelayBundleReply, u32(wire.MaxBundleSize+1), make([]byte, wire.MaxBundleSize+1)), wire.ErrMalformed},
		{"bundle length 2^32-1, tiny input", relayBytes(wire.RelayBundleReply, u32(-1), []byte{1}), wire.ErrMalformed},
		{"bundle length one short", relayBytes(wire.RelayBundleReply, u32(len(forgeBundle(bundle(true)))-1), forgeBundle(bundle(true))), wire.ErrMalformed},
		{"bundle version 2", relayBytes(wire.RelayBundleReply, u32(1), []byte{2}), wire.ErrUnsupportedVersion},
		{"key count 0xffff, tiny input", relayBytes(wire.RelayPublishBundle, u32(len(forgeBundle(bundle(false)))), forgeBundle(bundle(false)), u16(0xffff)), wire.ErrMalformed},
		{"key count 2, one key", relayBytes(wire.RelayPublishBundle, u32(len(forgeBundle(bundle(false)))), forgeBundle(bundle(false)), u16(2), make([]byte, 36)), wire.ErrMalformed},
		{"envelope length 2^32-1, tiny input", relayBytes(wire.RelaySubmit, u32(-1), []byte{1}), wire.ErrMalformed},
		{"envelope length over remaining", relayBytes(wire.RelayDeliver, u64(1), u32(2), []byte{1}), wire.ErrMalformed},
		{"row count 0xffff, tiny input", relayBytes(wire.RelayAckRows, u16(0xffff), u64(1)), wire.ErrMalformed},
		{"error length 0xffff, tiny input", relayBytes(wire.RelayError, u16(1), u16(0xffff), []byte("x")), wire.ErrMalformed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wantReject(t, decodeRelay, tt.in, tt.want)
		})
	}
}

// notARelayMessage is a relay message by embedding, but not one of wire's.
type notARelayMessage struct{ wire.Done }

func TestEncodeRelayRejects(t *testing.T) {
	tests := []struct {
		name string
		msg  wire.RelayMessage
	}{
		{"nil", nil},
		{"a pointer", &wire.Done{}},
		{"a nil pointer", (*wire.Accepted)(nil)},
		{"a foreign type", notARelayMessage{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wantEncodeError(t, encodeRelay, relayValue{1, tt.msg}, wire.ErrMalformed)
		})
	}
}

func TestRelayNilAndEmptyEncodeAlike(t *testing.T) {
	a := mustEncode(encodeRelay, relayValue{1, wire.PublishBundle{Bundle: bundle(false)}})
	b := mustEncode(encodeRelay, relayValue{1, wire.PublishBundle{Bundle: bundle(false), OneTimePreKeys: []wire.OneTimePreKeyPublic{}}})
	if !bytes.Equal(a, b) {
		t.Fatalf("nil and empty one-time prekey lists encode differently: %s, %s", brief(a), brief(b))
	}
	_, m, err := wire.DecodeRelay(a)
	if err != nil {
		t.Fatal(err)
	}
	if got := m.(wire.PublishBundle).OneTimePreKeys; got != nil {
		t.Fatalf("no one-time prekeys decode as %#v, want nil", got)
	}
}

func TestRelayKinds(t *testing.T) {
	tests := []struct {
		msg  wire.RelayMessage
		kind wire.RelayKind
		name string
	}{
		{wire.Challenge{}, 1, "challenge"},
		{wire.Auth{}, 2, "auth"},
		{wire.AuthOK{}, 3, "auth ok"},
		{wire.PublishBundle{}, 4, "publish bundle"},
		{wire.FetchBundle{}, 5, "fetch bundle"},
		{wire.BundleReply{}, 6, "bundle reply"},
		{wire.Submit{}, 7, "submit"},
		{wire.Accepted{}, 8, "accepted"},
		{wire.Refused{}, 9, "refused"},
		{wire.Deliver{}, 10, "deliver"},
		{wire.AckRows{}, 11, "ack rows"},
		{wire.Done{}, 12, "done"},
		{wire.Error{}, 13, "error"},
		{wire.PrekeyPool{}, 14, "prekey pool"},
		{wire.EnvelopeStatus{}, 15, "envelope status"},
		{wire.Features{}, 16, "features"},
		{wire.SenderBlock{}, 17, "sender block"},
		{wire.EnvelopeLifetime{}, 26, "envelope lifetime"},
		{wire.SubmitBatch{}, 27, "submit batch"},
		{wire.BatchResults{}, 28, "batch results"},
	}
	for _, tt := range tests {
		if got := tt.msg.RelayKind(); got != tt.kind {
			t.Errorf("%T.RelayKind() = %d, want %d", tt.msg, got, tt.kind)
		}
		if got := tt.kind.String(); got != tt.name {
			t.Errorf("RelayKind(%d).String() = %q, want %q", tt.kind, got, tt.name)
		}
	}
	if got, want := wire.RelayKind(0xfe).String(), "relay kind 254"; got != want {
		t.Errorf("RelayKind(0xfe).String() = %q, want %q", got, want)
	}
}

func TestRefuseReasonString(t *testing.T) {
	tests := []struct {
		in   wire.RefuseReason
		want string
	}{
		{wire.RefuseTooLarge, "too large"},
		{wire.RefuseMailboxFull, "mailbox full"},
		{wire.RefuseUnknownRecipient, "unknown recipient"},
		{wire.RefuseRateLimited, "rate limited"},
		{wire.RefuseMalformed, "malformed envelope"},
		{wire.RefuseWrongSender, "sender is not the authenticated address"},
		{wire.RefuseNotAuthenticated, "not authenticated"},
		{wire.RefuseSenderQuota, "the sender's share of the mailbox is full"},
		{wire.RefuseStoreFull, "relay storage full"},
		{0, "refuse reason 0"},
		{10, "refuse reason 10"},
	}
	for _, tt := range tests {
		if got := tt.in.String(); got != tt.want {
			t.Errorf("RefuseReason(%d).String() = %q, want %q", uint8(tt.in), got, tt.want)
		}
	}
}

func TestErrorCodeString(t *testing.T) {
	tests := []struct {
		in   wire.ErrorCode
		want string
	}{
		{wire.ErrorBadRequest, "bad request"},
		{wire.ErrorAuthFailed, "authentication failed"},
		{wire.ErrorAddressTaken, "address taken"},
		{wire.ErrorNotFound, "not found"},
		{wire.ErrorRateLimited, "rate limited"},
		{wire.ErrorInternal, "internal error"},
		{wire.ErrorExpired, "expired"},
		{0, "error code 0"},
		{300, "error code 300"},
	}
	for _, tt := range tests {
		if got := tt.in.String(); got != tt.want {
			t.Errorf("ErrorCode(%d).String() = %q, want %q", uint16(tt.in), got, tt.want)
		}
	}
}
