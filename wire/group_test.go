package wire_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/parley-chat/parley/wire"
)

var groupMessageFormat = format[wire.GroupMessage]{
	file:   "group-message.txt",
	title:  "group message frame (frame version 1, kind 3)",
	fuzz:   "FuzzDecodeGroupMessage",
	encode: wire.EncodeGroupMessage,
	decode: wire.DecodeGroupMessage,
}

var rosterFormat = format[wire.Roster]{
	file:   "roster.txt",
	title:  "roster frame (frame version 1, kind 4)",
	fuzz:   "FuzzDecodeRoster",
	encode: wire.EncodeRoster,
	decode: wire.DecodeRoster,
}

var signedRosterFormat = format[wire.SignedRoster]{
	file:   "signed-roster.txt",
	title:  "signed roster frame (frame version 1, kind 7)",
	fuzz:   "FuzzDecodeSignedRoster",
	encode: wire.EncodeSignedRoster,
	decode: wire.DecodeSignedRoster,
}

var notAMemberFormat = format[wire.NotAMember]{
	file:   "not-a-member.txt",
	title:  "not_a_member frame (frame version 1, kind 5)",
	fuzz:   "FuzzDecodeNotAMember",
	encode: wire.EncodeNotAMember,
	decode: wire.DecodeNotAMember,
}

func groupMessageVectors() []vector[wire.GroupMessage] {
	return []vector[wire.GroupMessage]{
		{
			name: "text-hi",
			doc: `group message (kind 3), ID bytes 00.., group bytes 10.., generation 1,
				content text, body "hi"`,
			v: wire.GroupMessage{ID: seq16(0x00), Group: seq16(0x10), Generation: 1, Content: wire.ContentText, Body: []byte("hi")},
		},
		{
			name: "text-empty",
			doc:  `group message (kind 3), ID all 00, group all ff, generation 2^64-1, content text, empty body`,
			v: wire.GroupMessage{Group: wire.GroupID(bytes.Repeat([]byte{0xff}, 16)), Generation: 1<<64 - 1,
				Content: wire.ContentText, Body: []byte{}},
		},
	}
}

func rosterVectors() []vector[wire.Roster] {
	return []vector[wire.Roster]{
		{
			name: "create",
			doc: `roster (kind 4), change ID bytes 20.., group bytes 10.., generation 1, name "friends",
				changes: add bob/1, add carol/1;
				members: alice/1 admin, bob/1, carol/1`,
			v: wire.Roster{ID: seq16(0x20), Group: seq16(0x10), Generation: 1, Name: "friends",
				Changes: []wire.RosterChange{{Op: wire.RosterAdd, Address: "bob/1"}, {Op: wire.RosterAdd, Address: "carol/1"}},
				Members: []wire.RosterMember{{Address: "alice/1", Admin: true}, {Address: "bob/1"}, {Address: "carol/1"}}},
		},
		{
			name: "remove-and-admin",
			doc: `roster (kind 4), change ID bytes 30.., group bytes 10.., generation 3, name "été",
				changes: admin bob/1, remove carol/1;
				members: alice/1 admin, bob/1 admin`,
			v: wire.Roster{ID: seq16(0x30), Group: seq16(0x10), Generation: 3, Name: "été",
				Changes: []wire.RosterChange{{Op: wire.RosterAdmin, Address: "bob/1"}, {Op: wire.RosterRemove, Address: "carol/1"}},
				Members: []wire.RosterMember{{Address: "alice/1", Admin: true}, {Address: "bob/1", Admin: true}}},
		},
		{
			name: "empty-lists",
			doc:  `roster (kind 4), change ID all 00, group all 00, generation 2, name "x", no changes, no members`,
			v:    wire.Roster{Generation: 2, Name: "x"},
		},
	}
}

