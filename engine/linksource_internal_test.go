package engine

import (
	"testing"

	"github.com/parley-chat/parley/wire"
)

// TestLinkSourceKeepsTheChoice: a link's source carries the history the
// device keeps and reads it back; a source written before it did (the
// manifest last) reads as recorded false; a choice ParseHistoryChoice
// would not give is refused. Narrower keeps the least.
func TestLinkSourceKeepsTheChoice(t *testing.T) {
	h := wire.LinkHistory{Records: 7, Manifest: wire.FileManifest{Size: 10, ChunkSize: wire.MinFileChunkSize, Chunks: 1, Name: "link", MediaType: "application/octet-stream"}}
	h.Key[0] = 1
	for _, keep := range []HistoryChoice{{Mode: HistoryNone}, {Mode: HistoryAll}, {Mode: HistorySince, Days: MaxHistoryDays}} {
		b, err := encodeLinkSource(h, keep)
		if err != nil {
			t.Fatal(err)
		}
		got, k, recorded, err := decodeLinkSource(b)
		if err != nil || !recorded || k != keep || got.Records != h.Records || got.Manifest != h.Manifest {
			t.Fatalf("%v: %+v %v %v %v", keep, got, k, recorded, err)
		}
		old := b[:len(b)-linkKeepSize]
		if _, _, recorded, err := decodeLinkSource(old); err != nil || recorded {
			t.Fatalf("a source without the choice: recorded %v, %v; want read, not recorded", recorded, err)
		}
	}
	b, _ := encodeLinkSource(h, HistoryChoice{Mode: HistorySince})
	if _, _, _, err := decodeLinkSource(b); err == nil {
		t.Fatal("a source keeping 0 days was read")
	}
	none, all, week := HistoryChoice{Mode: HistoryNone}, HistoryChoice{Mode: HistoryAll}, HistoryChoice{Mode: HistorySince, Days: 7}
	for _, c := range [][3]HistoryChoice{{all, none, none}, {none, all, none}, {all, week, week}, {week, all, week}, {week, none, none}, {week, {Mode: HistorySince, Days: 3}, {Mode: HistorySince, Days: 3}}} {
		if got := c[0].Narrower(c[1]); got != c[2] {
			t.Errorf("%v narrower %v = %v, want %v", c[0], c[1], got, c[2])
		}
	}
}
