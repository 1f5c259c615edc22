package wire_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/parley-chat/parley/wire"
)

// deviceListFormat holds the vectors of the device list, a file of its own.
var deviceListFormat = format[wire.DeviceList]{
	file:   "device-list.txt",
	title:  "device list",
	fuzz:   "FuzzDecodeDeviceList",
	encode: wire.EncodeDeviceList,
	decode: wire.DecodeDeviceList,
}

// relayDeviceFormat holds the vectors of kinds 40 to 43.
var relayDeviceFormat = format[relayValue]{
	file:   "relay-device-list.txt",
	title:  "relay protocol: device list kinds (40 to 43)",
	fuzz:   "FuzzDecodeRelayDeviceList",
	encode: encodeRelay,
	decode: decodeRelay,
}

func deviceEntry(n uint32, state wire.DeviceState, start byte) wire.DeviceEntry {
	return wire.DeviceEntry{Number: n, Linked: 1700000000 + int64(n), State: state,
		SigningKey: seq32(start), DHKey: seq32(start + 0x20), Signature: seq64(start + 0x40)}
}

func oneDeviceList() wire.DeviceList {
	return wire.DeviceList{User: "alice", AccountKey: seq32(0xa0), Generation: 1,
		Entries: []wire.DeviceEntry{deviceEntry(1, wire.DeviceActive, 0x10)}, Signature: seq64(0xc0)}
}

func threeDeviceList() wire.DeviceList {
	return wire.DeviceList{User: "bob.b-2_", AccountKey: seq32(0xa0), Generation: 3, Parent: seq32(0x50),
		Entries: []wire.DeviceEntry{
			deviceEntry(1, wire.DeviceActive, 0x10),
			deviceEntry(2, wire.DeviceRevoked, 0x20),
			deviceEntry(2147483647, wire.DeviceActive, 0x30),
		}, Signature: seq64(0xc0)}
}

func deviceListVectors() []vector[wire.DeviceList] {
	return []vector[wire.DeviceList]{
		{
			name: "one-device",
			doc: `user "alice", account key bytes a0.., generation 1, parent zero;
				1 entry: device 1, linked 1700000001, active, signing key bytes 10.., DH key bytes 30.., signature bytes 50..;
				account signature bytes c0..`,
			v: oneDeviceList(),
		},
		{
			name: "three-devices",
			doc: `user "bob.b-2_", account key bytes a0.., generation 3, parent bytes 50..;
				device 1, linked 1700000001, active, signing key bytes 10.., DH key bytes 30.., signature bytes 50..;
				device 2, linked 1700000002, revoked, signing key bytes 20.., DH key bytes 40.., signature bytes 60..;
				device 2147483647, linked 1702147647 (1700000000 + 2147483647), active, signing key bytes 30.., DH key bytes 50.., signature bytes 70..;
				account signature bytes c0..`,
			v: threeDeviceList(),
		},
	}
}

func relayDeviceVectors() []vector[relayValue] {
	one := oneDeviceList()
	return []vector[relayValue]{
		{name: "publish-device-list", doc: `kind 40, request 5, the list one-device of device-list.txt`,
			v: relayValue{5, wire.PublishDeviceList{List: oneDeviceList()}}},
		{name: "fetch-device-list", doc: `kind 41, request 6, user "alice"`,
			v: relayValue{6, wire.FetchDeviceList{User: "alice"}}},
		{name: "device-list-reply", doc: `kind 42, request 6, the list three-devices of device-list.txt`,
			v: relayValue{6, wire.DeviceListReply{List: threeDeviceList()}}},
		{name: "device-list-refused-stale", doc: `kind 43, request 5, reason 1 (stale), the list one-device of device-list.txt`,
			v: relayValue{5, wire.DeviceListRefused{Reason: wire.DeviceListStale, Current: &one}}},
		{name: "device-list-refused-quota", doc: `kind 43, request 0x01020304, reason 4 (quota), no list`,
			v: relayValue{0x01020304, wire.DeviceListRefused{Reason: wire.DeviceListQuota}}},
	}
}

func TestDeviceListVectors(t *testing.T) {
	checkVectors(t, deviceListFormat, deviceListVectors())
	checkVectors(t, relayDeviceFormat, relayDeviceVectors())
}