func signedRosterVectors() []vector[wire.SignedRoster] {
	return []vector[wire.SignedRoster]{
		{
			name: "create",
			doc: `signed roster (kind 7), change ID bytes 20.., group bytes 10.., generation 1,
				parent all 00, author alice/1, author key bytes 40.., name "friends",
				changes: add bob/1, add carol/1;
				members: alice/1 admin, bob/1, carol/1;
				signature bytes 80.. (not a real signature: the wire does not verify)`,
			v: wire.SignedRoster{Roster: wire.Roster{ID: seq16(0x20), Group: seq16(0x10), Generation: 1, Name: "friends",
				Changes: []wire.RosterChange{{Op: wire.RosterAdd, Address: "bob/1"}, {Op: wire.RosterAdd, Address: "carol/1"}},
				Members: []wire.RosterMember{{Address: "alice/1", Admin: true}, {Address: "bob/1"}, {Address: "carol/1"}}},
				Author: "alice/1", AuthorKey: seq32(0x40), Signature: seq64(0x80)},
		},
		{
			name: "remove-and-admin",
			doc: `signed roster (kind 7), change ID bytes 30.., group bytes 10.., generation 3,
				parent bytes a0.., author alice/1, author key bytes 40.., name "été",
				changes: admin bob/1, remove carol/1;
				members: alice/1 admin, bob/1 admin;
				signature bytes c0..`,
			v: wire.SignedRoster{Roster: wire.Roster{ID: seq16(0x30), Group: seq16(0x10), Generation: 3, Name: "été",
				Changes: []wire.RosterChange{{Op: wire.RosterAdmin, Address: "bob/1"}, {Op: wire.RosterRemove, Address: "carol/1"}},
				Members: []wire.RosterMember{{Address: "alice/1", Admin: true}, {Address: "bob/1", Admin: true}}},
				Parent: seq32(0xa0), Author: "alice/1", AuthorKey: seq32(0x40), Signature: seq64(0xc0)},
		},
		{
			name: "empty-lists",
			doc: `signed roster (kind 7), change ID all 00, group all 00, generation 2, parent all 00,
				author x/2147483647, key all 00, name "x", no changes, no members, signature all 00`,
			v: wire.SignedRoster{Roster: wire.Roster{Generation: 2, Name: "x"}, Author: "x/2147483647"},
		},
	}
}

func notAMemberVectors() []vector[wire.NotAMember] {
	return []vector[wire.NotAMember]{
		{
			name: "refused",
			doc:  `not_a_member (kind 5), refused ID bytes 00.., group bytes 10.., generation 4`,
			v:    wire.NotAMember{ID: seq16(0x00), Group: seq16(0x10), Generation: 4},
		},
	}
}

func TestGroupVectors(t *testing.T) {
	t.Run("group-message", func(t *testing.T) { checkVectors(t, groupMessageFormat, groupMessageVectors()) })
	t.Run("roster", func(t *testing.T) { checkVectors(t, rosterFormat, rosterVectors()) })
	t.Run("not-a-member", func(t *testing.T) { checkVectors(t, notAMemberFormat, notAMemberVectors()) })
	t.Run("signed-roster", func(t *testing.T) { checkVectors(t, signedRosterFormat, signedRosterVectors()) })
}

