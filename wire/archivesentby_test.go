package wire_test

import (
	"errors"
	"testing"

	"github.com/parley-chat/parley/wire"
)

var archiveMessageByFormat = format[wire.ArchiveRecord]{
	file:   "archive-record-message-by.txt",
	title:  "archive record kind 11: a received message with the device that sent it",
	fuzz:   "FuzzDecodeArchiveMessageBy",
	encode: wire.EncodeArchiveRecord,
	decode: wire.DecodeArchiveRecord,
}

func archiveMessageByVectors() []vector[wire.ArchiveRecord] {
	return []vector[wire.ArchiveRecord]{
		{name: "message-by", doc: `message with bob/1 sent by bob/2, received, id bytes 00.., at 11, state 0, no extras, body "hi"`,
			v: wire.ArchiveMessage{Peer: "bob/1", SentBy: "bob/2", Direction: 1, ID: seq16(0), At: 11, Body: []byte("hi")}},
		{name: "message-by-extras", doc: `message with carol/3 sent by carol/3, received, id bytes 10.., at 12, state 0,
				action 3, reply to bytes 00.., 2 edits, deleted, no body`,
			v: wire.ArchiveMessage{Peer: "carol/3", SentBy: "carol/3", Direction: 1, ID: seq16(0x10), At: 12,
				Extras: wire.ArchiveExtras{Action: 3, ReplyTo: lid(0), Edits: 2, Deleted: true}}},
	}
}

func TestArchiveMessageByVectors(t *testing.T) {
	checkVectors(t, archiveMessageByFormat, archiveMessageByVectors())
}

// TestArchiveMessageByRejects: kind 11 is a received message naming a
// well-formed device; it sorts among the kind-7 messages; a message
// naming none is kind 7, byte for byte as before.
func TestArchiveMessageByRejects(t *testing.T) {
	for name, rec := range map[string]wire.ArchiveRecord{
		"sent":        wire.ArchiveMessage{Peer: "bob/1", SentBy: "bob/2", Direction: 2, State: 2},
		"bad device":  wire.ArchiveMessage{Peer: "bob/1", SentBy: "b b", Direction: 1},
		"long device": wire.ArchiveMessage{Peer: "bob/1", SentBy: string(make([]byte, wire.MaxAddressSize+1)), Direction: 1},
	} {
		if _, err := wire.EncodeArchiveRecord(rec); !errors.Is(err, wire.ErrMalformed) {
			t.Errorf("encode %s: %v, want ErrMalformed", name, err)
		}
	}
	b := mustEncode(wire.EncodeArchiveRecord, archiveMessageByVectors()[0].v)
	if b[0] != byte(wire.ArchiveKindMessageBy) {
		t.Fatalf("kind %d, want %d", b[0], wire.ArchiveKindMessageBy)
	}
	sent := append([]byte(nil), b...)
	sent[1+1+5+1+5] = 2 // the direction, after the peer and the device
	if _, err := wire.DecodeArchiveRecord(sent); !errors.Is(err, wire.ErrMalformed) {
		t.Errorf("decode a sent message naming a device: %v, want ErrMalformed", err)
	}
	if wire.ArchiveKindMessageBy.Order() != wire.ArchiveKindMessage || wire.ArchiveKindStaged.Order() != wire.ArchiveKindStaged {
		t.Error("kind 11 does not sort as kind 7")
	}
	plain := archiveMessageByVectors()[0].v.(wire.ArchiveMessage)
	plain.SentBy = ""
	if k := plain.ArchiveKind(); k != wire.ArchiveKindMessage {
		t.Errorf("a message naming no device is kind %d, want 7", k)
	}
}

func FuzzDecodeArchiveMessageBy(f *testing.F) {
	for _, v := range archiveMessageByVectors() {
		f.Add(mustEncode(wire.EncodeArchiveRecord, v.v))
	}
	f.Add([]byte{11, 5, 'b', 'o', 'b', '/', '1', 5, 'b', 'o', 'b', '/', '2', 1}) // cut after its direction
	f.Add([]byte{11, 5, 'b', 'o', 'b', '/', '1', 0})                             // an empty device
	f.Fuzz(func(t *testing.T, b []byte) {
		fuzzRoundTrip(t, b, wire.DecodeArchiveRecord, wire.EncodeArchiveRecord)
	})
}
