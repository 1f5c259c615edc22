package store

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/parley-chat/parley/engine"
)

func newTestSealer(tb testing.TB) *sealer {
	tb.Helper()
	key := make([]byte, storageKeySize)
	rand.Read(key)
	s, err := newSealer(key)
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

func TestSealRoundTrip(t *testing.T) {
	s := newTestSealer(t)
	id := bytes.Repeat([]byte{0xab}, 16)
	tests := []struct {
		name      string
		kind      string
		rowKey    []byte
		plaintext []byte
	}{
		{"empty plaintext", kindSession, rowKey([]byte("bob/1")), nil},
		{"empty row key", kindIdentity, nil, []byte("private keys")},
		{"frame", kindOutboundFrame, rowKey([]byte("bob/1"), id), []byte("\x01\x01frame")},
		{"large", kindHistoryBody, rowKey([]byte("bob/1"), []byte{1}, id), bytes.Repeat([]byte("x"), 196630)},
		{"integer row", kindStaged, rowKey(rowKeyInt(42)), []byte("envelope")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sealed := s.seal(tt.kind, tt.rowKey, tt.plaintext)
			if got, want := len(sealed), nonceSize+len(tt.plaintext)+16; got != want {
				t.Errorf("sealed length = %d, want %d", got, want)
			}
			if len(tt.plaintext) >= 8 && bytes.Contains(sealed, tt.plaintext[:8]) {
				t.Errorf("sealed record contains the plaintext")
			}
			got, err := s.open(tt.kind, tt.rowKey, sealed)
			if err != nil {
				t.Fatalf("open = %v", err)
			}
			if !bytes.Equal(got, tt.plaintext) {
				t.Errorf("open = %q, want %q", got, tt.plaintext)
			}
			// Sealing twice gives two records (fresh nonces).
			if again := s.seal(tt.kind, tt.rowKey, tt.plaintext); bytes.Equal(again, sealed) {
				t.Errorf("two seals of the same record are equal")
			}
		})
	}
}

func TestSealRejects(t *testing.T) {
	s := newTestSealer(t)
	other := newTestSealer(t)
	id := bytes.Repeat([]byte{1}, 16)
	rk := rowKey([]byte("bob/1"), id)
	sealed := s.seal(kindOutboundFrame, rk, []byte("hello"))

	otherID := slices.Clone(id)
	otherID[15] ^= 1
	tests := []struct {
		name   string
		sealer *sealer
		kind   string
		rowKey []byte
		sealed []byte
	}{
		{"other row", s, kindOutboundFrame, rowKey([]byte("bob/1"), otherID), sealed},
		{"other peer", s, kindOutboundFrame, rowKey([]byte("bob/2"), id), sealed},
		{"other kind", s, kindInboundFrame, rk, sealed},
		{"no row key", s, kindOutboundFrame, nil, sealed},
		{"other key", other, kindOutboundFrame, rk, sealed},
		{"truncated", s, kindOutboundFrame, rk, sealed[:len(sealed)-1]},
		{"too short", s, kindOutboundFrame, rk, sealed[:nonceSize+15]},
		{"empty", s, kindOutboundFrame, rk, nil},
		{"extended", s, kindOutboundFrame, rk, append(slices.Clone(sealed), 0)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.sealer.open(tt.kind, tt.rowKey, tt.sealed)
			if !errors.Is(err, engine.ErrSealedRecord) {
				t.Errorf("open = %q, %v; want ErrSealedRecord", got, err)
			}
			if got != nil {
				t.Errorf("open returned %q with its error, want nil", got)
			}
		})
	}
}

func TestSealFlippedBit(t *testing.T) {
	s := newTestSealer(t)
	rk := rowKey([]byte("bob/1"))
	sealed := s.seal(kindSession, rk, []byte("hi"))
	for i := range sealed {
		for bit := range 8 {
			b := slices.Clone(sealed)
			b[i] ^= 1 << bit
			if got, err := s.open(kindSession, rk, b); !errors.Is(err, engine.ErrSealedRecord) {
				t.Fatalf("open with byte %d bit %d flipped = %q, %v; want ErrSealedRecord", i, bit, got, err)
			}
		}
	}
}

func TestRowKeyUnambiguous(t *testing.T) {
	keys := [][]byte{
		rowKey([]byte("ab"), []byte("c")),
		rowKey([]byte("a"), []byte("bc")),
		rowKey([]byte("abc")),
		rowKey([]byte("abc"), nil),
		rowKey(nil, []byte("abc")),
		rowKey(),
		rowKey(nil),
	}
	for i := range keys {
		for j := i + 1; j < len(keys); j++ {
			if bytes.Equal(keys[i], keys[j]) {
				t.Errorf("row keys %d and %d both encode as %x", i, j, keys[i])
			}
		}
	}
}

func TestAssociatedData(t *testing.T) {
	got := associatedData(kindSession, []byte{1, 2})
	want := []byte("parley/v1/session\x00\x01\x02")
	if !bytes.Equal(got, want) {
		t.Errorf("associatedData = %q, want %q", got, want)
	}
	for _, kind := range []string{"", "a\x00b"} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("associatedData(%q) did not panic", kind)
				}
			}()
			associatedData(kind, nil)
		}()
	}
}

// TestSealedColumns holds the schema to sealedColumns: every column whose name
// starts with "sealed" has a record kind, and every kind names a real column.
func TestSealedColumns(t *testing.T) {
	ctx := context.Background()
	db := MustOpenDB(t)
	rows, err := db.sql.QueryContext(ctx, `
		SELECT m.name, c.name FROM sqlite_schema AS m, pragma_table_info(m.name) AS c
		WHERE m.type = 'table' AND c.name LIKE 'sealed%'`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var got []string
	for rows.Next() {
		var table, column string
		if err := rows.Scan(&table, &column); err != nil {
			t.Fatal(err)
		}
		got = append(got, table+"."+column)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	slices.Sort(got)
	want := slices.Sorted(maps.Keys(sealedColumns))
	if !slices.Equal(got, want) {
		t.Errorf("sealed columns in the schema = %v, want %v (sealedColumns)", got, want)
	}
	for col, kind := range sealedColumns {
		if kind == "" || strings.ContainsRune(kind, 0) {
			t.Errorf("sealedColumns[%s] = %q, want a record kind", col, kind)
		}
	}
}