// TestDecodeFrameStillRefusesGroupKinds: Frame has no room for a group, so
// the frozen decoder keeps refusing kinds 3 to 5, and PeekFrameKind tells a
// receiver which decoder to use.
func TestDecodeFrameStillRefusesGroupKinds(t *testing.T) {
	frames := map[wire.FrameKind][]byte{
		wire.FrameGroupMessage: mustEncode(wire.EncodeGroupMessage, groupMessageVectors()[0].v),
		wire.FrameRoster:       mustEncode(wire.EncodeRoster, rosterVectors()[0].v),
		wire.FrameNotAMember:   mustEncode(wire.EncodeNotAMember, notAMemberVectors()[0].v),
		wire.FrameSignedRoster: mustEncode(wire.EncodeSignedRoster, signedRosterVectors()[0].v),
		wire.FrameApplication:  mustHex("0101000102030405060708090a0b0c0d0e0f000000026869"),
		wire.FrameAck:          mustHex("0102000102030405060708090a0b0c0d0e0f"),
	}
	for kind, b := range frames {
		t.Run(fmt.Sprint(kind), func(t *testing.T) {
			got, err := wire.PeekFrameKind(b)
			if err != nil || got != kind {
				t.Fatalf("PeekFrameKind = %d, %v; want %d", got, err, kind)
			}
			_, err = wire.DecodeFrame(b)
			if isGroup := kind >= wire.FrameGroupMessage; isGroup != errors.Is(err, wire.ErrMalformed) {
				t.Fatalf("DecodeFrame: %v (group kind: %v)", err, isGroup)
			}
		})
	}
	for _, tt := range []struct {
		in   []byte
		want error
	}{
		{nil, wire.ErrMalformed},
		{[]byte{1}, wire.ErrMalformed},
		{[]byte{2, 3}, wire.ErrUnsupportedVersion},
		{[]byte{1, 0}, wire.ErrMalformed},
		{[]byte{1, 11}, wire.ErrMalformed}, // kind 11 is reserved
		{make([]byte, wire.MaxFrameSize+1), wire.ErrMessageTooLarge},
	} {
		if _, err := wire.PeekFrameKind(tt.in); !errors.Is(err, tt.want) {
			t.Errorf("PeekFrameKind(%s) = %v, want %v", brief(tt.in), err, tt.want)
		}
	}
}

func TestGroupBodyBoundaries(t *testing.T) {
	if got, want := wire.MaxGroupBodySize+47, wire.MaxFrameSize; got != want {
		t.Fatalf("largest group frame is %d bytes, want MaxFrameSize %d", got, want)
	}
	for _, n := range []int{0, 1, wire.MaxGroupBodySize, wire.MaxGroupBodySize + 1} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			m := wire.GroupMessage{ID: seq16(1), Group: seq16(2), Generation: 7, Content: wire.ContentText, Body: seq(3, n)}
			if n > wire.MaxGroupBodySize {
				wantEncodeError(t, wire.EncodeGroupMessage, m, wire.ErrMessageTooLarge)
				b := append(mustEncode(wire.EncodeGroupMessage, wire.GroupMessage{Content: wire.ContentText}), seq(3, n)...)
				binary.BigEndian.PutUint32(b[43:47], uint32(n))
				wantReject(t, wire.DecodeGroupMessage, b, wire.ErrMessageTooLarge)
				return
			}
			b := mustEncode(wire.EncodeGroupMessage, m)
			if len(b) != 47+n {
				t.Fatalf("encoded %d bytes, want %d", len(b), 47+n)
			}
			roundTrip(t, groupMessageFormat, b)
		})
	}
}

func TestDecodeGroupMessageRejects(t *testing.T) {
	valid := mustEncode(wire.EncodeGroupMessage, groupMessageVectors()[0].v)
	with := func(i int, c byte) []byte { b := bytes.Clone(valid); b[i] = c; return b }
	length := func(n uint32) []byte { b := bytes.Clone(valid); binary.BigEndian.PutUint32(b[43:47], n); return b }
	tests := []struct {
		name string
		in   []byte
		want error
	}{
		{"version 2", with(0, 2), wire.ErrUnsupportedVersion},
		{"kind 1", with(1, 1), wire.ErrMalformed},
		{"kind 4", with(1, 4), wire.ErrMalformed},
		{"content type 0", with(42, 0), wire.ErrMalformed},
		{"content type 7", with(42, 7), wire.ErrMalformed},
		{"length over remaining", length(3), wire.ErrMalformed},
		{"length under remaining", length(1), wire.ErrMalformed},
		{"length over limit", length(wire.MaxGroupBodySize + 1), wire.ErrMalformed},
		{"length 2^32-1", length(0xffffffff), wire.ErrMalformed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { wantReject(t, wire.DecodeGroupMessage, tt.in, tt.want) })
	}
	wantEncodeError(t, wire.EncodeGroupMessage, wire.GroupMessage{}, wire.ErrMalformed)
}