// TestDeviceListRejects: each rule of the layout, broken once, is refused
// by the encoder and, in bytes, by the decoder.
func TestDeviceListRejects(t *testing.T) {
	for _, c := range []struct {
		name   string
		change func(*wire.DeviceList)
		want   error
	}{
		{"generation 0", func(l *wire.DeviceList) { l.Generation = 0 }, wire.ErrMalformed},
		{"parent at generation 1", func(l *wire.DeviceList) { l.Parent[0] = 1 }, wire.ErrMalformed},
		{"no parent at generation 2", func(l *wire.DeviceList) { l.Generation = 2 }, wire.ErrMalformed},
		{"no entries", func(l *wire.DeviceList) { l.Entries = nil }, wire.ErrMalformed},
		{"device 0", func(l *wire.DeviceList) { l.Entries[0].Number = 0 }, wire.ErrMalformed},
		{"device 2^31", func(l *wire.DeviceList) { l.Entries[0].Number = 1 << 31 }, wire.ErrMalformed},
		{"state 0", func(l *wire.DeviceList) { l.Entries[0].State = 0 }, wire.ErrMalformed},
		{"state 3", func(l *wire.DeviceList) { l.Entries[0].State = 3 }, wire.ErrMalformed},
		{"numbers repeat", func(l *wire.DeviceList) { l.Entries = append(l.Entries, l.Entries[0]) }, wire.ErrMalformed},
		{"numbers fall", func(l *wire.DeviceList) {
			l.Entries = append([]wire.DeviceEntry{deviceEntry(2, wire.DeviceActive, 0)}, l.Entries...)
		}, wire.ErrMalformed},
		{"user with a slash", func(l *wire.DeviceList) { l.User = "a/b" }, wire.ErrMalformed},
		{"user upper case", func(l *wire.DeviceList) { l.User = "Alice" }, wire.ErrMalformed},
		{"empty user", func(l *wire.DeviceList) { l.User = "" }, wire.ErrMalformed},
	} {
		t.Run(c.name, func(t *testing.T) {
			l := oneDeviceList()
			c.change(&l)
			if _, err := wire.EncodeDeviceList(l); !errors.Is(err, c.want) {
				t.Errorf("encode: %v, want %v", err, c.want)
			}
			// The same list in bytes, written without the encoder's checks.
			if _, err := wire.DecodeDeviceList(rawDeviceList(l)); !errors.Is(err, c.want) {
				t.Errorf("decode: %v, want %v", err, c.want)
			}
		})
	}
	b := mustEncode(wire.EncodeDeviceList, oneDeviceList())
	b[0] = 2
	if _, err := wire.DecodeDeviceList(b); !errors.Is(err, wire.ErrUnsupportedVersion) {
		t.Errorf("version 2: %v, want ErrUnsupportedVersion", err)
	}
}

// rawDeviceList writes l's layout without checking it.
func rawDeviceList(l wire.DeviceList) []byte {
	var b bytes.Buffer
	b.WriteByte(wire.DeviceListVersion)
	b.WriteByte(byte(len(l.User)))
	b.WriteString(l.User)
	b.Write(l.AccountKey[:])
	b.Write(u64(l.Generation))
	b.Write(l.Parent[:])
	b.WriteByte(byte(len(l.Entries)))
	for _, e := range l.Entries {
		b.Write(u32(int(e.Number)))
		b.Write(u64(uint64(e.Linked)))
		b.WriteByte(byte(e.State))
		b.Write(e.SigningKey[:])
		b.Write(e.DHKey[:])
		b.Write(e.Signature[:])
	}
	b.Write(l.Signature[:])
	return b.Bytes()
}

