package wire_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/parley-chat/parley/wire"
)

var archiveHeaderFormat = format[wire.ArchiveHeader]{
	file:   "archive-header.txt",
	title:  "backup archive header (version 1)",
	fuzz:   "FuzzDecodeArchiveHeader",
	encode: wire.EncodeArchiveHeader,
	decode: wire.DecodeArchiveHeader,
}

var archiveRecordFormat = format[wire.ArchiveRecord]{
	file:   "archive-record.txt",
	title:  "backup archive record plaintexts (version 1)",
	fuzz:   "FuzzDecodeArchiveRecord",
	encode: wire.EncodeArchiveRecord,
	decode: wire.DecodeArchiveRecord,
}

func archiveHeaderVectors() []vector[wire.ArchiveHeader] {
	return []vector[wire.ArchiveHeader]{
		{name: "default", doc: `Argon2id 3 passes, 65536 KiB, 2 threads; salt bytes 10.., id bytes 20.., check bytes 40..`,
			v: wire.ArchiveHeader{Version: 1, Passes: 3, MemoryKiB: 65536, Threads: 2, Salt: seq16(0x10), ID: seq16(0x20), Check: seq32(0x40)}},
		{name: "small", doc: `Argon2id 1 pass, 8 KiB, 1 thread; salt bytes 00.., id bytes ff.., check bytes 80..`,
			v: wire.ArchiveHeader{Version: 1, Passes: 1, MemoryKiB: 8, Threads: 1, Salt: seq16(0), ID: seq16(0xff), Check: seq32(0x80)}},
	}
}

var archiveHeaderV3Format = format[wire.ArchiveHeader]{
	file:   "archive-header-v3.txt",
	title:  "backup archive header (version 3: records may include kind 11)",
	fuzz:   "FuzzDecodeArchiveHeader",
	encode: wire.EncodeArchiveHeader,
	decode: wire.DecodeArchiveHeader,
}

func archiveHeaderV3Vectors() []vector[wire.ArchiveHeader] {
	return []vector[wire.ArchiveHeader]{
		{name: "default-v3", doc: `version 3; Argon2id 3 passes, 65536 KiB, 2 threads; salt bytes 10.., id bytes 20.., check bytes 40..`,
			v: wire.ArchiveHeader{Version: 3, Passes: 3, MemoryKiB: 65536, Threads: 2, Salt: seq16(0x10), ID: seq16(0x20), Check: seq32(0x40)}},
	}
}

func lid(start byte) *wire.LogicalID { id := wire.LogicalID(seq16(start)); return &id }

func archiveRecordVectors() []vector[wire.ArchiveRecord] {
	return []vector[wire.ArchiveRecord]{
		{name: "account", doc: `account: key bytes a0.., the list one-device of device-list.txt, written by device 1`,
			v: wire.ArchiveAccount{Key: seq32(0xa0), List: oneDeviceList(), Device: 1}},
		{name: "contact", doc: `contact bob/1 "Bob ☕"`, v: wire.ArchiveContact{Address: "bob/1", Name: "Bob ☕"}},
		{name: "pin", doc: `pin bob/1, identity bytes 01.. (65 bytes), pinned at 1700000000000000000`,
			v: wire.ArchivePin{Address: "bob/1", Identity: seq(1, 65), PinnedAt: 1700000000000000000}},
		{name: "blocked", doc: `blocked mallory/1 at 5`, v: wire.ArchiveBlocked{Address: "mallory/1", At: 5}},
		{name: "accepted", doc: `accepted carol/2 at -1`, v: wire.ArchiveAccepted{Address: "carol/2", At: -1}},
		{name: "group-bare", doc: `group id bytes 30.., no name, created at 7, no start, no snapshot, no vouchers, no changes`,
			v: wire.ArchiveGroup{ID: seq16(0x30), CreatedAt: 7}},
		{name: "group", doc: `group id bytes 30.., name "crew", created at 7, start bytes 50.., snapshot bytes 60.. (3),
				vouchers "bob/1 carol/2", one change: id bytes 70.., author bob/1, generation 2, at 9, frame bytes 01.. (4)`,
			v: wire.ArchiveGroup{ID: seq16(0x30), Name: "crew", CreatedAt: 7, Start: lid(0x50), Snapshot: seq(0x60, 3),
				Vouchers: "bob/1 carol/2", Changes: []wire.ArchiveChange{{ID: seq16(0x70), Author: "bob/1", Generation: 2, At: 9, Frame: seq(1, 4)}}}},
		{name: "message-in", doc: `message from bob/1 (in), id bytes 00.., at 11, state 0, no extras, body "hi"`,
			v: wire.ArchiveMessage{Peer: "bob/1", Direction: 1, ID: seq16(0), At: 11, Body: []byte("hi")}},
		{name: "message-out", doc: `message to bob/1 (out), id bytes 10.., at 12, state 2 (acknowledged), reply to bytes 00..,
				2 edits, deleted, empty body`,
			v: wire.ArchiveMessage{Peer: "bob/1", Direction: 2, ID: seq16(0x10), At: 12, State: 2,
				Extras: wire.ArchiveExtras{ReplyTo: lid(0), Edits: 2, Deleted: true}}},
		{name: "group-message", doc: `group message in group bytes 30.. from carol/2, id bytes 20.., at 13, action 3, body "yo"`,
			v: wire.ArchiveGroupMessage{Group: seq16(0x30), Sender: "carol/2", ID: seq16(0x20), At: 13,
				Extras: wire.ArchiveExtras{Action: 3}, Body: []byte("yo")}},
		{name: "end", doc: `end: 10 records, 3 messages, 2 groups`, v: wire.ArchiveEnd{Records: 10, Messages: 3, Groups: 2}},
	}
}