func TestRosterRejects(t *testing.T) {
	base := rosterVectors()[0].v
	tests := []struct {
		name   string
		change func(*wire.Roster)
		want   error
	}{
		{"generation 0", func(r *wire.Roster) { r.Generation = 0 }, wire.ErrMalformed},
		{"empty name", func(r *wire.Roster) { r.Name = "" }, wire.ErrMalformed},
		{"name with a slash", func(r *wire.Roster) { r.Name = "a/b" }, wire.ErrMalformed},
		{"name with a newline", func(r *wire.Roster) { r.Name = "a\nb" }, wire.ErrMalformed},
		{"name not UTF-8", func(r *wire.Roster) { r.Name = "\xff" }, wire.ErrMalformed},
		{"name too long", func(r *wire.Roster) { r.Name = strings.Repeat("é", wire.MaxGroupNameSize/2+1) }, wire.ErrMalformed},
		{"op 0", func(r *wire.Roster) { r.Changes[0].Op = 0 }, wire.ErrMalformed},
		{"op 4", func(r *wire.Roster) { r.Changes[0].Op = 4 }, wire.ErrMalformed},
		{"bad change address", func(r *wire.Roster) { r.Changes[0].Address = "a b" }, wire.ErrMalformed},
		{"change address without a device", func(r *wire.Roster) { r.Changes[0].Address = "zz" }, wire.ErrMalformed},
		{"member address in capitals", func(r *wire.Roster) { r.Members[0].Address = "Alice/1" }, wire.ErrMalformed},
		{"member device with a leading zero", func(r *wire.Roster) { r.Members[0].Address = "alice/01" }, wire.ErrMalformed},
		{"member device above 2^31-1", func(r *wire.Roster) { r.Members[0].Address = "alice/2147483648" }, wire.ErrMalformed},
		{"name with a right-to-left override", func(r *wire.Roster) { r.Name = "a\u202eb" }, wire.ErrMalformed},
		{"name with an isolate", func(r *wire.Roster) { r.Name = "a\u2066b" }, wire.ErrMalformed},
		{"name with a left-to-right mark", func(r *wire.Roster) { r.Name = "a\u200eb" }, wire.ErrMalformed},
		{"changes out of order", func(r *wire.Roster) { r.Changes[0], r.Changes[1] = r.Changes[1], r.Changes[0] }, wire.ErrMalformed},
		{"a change twice", func(r *wire.Roster) { r.Changes[1] = r.Changes[0] }, wire.ErrMalformed},
		{"empty member address", func(r *wire.Roster) { r.Members[0].Address = "" }, wire.ErrMalformed},
		{"members out of order", func(r *wire.Roster) { r.Members[0], r.Members[2] = r.Members[2], r.Members[0] }, wire.ErrMalformed},
		{"a member twice", func(r *wire.Roster) { r.Members[1] = r.Members[2] }, wire.ErrMalformed},
		{"too many members", func(r *wire.Roster) { r.Members = members(wire.MaxGroupMembers + 1) }, wire.ErrMessageTooLarge},
		{"too many changes", func(r *wire.Roster) { r.Changes = adds(wire.MaxRosterChanges + 1) }, wire.ErrMessageTooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := base
			r.Changes = append([]wire.RosterChange(nil), base.Changes...)
			r.Members = append([]wire.RosterMember(nil), base.Members...)
			tt.change(&r)
			wantEncodeError(t, wire.EncodeRoster, r, tt.want)
		})
	}
	valid := mustEncode(wire.EncodeRoster, base)
	with := func(i int, c byte) []byte { b := bytes.Clone(valid); b[i] = c; return b }
	// Offsets: header 42, name length 42, name 43..49, change count 50,
	// first change op 51, address length 52.
	raw := []struct {
		name string
		in   []byte
		want error
	}{
		{"version 0", with(0, 0), wire.ErrUnsupportedVersion},
		{"kind 3", with(1, 3), wire.ErrMalformed},
		{"name length over remaining", with(42, 0xff), wire.ErrMalformed},
		{"change count over limit", with(50, wire.MaxRosterChanges+1), wire.ErrMalformed},
		{"change count over remaining", with(50, 20), wire.ErrMalformed},
		{"op 9", with(51, 9), wire.ErrMalformed},
		{"member role 2", with(len(valid)-9, 2), wire.ErrMalformed},
		{"member count over limit", func() []byte {
			b := bytes.Clone(valid)
			binary.BigEndian.PutUint16(b[len(valid)-27:], wire.MaxGroupMembers+1)
			return b
		}(), wire.ErrMalformed},
		{"member count 65535", func() []byte {
			b := bytes.Clone(valid)
			binary.BigEndian.PutUint16(b[len(valid)-27:], 0xffff)
			return b
		}(), wire.ErrMalformed},
		{"over MaxRosterFrameSize", make([]byte, wire.MaxRosterFrameSize+1), wire.ErrMessageTooLarge},
	}
	for _, tt := range raw {
		t.Run(tt.name, func(t *testing.T) { wantReject(t, wire.DecodeRoster, tt.in, tt.want) })
	}
}

