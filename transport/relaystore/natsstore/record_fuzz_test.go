package natsstore

import (
	"bytes"
	"errors"
	"testing"
)

// FuzzPayloadRecord: a payload record that does not decode is
// errBadRecord and nothing else; one that does re-encodes to exactly the
// input.
func FuzzPayloadRecord(f *testing.F) {
	// A pending record with no row gone yet.
	f.Add(payloadRecord{created: 1, size: 1200}.encode())
	// A live record of two heads in two shards.
	f.Add(payloadRecord{live: true, created: 1 << 60, size: 4096, rows: []rowRef{{0, 7}, {3, 1 << 40}}}.encode())
	// Cut in a row; an unknown state.
	f.Add([]byte("l\x00\x00\x00\x00\x00\x00\x00\x01\x00\x00\x00\x01\x00"))
	f.Add([]byte("x\x00\x00\x00\x00\x00\x00\x00\x01\x00\x00\x00\x01"))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := decodePayloadRecord(b)
		if err != nil {
			if !errors.Is(err, errBadRecord) || r.rows != nil || r.size != 0 {
				t.Fatalf("%x: %+v, %v; want nothing and errBadRecord", b, r, err)
			}
			return
		}
		if again := r.encode(); !bytes.Equal(again, b) {
			t.Fatalf("%x decodes but re-encodes as %x", b, again)
		}
	})
}

// TestPayloadRef: a head's reference reads back; anything else is no
// reference (a whole envelope).
func TestPayloadRef(t *testing.T) {
	id := "00112233445566778899aabbccddeeff"
	if got, size, ok := parsePayloadRef(payloadRef(id, 1200)); !ok || got != id || size != 1200 {
		t.Fatalf("parsePayloadRef(payloadRef) = %q, %d, %v", got, size, ok)
	}
	for _, bad := range []string{"", id, id + "/", id + "/-1", id + "/x", "abc/12", id + "/99999999999"} {
		if _, _, ok := parsePayloadRef(bad); ok {
			t.Errorf("parsePayloadRef(%q) reads a reference", bad)
		}
	}
}
