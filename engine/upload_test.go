package engine_test

import (
	"context"
	"encoding/hex"
	"errors"
	"testing"

	"github.com/parley-chat/parley/engine"
)

// TestUploadsListsTheInterrupted: an upload cut off mid-way (its context
// ended after the first chunk, as a kill would leave it) is listed with
// its peer, file and the logical ID it will have; sending the file again
// resumes it, keeps that ID and leaves nothing listed. A group's upload is
// listed with its group.
func TestUploadsListsTheInterrupted(t *testing.T) {
	w := newFileWorld(t, t.TempDir())
	if err := w.do("alice/1", "groupcreate:friends:bob/1", nil); err != nil {
		t.Fatal(err)
	}
	src, _ := writeRandomFile(t, t.TempDir(), "big.dat", 8*testChunk, 3)
	bob := engine.MustParseAddress("bob/1")
	w.with(t, "alice/1", func(c *engine.Client) {
		if got, err := c.Uploads(context.Background()); err != nil || len(got) != 0 {
			t.Fatalf("uploads before any: %+v, %v", got, err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		_, err := c.SendFile(ctx, bob, src, func(done, total int64) {
			if done > 0 {
				cancel()
			}
		})
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("the cut upload returned %v", err)
		}
		got, err := c.Uploads(context.Background())
		if err != nil || len(got) != 1 || got[0].To != bob.String() || got[0].Path != src || got[0].Size != 8*testChunk {
			t.Fatalf("uploads after the cut: %+v, %v; want the file to bob", got, err)
		}
		id, err := c.SendFile(context.Background(), bob, src, nil)
		if err != nil || id != got[0].ID {
			t.Fatalf("the resumed upload: %x, %v; want the listed ID %x", id, err, got[0].ID)
		}
		if left, err := c.Uploads(context.Background()); err != nil || len(left) != 0 {
			t.Fatalf("uploads after the resume: %+v, %v", left, err)
		}

		g, err := groupNamed(context.Background(), c, "friends")
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel = context.WithCancel(context.Background())
		_, _ = c.SendGroupFile(ctx, g.ID, src, func(done, total int64) {
			if done > 0 {
				cancel()
			}
		})
		got, err = c.Uploads(context.Background())
		if err != nil || len(got) != 1 || got[0].To != "group:"+hex.EncodeToString(g.ID[:]) {
			t.Fatalf("uploads after a cut group upload: %+v, %v; want the group's", got, err)
		}
	})
}