// TestLargestRoster: the longest name, the most changes and members with the
// longest addresses encode to exactly MaxRosterFrameSize, which fits a frame.
func TestLargestRoster(t *testing.T) {
	r := wire.Roster{Generation: 1, Name: strings.Repeat("n", wire.MaxGroupNameSize),
		Changes: adds(wire.MaxRosterChanges), Members: members(wire.MaxGroupMembers)}
	b := mustEncode(wire.EncodeRoster, r)
	if len(b) != wire.MaxRosterFrameSize {
		t.Fatalf("largest roster is %d bytes, want MaxRosterFrameSize %d", len(b), wire.MaxRosterFrameSize)
	}
	if wire.MaxRosterFrameSize > wire.MaxFrameSize {
		t.Fatalf("MaxRosterFrameSize %d over MaxFrameSize", wire.MaxRosterFrameSize)
	}
	roundTrip(t, rosterFormat, b)
}

func TestDecodeNotAMemberRejects(t *testing.T) {
	valid := mustEncode(wire.EncodeNotAMember, notAMemberVectors()[0].v)
	wantReject(t, wire.DecodeNotAMember, append(bytes.Clone(valid), 0), wire.ErrMalformed)
	wantReject(t, wire.DecodeNotAMember, make([]byte, wire.MaxFrameSize+1), wire.ErrMessageTooLarge)
	wantReject(t, wire.DecodeNotAMember, valid[:len(valid)-1], wire.ErrMalformed)
	b := bytes.Clone(valid)
	b[1] = 2
	wantReject(t, wire.DecodeNotAMember, b, wire.ErrMalformed)
	b[0], b[1] = 2, 5
	wantReject(t, wire.DecodeNotAMember, b, wire.ErrUnsupportedVersion)
}

// longMember returns the i-th of a run of addresses of MaxAddressSize bytes
// in increasing order.
func longMember(i int) string {
	return fmt.Sprintf("%s/%d", strings.Repeat("u", wire.MaxUserSize), 1000000000+i)
}

func members(n int) []wire.RosterMember {
	ms := make([]wire.RosterMember, n)
	for i := range ms {
		ms[i] = wire.RosterMember{Address: longMember(i), Admin: i == 0}
	}
	return ms
}

func adds(n int) []wire.RosterChange {
	cs := make([]wire.RosterChange, n)
	for i := range cs {
		cs[i] = wire.RosterChange{Op: wire.RosterAdd, Address: longMember(i)}
	}
	return cs
}

func FuzzDecodeGroupMessage(f *testing.F) {
	for _, v := range append(groupMessageVectors(), groupActionVectors()...) {
		b := mustEncode(wire.EncodeGroupMessage, v.v)
		f.Add(b)                              // a frozen vector
		f.Add(b[:len(b)-1])                   // its body one byte short
		f.Add(append(b, 0))                   // a trailing byte
		f.Add(append([]byte{1, 1}, b[2:]...)) // an application kind in front
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		fuzzRoundTrip(t, b, wire.DecodeGroupMessage, wire.EncodeGroupMessage)
	})
}