func TestArchiveVectors(t *testing.T) {
	checkVectors(t, archiveHeaderFormat, archiveHeaderVectors())
	checkVectors(t, archiveHeaderV3Format, archiveHeaderV3Vectors())
	checkVectors(t, archiveRecordFormat, archiveRecordVectors())
}

// TestArchiveRejects: each bound and rule, broken once.
func TestArchiveRejects(t *testing.T) {
	h := mustEncode(wire.EncodeArchiveHeader, archiveHeaderVectors()[0].v)
	for name, c := range map[string]struct {
		change func([]byte)
		want   error
	}{
		"magic":    {func(b []byte) { b[0] = 'p' }, wire.ErrMalformed},
		"version":  {func(b []byte) { b[8] = 2 }, wire.ErrUnsupportedVersion},
		"kdf":      {func(b []byte) { b[9] = 2 }, wire.ErrMalformed},
		"passes 0": {func(b []byte) { copy(b[10:14], []byte{0, 0, 0, 0}) }, wire.ErrMalformed},
		"memory":   {func(b []byte) { copy(b[14:18], []byte{0xff, 0, 0, 0}) }, wire.ErrMalformed},
		"threads":  {func(b []byte) { b[18] = 0 }, wire.ErrMalformed},
	} {
		b := append([]byte(nil), h...)
		c.change(b)
		if _, err := wire.DecodeArchiveHeader(b); !errors.Is(err, c.want) {
			t.Errorf("%s: got %v, want %v", name, err, c.want)
		}
	}
	for name, c := range map[string]struct {
		rec  wire.ArchiveRecord
		want error
	}{
		"empty name":    {wire.ArchiveContact{Address: "bob/1"}, wire.ErrMalformed},
		"long name":     {wire.ArchiveContact{Address: "bob/1", Name: strings.Repeat("x", wire.MaxLinkNameSize+1)}, wire.ErrMalformed},
		"bad address":   {wire.ArchiveBlocked{Address: "a b"}, wire.ErrMalformed},
		"no identity":   {wire.ArchivePin{Address: "bob/1"}, wire.ErrMalformed},
		"direction":     {wire.ArchiveMessage{Peer: "bob/1", Direction: 3}, wire.ErrMalformed},
		"action":        {wire.ArchiveMessage{Peer: "bob/1", Direction: 1, Extras: wire.ArchiveExtras{Action: 1}}, wire.ErrMalformed},
		"body":          {wire.ArchiveMessage{Peer: "bob/1", Direction: 1, Body: make([]byte, wire.MaxArchiveBody+1)}, wire.ErrMessageTooLarge},
		"group body":    {wire.ArchiveGroupMessage{Sender: "bob/1", Body: make([]byte, wire.MaxArchiveBody+1)}, wire.ErrMessageTooLarge},
		"changes":       {wire.ArchiveGroup{Changes: make([]wire.ArchiveChange, wire.MaxArchiveGroupChanges+1)}, wire.ErrMessageTooLarge},
		"empty frame":   {wire.ArchiveGroup{Changes: []wire.ArchiveChange{{Author: "bob/1"}}}, wire.ErrMalformed},
		"bad list":      {wire.ArchiveAccount{}, wire.ErrMalformed},
		"nil":           {nil, wire.ErrMalformed},
		"group name":    {wire.ArchiveGroup{Name: "\xff"}, wire.ErrMalformed},
		"vouchers size": {wire.ArchiveGroup{Vouchers: strings.Repeat("v", wire.MaxArchiveVouchers+1)}, wire.ErrMalformed},
	} {
		if _, err := wire.EncodeArchiveRecord(c.rec); !errors.Is(err, c.want) {
			t.Errorf("encode %s: got %v, want %v", name, err, c.want)
		}
	}
	// Bodies at the bound pass.
	at := wire.ArchiveMessage{Peer: "bob/1", Direction: 1, Body: make([]byte, wire.MaxArchiveBody)}
	b := mustEncode(wire.EncodeArchiveRecord, wire.ArchiveRecord(at))
	if _, err := wire.DecodeArchiveRecord(b); err != nil {
		t.Fatalf("a body at the bound: %v", err)
	}
	for name, b := range map[string][]byte{
		"kind 0":  {0},
		"kind 11": {11},
		"empty":   {},
	} {
		if _, err := wire.DecodeArchiveRecord(b); !errors.Is(err, wire.ErrMalformed) {
			t.Errorf("decode %s: got %v, want ErrMalformed", name, err)
		}
	}
}

func FuzzDecodeArchiveHeader(f *testing.F) {
	for _, v := range archiveHeaderVectors() {
		f.Add(mustEncode(wire.EncodeArchiveHeader, v.v))
	}
	f.Add([]byte("PARLEYBK\x02")) // a newer version, cut short
	f.Fuzz(func(t *testing.T, b []byte) {
		fuzzRoundTrip(t, b, wire.DecodeArchiveHeader, wire.EncodeArchiveHeader)
	})
}

func FuzzDecodeArchiveRecord(f *testing.F) {
	for _, v := range archiveRecordVectors() {
		f.Add(mustEncode(wire.EncodeArchiveRecord, v.v))
	}
	f.Add([]byte{7, 5, 'b', 'o', 'b', '/', '1', 1}) // a message cut after its direction
	f.Fuzz(func(t *testing.T, b []byte) {
		fuzzRoundTrip(t, b, wire.DecodeArchiveRecord, wire.EncodeArchiveRecord)
	})
}