// TestDeviceListBoundaries: MaxDeviceListEntries entries with the longest
// user make a list of exactly MaxDeviceListSize that fits a relay message;
// one more entry is refused by both sides.
func TestDeviceListBoundaries(t *testing.T) {
	l := oneDeviceList()
	l.User = string(bytes.Repeat([]byte("u"), wire.MaxUserSize))
	l.Entries = nil
	for i := range wire.MaxDeviceListEntries {
		l.Entries = append(l.Entries, deviceEntry(uint32(i+1), wire.DeviceActive, byte(i)))
	}
	b, err := wire.EncodeDeviceList(l)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) != wire.MaxDeviceListSize {
		t.Errorf("largest list is %d bytes, want MaxDeviceListSize %d", len(b), wire.MaxDeviceListSize)
	}
	cur := l
	for _, m := range []wire.RelayMessage{wire.PublishDeviceList{List: l}, wire.DeviceListRefused{Reason: wire.DeviceListStale, Current: &cur}} {
		enc, err := wire.EncodeRelay(1, m)
		if err != nil {
			t.Fatalf("%s: %v", m.RelayKind(), err)
		}
		if _, _, err := wire.DecodeRelay(enc); err != nil {
			t.Fatalf("%s of %d bytes: %v", m.RelayKind(), len(enc), err)
		}
	}
	l.Entries = append(l.Entries, deviceEntry(wire.MaxDeviceListEntries+1, wire.DeviceActive, 0))
	if _, err := wire.EncodeDeviceList(l); !errors.Is(err, wire.ErrMessageTooLarge) {
		t.Errorf("encode %d entries: %v, want ErrMessageTooLarge", len(l.Entries), err)
	}
	if _, err := wire.DecodeDeviceList(rawDeviceList(l)); !errors.Is(err, wire.ErrMessageTooLarge) {
		t.Errorf("decode %d entries: %v, want ErrMessageTooLarge", len(l.Entries), err)
	}
}

// TestDeviceEntryMessage: every field the device signs changes the message.
func TestDeviceEntryMessage(t *testing.T) {
	base := wire.DeviceEntryMessage("alice", seq32(1), 1, seq32(2), seq32(3))
	for name, m := range map[string][]byte{
		"user":    wire.DeviceEntryMessage("alicf", seq32(1), 1, seq32(2), seq32(3)),
		"account": wire.DeviceEntryMessage("alice", seq32(9), 1, seq32(2), seq32(3)),
		"number":  wire.DeviceEntryMessage("alice", seq32(1), 2, seq32(2), seq32(3)),
		"signing": wire.DeviceEntryMessage("alice", seq32(1), 1, seq32(9), seq32(3)),
		"dh":      wire.DeviceEntryMessage("alice", seq32(1), 1, seq32(2), seq32(9)),
	} {
		if bytes.Equal(m, base) {
			t.Errorf("changing the %s leaves the signed message as it was", name)
		}
	}
}

// TestDeviceListRefusedRejects: unknown reasons and presence bytes.
func TestDeviceListRefusedRejects(t *testing.T) {
	if _, err := wire.EncodeRelay(1, wire.DeviceListRefused{Reason: 5}); !errors.Is(err, wire.ErrMalformed) {
		t.Errorf("encode reason 5: %v", err)
	}
	for _, b := range [][]byte{
		relayBytes(wire.RelayDeviceListRefused, []byte{0, 0}),
		relayBytes(wire.RelayDeviceListRefused, []byte{5, 0}),
		relayBytes(wire.RelayDeviceListRefused, []byte{1, 2}),
		relayBytes(wire.RelayDeviceListRefused, []byte{1, 1}, u32(wire.MaxDeviceListSize+1)),
		relayBytes(wire.RelayFetchDeviceList, []byte{3}, []byte("a/1")),
		relayBytes(42 + 2), // kind 44, past the device kinds
		relayBytes(39),     // kind 39, before them
	} {
		if _, _, err := wire.DecodeRelay(b); !errors.Is(err, wire.ErrMalformed) {
			t.Errorf("%x: %v, want ErrMalformed", b, err)
		}
	}
}

// FuzzDecodeDeviceList: an error returns nothing, a success re-encodes to
// exactly the input.
func FuzzDecodeDeviceList(f *testing.F) {
	for _, v := range deviceListVectors() {
		f.Add(mustEncode(wire.EncodeDeviceList, v.v))
	}
	f.Add(rawDeviceList(wire.DeviceList{User: "a", Generation: 1})) // no entries
	f.Fuzz(func(t *testing.T, b []byte) {
		fuzzRoundTrip(t, b, wire.DecodeDeviceList, wire.EncodeDeviceList)
	})
}

// FuzzDecodeRelayDeviceList fuzzes DecodeRelay from the device list kinds.
func FuzzDecodeRelayDeviceList(f *testing.F) {
	for _, v := range relayDeviceVectors() {
		f.Add(mustEncode(encodeRelay, v.v))
	}
	f.Add(relayBytes(wire.RelayPublishDeviceList, u32(-1))) // a forged list length
	f.Fuzz(func(t *testing.T, b []byte) {
		fuzzRoundTrip(t, b, decodeRelay, encodeRelay)
	})
}