func FuzzDecodeRoster(f *testing.F) {
	for _, v := range rosterVectors() {
		b := mustEncode(wire.EncodeRoster, v.v)
		f.Add(b)            // a frozen vector
		f.Add(b[:len(b)-1]) // the last address cut short
		f.Add(append(b, 0)) // a trailing byte
	}
	f.Add(mustEncode(wire.EncodeRoster, wire.Roster{Generation: 1, Name: "n", Members: members(3)})) // long addresses
	f.Fuzz(func(t *testing.T, b []byte) {
		fuzzRoundTrip(t, b, wire.DecodeRoster, wire.EncodeRoster)
	})
}

func FuzzDecodeSignedRoster(f *testing.F) {
	for _, v := range signedRosterVectors() {
		b := mustEncode(wire.EncodeSignedRoster, v.v)
		f.Add(b)             // a frozen vector
		f.Add(b[:len(b)-1])  // the signature cut short
		f.Add(append(b, 0))  // a trailing byte
		f.Add(b[:len(b)-64]) // no signature at all
	}
	f.Add(mustEncode(wire.EncodeSignedRoster, wire.SignedRoster{Roster: wire.Roster{Generation: 1, Name: "n", Members: members(3)}, Author: longMember(9)}))
	f.Fuzz(func(t *testing.T, b []byte) {
		fuzzRoundTrip(t, b, wire.DecodeSignedRoster, wire.EncodeSignedRoster)
	})
}

// TestSignedRosterRejects: what the unsigned layout refuses, the signed one
// refuses too, and an author that is not a canonical device address.
func TestSignedRosterRejects(t *testing.T) {
	base := signedRosterVectors()[0].v
	for _, tt := range []struct {
		name   string
		change func(*wire.SignedRoster)
	}{
		{"author without a device", func(r *wire.SignedRoster) { r.Author = "alice" }},
		{"author in capitals", func(r *wire.SignedRoster) { r.Author = "Alice/1" }},
		{"member without a device", func(r *wire.SignedRoster) { r.Members[1].Address = "zz" }},
		{"name with an override", func(r *wire.SignedRoster) { r.Name = "\u202e" }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := base
			r.Members = append([]wire.RosterMember(nil), base.Members...)
			tt.change(&r)
			wantEncodeError(t, wire.EncodeSignedRoster, r, wire.ErrMalformed)
		})
	}
	valid := mustEncode(wire.EncodeSignedRoster, base)
	// Offsets: header 42, parent 42..73, author length 74, author 75..81.
	with := func(i int, c byte) []byte { b := bytes.Clone(valid); b[i] = c; return b }
	wantReject(t, wire.DecodeSignedRoster, with(75, 'A'), wire.ErrMalformed)
	wantReject(t, wire.DecodeSignedRoster, with(1, 4), wire.ErrMalformed)
	wantReject(t, wire.DecodeSignedRoster, valid[:len(valid)-65], wire.ErrMalformed)
	wantReject(t, wire.DecodeSignedRoster, make([]byte, wire.MaxSignedRosterFrameSize+1), wire.ErrMessageTooLarge)
	largest := wire.SignedRoster{Roster: wire.Roster{Generation: 1, Name: strings.Repeat("n", wire.MaxGroupNameSize),
		Changes: adds(wire.MaxRosterChanges), Members: members(wire.MaxGroupMembers)}, Author: longMember(99)}
	if b := mustEncode(wire.EncodeSignedRoster, largest); len(b) != wire.MaxSignedRosterFrameSize || len(b) > wire.MaxFrameSize {
		t.Fatalf("largest signed roster is %d bytes, want MaxSignedRosterFrameSize %d within MaxFrameSize", len(b), wire.MaxSignedRosterFrameSize)
	}
}

func FuzzDecodeNotAMember(f *testing.F) {
	for _, v := range notAMemberVectors() {
		b := mustEncode(wire.EncodeNotAMember, v.v)
		f.Add(b)            // a frozen vector
		f.Add(b[:len(b)-1]) // cut by one byte
	}
	f.Add(mustHex("0105")) // kind only
	f.Fuzz(func(t *testing.T, b []byte) {
		fuzzRoundTrip(t, b, wire.DecodeNotAMember, wire.EncodeNotAMember)
	})
}
