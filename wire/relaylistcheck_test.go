package wire_test

import (
	"errors"
	"testing"

	"github.com/parley-chat/parley/wire"
)

// relayListCheckFormat holds the vectors of kind 48.
var relayListCheckFormat = format[relayValue]{
	file:   "relay-list-check.txt",
	title:  "relay protocol: device list check (kind 48)",
	fuzz:   "FuzzDecodeRelayListCheck",
	encode: encodeRelay,
	decode: decodeRelay,
}

func relayListCheckVectors() []vector[relayValue] {
	return []vector[relayValue]{
		{name: "check-device-list", doc: `kind 48, request 3, user "bob", generation 2`,
			v: relayValue{3, wire.CheckDeviceList{User: "bob", Generation: 2}}},
		{name: "check-device-list-high", doc: `kind 48, request 4, user "a", generation 2^64-1`,
			v: relayValue{4, wire.CheckDeviceList{User: "a", Generation: ^uint64(0)}}},
	}
}

func TestRelayListCheckVectors(t *testing.T) {
	checkVectors(t, relayListCheckFormat, relayListCheckVectors())
}

// TestRelayListCheckRejects: generation 0, a bad user, in bytes and on
// encoding.
func TestRelayListCheckRejects(t *testing.T) {
	if _, err := wire.EncodeRelay(1, wire.CheckDeviceList{User: "bob"}); !errors.Is(err, wire.ErrMalformed) {
		t.Errorf("generation 0: %v, want ErrMalformed", err)
	}
	if _, err := wire.EncodeRelay(1, wire.CheckDeviceList{User: "Bob!", Generation: 1}); !errors.Is(err, wire.ErrMalformed) {
		t.Errorf("a bad user: %v, want ErrMalformed", err)
	}
	for _, c := range []struct {
		name string
		b    []byte
	}{
		{"generation 0", relayBytes(wire.RelayCheckDeviceList, []byte{3}, []byte("bob"), make([]byte, 8))},
		{"empty user", relayBytes(wire.RelayCheckDeviceList, []byte{0}, []byte{0, 0, 0, 0, 0, 0, 0, 1})},
		{"generation truncated", relayBytes(wire.RelayCheckDeviceList, []byte{3}, []byte("bob"), make([]byte, 7))},
	} {
		if _, _, err := wire.DecodeRelay(c.b); !errors.Is(err, wire.ErrMalformed) {
			t.Errorf("%s: %v, want ErrMalformed", c.name, err)
		}
	}
	if got := wire.RelayCheckDeviceList.String(); got != "check device list" {
		t.Errorf("kind 48 is %q", got)
	}
}

// FuzzDecodeRelayListCheck fuzzes DecodeRelay from the device list check.
func FuzzDecodeRelayListCheck(f *testing.F) {
	for _, v := range relayListCheckVectors() {
		f.Add(mustEncode(encodeRelay, v.v))
	}
	f.Add(relayBytes(wire.RelayCheckDeviceList, []byte{255}, []byte("bob"))) // a forged user length
	f.Fuzz(func(t *testing.T, b []byte) {
		fuzzRoundTrip(t, b, decodeRelay, encodeRelay)
	})
}
