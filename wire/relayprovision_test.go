package wire_test

import (
	"errors"
	"testing"

	"github.com/parley-chat/parley/wire"
)

// relayProvisionFormat holds the vectors of kinds 44 to 47.
var relayProvisionFormat = format[relayValue]{
	file:   "relay-provision.txt",
	title:  "relay protocol: provisioning mailbox kinds (44 to 47)",
	fuzz:   "FuzzDecodeRelayProvision",
	encode: encodeRelay,
	decode: decodeRelay,
}

func relayProvisionVectors() []vector[relayValue] {
	return []vector[relayValue]{
		{name: "provision-open-new", doc: `kind 44, request 1, mailbox all zero (open a new one)`,
			v: relayValue{1, wire.ProvisionOpen{}}},
		{name: "provision-open-join", doc: `kind 44, request 1, mailbox bytes 10..`,
			v: relayValue{1, wire.ProvisionOpen{Mailbox: wire.MailboxID(seq16(0x10))}}},
		{name: "provision-opened", doc: `kind 45, request 1, mailbox bytes 10.., expires 1700000600`,
			v: relayValue{1, wire.ProvisionOpened{Mailbox: wire.MailboxID(seq16(0x10)), Expires: 1700000600}}},
		{name: "provision-message-send", doc: `kind 46, request 2, payload "hello"`,
			v: relayValue{2, wire.ProvisionMessage{Payload: []byte("hello")}}},
		{name: "provision-message-push", doc: `kind 46, request 0 (a push), payload 00 ff`,
			v: relayValue{0, wire.ProvisionMessage{Payload: []byte{0, 0xff}}}},
		{name: "provision-closed-peer-left", doc: `kind 47, request 0, reason 1 (peer left)`,
			v: relayValue{0, wire.ProvisionClosed{Reason: wire.ProvisionPeerLeft}}},
		{name: "provision-closed-expired", doc: `kind 47, request 0, reason 2 (expired)`,
			v: relayValue{0, wire.ProvisionClosed{Reason: wire.ProvisionExpired}}},
	}
}

func TestRelayProvisionVectors(t *testing.T) {
	checkVectors(t, relayProvisionFormat, relayProvisionVectors())
}

// TestRelayProvisionRejects: each bound, broken once, in bytes.
func TestRelayProvisionRejects(t *testing.T) {
	big := make([]byte, wire.MaxProvisionPayload+1)
	if _, err := wire.EncodeRelay(1, wire.ProvisionMessage{Payload: big}); !errors.Is(err, wire.ErrMessageTooLarge) {
		t.Errorf("payload over the bound: %v, want ErrMessageTooLarge", err)
	}
	if _, err := wire.EncodeRelay(1, wire.ProvisionMessage{Payload: big[:wire.MaxProvisionPayload]}); err != nil {
		t.Errorf("payload at the bound: %v", err)
	}
	if _, err := wire.EncodeRelay(1, wire.ProvisionMessage{}); !errors.Is(err, wire.ErrMalformed) {
		t.Errorf("empty payload: %v, want ErrMalformed", err)
	}
	for _, c := range []struct {
		name string
		b    []byte
	}{
		{"empty payload", relayBytes(wire.RelayProvisionMessage, u32(0))},
		{"payload length over the bound", relayBytes(wire.RelayProvisionMessage, u32(wire.MaxProvisionPayload+1))},
		{"payload truncated", relayBytes(wire.RelayProvisionMessage, u32(3), []byte{1, 2})},
		{"close reason 0", relayBytes(wire.RelayProvisionClosed, []byte{0})},
		{"close reason 3", relayBytes(wire.RelayProvisionClosed, []byte{3})},
		{"mailbox truncated", relayBytes(wire.RelayProvisionOpen, make([]byte, 15))},
		{"trailing byte", relayBytes(wire.RelayProvisionOpen, make([]byte, 17))},
	} {
		if _, _, err := wire.DecodeRelay(c.b); !errors.Is(err, wire.ErrMalformed) {
			t.Errorf("%s: %v, want ErrMalformed", c.name, err)
		}
	}
	if got := wire.RelayProvisionMessage.String(); got != "provision message" {
		t.Errorf("kind 46 is %q", got)
	}
}

// FuzzDecodeRelayProvision fuzzes DecodeRelay from the provisioning kinds.
func FuzzDecodeRelayProvision(f *testing.F) {
	for _, v := range relayProvisionVectors() {
		f.Add(mustEncode(encodeRelay, v.v))
	}
	f.Add(relayBytes(wire.RelayProvisionMessage, u32(-1))) // a forged payload length
	f.Fuzz(func(t *testing.T, b []byte) {
		fuzzRoundTrip(t, b, decodeRelay, encodeRelay)
	})
}
