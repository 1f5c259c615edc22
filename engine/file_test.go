package engine_test

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/engine/enginetest"
	"github.com/parley-chat/parley/store"
	"github.com/parley-chat/parley/wire"
)

// testChunk is the chunk size of file tests: small, so that a file of a
// few hundred KiB has many chunk boundaries to fail at.
const testChunk = 4096

// putWindow is what an upload hands the relay client at a time (4 puts of
// wire.MaxBlobChunk, engine.uploadPuts): the upload's chunk failpoints are
// reached once a window.
const putWindow = 4 * wire.MaxBlobChunk

// fetchWindow is what a download asks for at a time (engine.fetchWindow),
// in whole chunks: its before-chunk failpoint is reached once a window, its
// after-chunk one once a chunk.
const fetchWindow = (512 << 10) / (testChunk + wire.FileTagSize)

// fileWorld is fpWorld with a blob store in the same directory, so that a
// child process and its parent share profiles, relay and blobs.
type fileWorld struct {
	fpWorld
	// wrap, when set, puts a hostile relay in front of the blobs.
	wrap func(*enginetest.Blobs) engine.BlobRelay
}

func newFileWorld(t *testing.T, root string) fileWorld {
	t.Helper()
	w := fileWorld{fpWorld: fpWorld{root: root}}
	for _, d := range []string{"alice/1", "bob/1"} {
		if err := w.create(d); err != nil {
			t.Fatal(err)
		}
	}
	return w
}

func (w fileWorld) blobs() (*enginetest.Blobs, error) {
	return enginetest.NewBlobs(filepath.Join(w.root, "blobs"))
}

// open opens addr's client with files configured; close closes it.
func (w fileWorld) open(addr string, fp engine.Failpoint) (c *engine.Client, closeFn func() error, err error) {
	ctx := context.Background()
	st, err := store.Open(ctx, w.profile(addr), passphrase, store.Options{Failpoint: fp})
	if err != nil {
		return nil, nil, err
	}
	ep, err := enginetest.OpenFileEndpoint(w.netFile(), engine.MustParseAddress(addr))
	if err != nil {
		st.Close()
		return nil, nil, err
	}
	b, err := w.blobs()
	if err != nil {
		st.Close()
		return nil, nil, err
	}
	var blobs engine.BlobRelay = b
	if w.wrap != nil {
		blobs = w.wrap(b)
	}
	c, err = engine.Open(ctx, engine.Config{Store: st, Relay: ep, Failpoint: fp, Files: engine.FileConfig{
		Dir: filepath.Join(w.profile(addr), "files"), ChunkSize: testChunk, Blobs: blobs}})
	if err != nil {
		st.Close()
		return nil, nil, err
	}
	return c, c.Close, nil
}

// with runs f on addr's client.
func (w fileWorld) with(t *testing.T, addr string, f func(c *engine.Client)) {
	t.Helper()
	c, closeFn, err := w.open(addr, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := closeFn(); err != nil {
			t.Fatal(err)
		}
	}()
	f(c)
}

// writeRandomFile writes n seeded random bytes and returns the path and
// their SHA-256.
func writeRandomFile(t *testing.T, dir, name string, n int, seed uint64) (string, [32]byte) {
	t.Helper()
	b := make([]byte, n)
	r := rand.NewChaCha8([32]byte{byte(seed)})
	r.Read(b)
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return p, sha256.Sum256(b)
}

func fileSum(t *testing.T, path string) [32]byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return sha256.Sum256(b)
}

// sendAndDeliver has alice send the file at path to bob, and bob receive
// its manifest: the delivery's ID.
func (w fileWorld) sendAndDeliver(t *testing.T, path string) wire.LogicalID {
	t.Helper()
	var id wire.LogicalID
	w.with(t, "alice/1", func(c *engine.Client) {
		var err error
		if id, err = c.SendFile(context.Background(), engine.MustParseAddress("bob/1"), path, nil); err != nil {
			t.Fatalf("SendFile: %v", err)
		}
	})
	w.deliver(t, id)
	return id
}

// deliver has bob sync and checks that the manifest id is pending there,
// never committed by the on-arrival policy.
func (w fileWorld) deliver(t *testing.T, id wire.LogicalID) {
	t.Helper()
	w.with(t, "bob/1", func(c *engine.Client) {
		c.SetPolicy(engine.Policy{Commit: engine.CommitOnArrival})
		res, err := c.Sync(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		var got []engine.ReceiveResult
		for _, r := range res.Received {
			if r.Kind == engine.ResultDelivery {
				got = append(got, r)
			}
		}
		if len(got) != 1 || got[0].ID != id || got[0].Content != wire.ContentFile {
			t.Fatalf("bob receives %+v, want the one manifest %x", res.Received, id)
		}
		if _, ok := engine.FileOf(got[0].Content, got[0].Body); !ok {
			t.Fatalf("the delivery's body is no manifest: %x", got[0].Body)
		}
		if _, _, err := c.PendingFile(context.Background(), engine.MustParseAddress("alice/1"), id); err != nil {
			t.Fatalf("the manifest is not pending after an on-arrival round: %v", err)
		}
	})
}

// fetch has bob fetch id into dir.
func (w fileWorld) fetch(id wire.LogicalID, dir string) (string, error) {
	c, closeFn, err := w.open("bob/1", nil)
	if err != nil {
		return "", err
	}
	defer closeFn()
	return c.FetchFile(context.Background(), engine.MustParseAddress("alice/1"), id, dir, nil)
}

func TestSendFetchFile(t *testing.T) {
	w := newFileWorld(t, t.TempDir())
	src, sum := writeRandomFile(t, t.TempDir(), "photo.jpg", 10*testChunk+123, 1)
	id := w.sendAndDeliver(t, src)
	alice, bob := engine.MustParseAddress("alice/1"), engine.MustParseAddress("bob/1")
	w.with(t, "bob/1", func(c *engine.Client) {
		_, mf, err := c.PendingFile(context.Background(), alice, id)
		if err != nil || mf.Name != "photo.jpg" || mf.Size != 10*testChunk+123 || mf.MediaType != "image/jpeg" || mf.Chunks != 11 {
			t.Fatalf("manifest %+v", mf)
		}
		if _, err := c.Commit(context.Background(), alice, id); !errors.Is(err, engine.ErrFileNotFetched) {
			t.Fatalf("commit of an unfetched file: %v, want ErrFileNotFetched", err)
		}
	})
	dir := t.TempDir()
	saved, err := w.fetch(id, dir)
	if err != nil {
		t.Fatal(err)
	}
	if saved != filepath.Join(dir, "photo.jpg") || fileSum(t, saved) != sum {
		t.Fatalf("saved %s, want photo.jpg with the original's SHA-256", saved)
	}
	w.with(t, "bob/1", func(c *engine.Client) {
		if n, _ := c.CountInbound(context.Background(), nil); n != 0 {
			t.Fatalf("%d pending after the fetch, want the manifest committed", n)
		}
		h, err := c.History(context.Background(), alice, 0, 10)
		if want := fmt.Sprintf("[file] photo.jpg (%d bytes, image/jpeg)", 10*testChunk+123); err != nil || len(h) != 1 || string(h[0].Body) != want {
			t.Fatalf("bob's history %+v, %v; want %q (never the manifest and its key)", h, err, want)
		}
	})
	w.with(t, "alice/1", func(c *engine.Client) {
		h, err := c.History(context.Background(), bob, 0, 10)
		if want := fmt.Sprintf("[file] photo.jpg (%d bytes, image/jpeg)", 10*testChunk+123); err != nil || len(h) != 1 || string(h[0].Body) != want {
			t.Fatalf("alice's history %+v, %v; want %q (never the manifest and its key)", h, err, want)
		}
		res, err := c.Sync(context.Background())
		if err != nil || len(res.Received) != 1 || !res.Received[0].Cleared {
			t.Fatalf("alice's sync: %+v, %v; want the ACK", res.Received, err)
		}
		if n, _ := c.CountOutbound(context.Background(), &bob); n != 0 {
			t.Fatalf("alice has %d pending", n)
		}
		if ups, err := c.Uploads(context.Background()); err != nil || len(ups) != 0 {
			t.Fatalf("alice keeps upload records %+v (%v) after the transfer", ups, err)
		}
	})
	for _, who := range []string{"alice_1", "bob_1"} {
		left, _ := filepath.Glob(filepath.Join(w.root, who, "files", "*"))
		if len(left) != 0 {
			t.Fatalf("%s keeps %v after the transfer", who, left)
		}
	}
}

// TestFetchFileHostileRelay: for each corruption of a chunk, the fetch fails
// with a typed error naming the chunk, saves nothing, keeps the chunks
// verified before it, and a retry from an honest relay saves the file.
func TestFetchFileHostileRelay(t *testing.T) {
	const stride = testChunk + wire.FileTagSize
	for _, tt := range []struct {
		name string
		mode enginetest.Corruption
		at   int64
		want error
	}{
		{"flip", enginetest.CorruptFlip, 3, engine.ErrChunkAuth},
		{"truncate", enginetest.CorruptTruncate, 3, engine.ErrChunkSize},
		{"swap", enginetest.CorruptSwap, 3, engine.ErrChunkAuth},
		{"reorder", enginetest.CorruptReorder, 3, engine.ErrChunkAuth},
		{"drop last", enginetest.CorruptDropLast, -1, engine.ErrChunkSize},
		{"extend", enginetest.CorruptExtend, 3, engine.ErrChunkSize},
		{"swap last", enginetest.CorruptSwap, -1, engine.ErrChunkAuth},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := &enginetest.Hostile{Stride: stride, At: tt.at, Mode: tt.mode}
			w := newFileWorld(t, t.TempDir())
			w.wrap = func(b *enginetest.Blobs) engine.BlobRelay { h.Blobs = b; return h }
			src, sum := writeRandomFile(t, t.TempDir(), "a.bin", 6*testChunk+7, 2)
			id := w.sendAndDeliver(t, src)
			h.Arm(1)
			dir := t.TempDir()
			_, err := w.fetch(id, dir)
			var ce *engine.ChunkError
			if !errors.Is(err, tt.want) || !errors.As(err, &ce) {
				t.Fatalf("fetch from a hostile relay: %v, want %v", err, tt.want)
			}
			if !h.Served() {
				t.Fatal("the corruption was never served")
			}
			if left, _ := os.ReadDir(dir); len(left) != 0 {
				t.Fatalf("a failed fetch left %v in the destination", left)
			}
			parts, _ := filepath.Glob(filepath.Join(w.root, "bob_1", "files", "*.part"))
			if len(parts) != 1 {
				t.Fatalf("partial downloads %v, want one", parts)
			}
			if fi, _ := os.Stat(parts[0]); fi.Size() != int64(ce.Index)*stride {
				t.Fatalf("partial download of %d bytes, want the %d chunks before the bad one", fi.Size(), ce.Index)
			}
			w.with(t, "bob/1", func(c *engine.Client) {
				fs, ok, err := c.FileTransfer(context.Background(), engine.MustParseAddress("alice/1"), id)
				if err != nil || !ok || fs.Fetched != ce.Index || fs.Chunks != 7 || fs.Direction != engine.DirectionIn {
					t.Fatalf("FileTransfer = %+v, %v, %v; want %d of 7 chunks fetched", fs, ok, err, ce.Index)
				}
			})
			saved, err := w.fetch(id, dir)
			if err != nil || fileSum(t, saved) != sum {
				t.Fatalf("retry from an honest relay: %s, %v", saved, err)
			}
		})
	}
}

// TestFetchFileExpired: an expired blob fails with blob_expired, removes
// the partial download, and the message can then be discarded.
func TestFetchFileExpired(t *testing.T) {
	w := newFileWorld(t, t.TempDir())
	src, _ := writeRandomFile(t, t.TempDir(), "gone.txt", 3*testChunk, 3)
	id := w.sendAndDeliver(t, src)
	b, err := w.blobs()
	if err != nil {
		t.Fatal(err)
	}
	ids, _ := b.IDs()
	if len(ids) != 1 {
		t.Fatalf("blobs %v, want one", ids)
	}
	// A partial download first (two chunks), then the expiry.
	h := &enginetest.Hostile{Stride: testChunk + wire.FileTagSize, At: 2, Mode: enginetest.CorruptFlip}
	w.wrap = func(b *enginetest.Blobs) engine.BlobRelay { h.Blobs = b; return h }
	h.Arm(1)
	if _, err := w.fetch(id, t.TempDir()); !errors.Is(err, engine.ErrChunkAuth) {
		t.Fatalf("fetch: %v", err)
	}
	if err := b.Expire(ids[0]); err != nil {
		t.Fatal(err)
	}
	_, err = w.fetch(id, t.TempDir())
	if !errors.Is(err, engine.ErrBlobExpired) || engine.ErrorName(err) != "blob_expired" {
		t.Fatalf("fetch of an expired blob: %v (%s)", err, engine.ErrorName(err))
	}
	if parts, _ := filepath.Glob(filepath.Join(w.root, "bob_1", "files", "*.part")); len(parts) != 0 {
		t.Fatalf("an expired blob's partial download stays: %v", parts)
	}
	w.with(t, "bob/1", func(c *engine.Client) {
		if _, err := c.Discard(context.Background(), engine.MustParseAddress("alice/1"), id, engine.DiscardOther); err != nil {
			t.Fatalf("discard: %v", err)
		}
	})
}

// TestSendFileLimits: a file over the largest size, and a relay without a
// blob store, store nothing.
func TestSendFileLimits(t *testing.T) {
	w := newFileWorld(t, t.TempDir())
	src, _ := writeRandomFile(t, t.TempDir(), "big", 2048, 4)
	st, err := store.Open(context.Background(), w.profile("alice/1"), passphrase, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ep, _ := enginetest.OpenFileEndpoint(w.netFile(), engine.MustParseAddress("alice/1"))
	b, _ := w.blobs()
	bob := engine.MustParseAddress("bob/1")
	c, err := engine.Open(context.Background(), engine.Config{Store: st, Relay: ep, Files: engine.FileConfig{
		Dir: t.TempDir(), MaxSize: 2047, Blobs: b}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.SendFile(context.Background(), bob, src, nil); !errors.Is(err, engine.ErrFileTooLarge) {
		t.Fatalf("a file over the limit: %v", err)
	}
	if ids, _ := b.IDs(); len(ids) != 0 {
		t.Fatalf("a refused file made blobs %v", ids)
	}
	if n, _ := c.CountOutbound(context.Background(), &bob); n != 0 {
		t.Fatal("a refused file stored a message")
	}
}

func TestSendFileNeedsABlobStore(t *testing.T) {
	w := newFileWorld(t, t.TempDir())
	src, _ := writeRandomFile(t, t.TempDir(), "f", 10, 5)
	w.fpWorld.do("alice/1", "maintain", nil)
	st, err := store.Open(context.Background(), w.profile("alice/1"), passphrase, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ep, _ := enginetest.OpenFileEndpoint(w.netFile(), engine.MustParseAddress("alice/1"))
	c, err := engine.Open(context.Background(), engine.Config{Store: st, Relay: ep})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.SendFile(context.Background(), engine.MustParseAddress("bob/1"), src, nil); !errors.Is(err, engine.ErrNoBlobStore) {
		t.Fatalf("SendFile through a relay without blobs: %v, want ErrNoBlobStore", err)
	}
}

// TestFileFailpointsAsErrors: an error at every file failpoint fails the
// transfer, and running it again completes it once: one manifest, one
// saved file with the original's SHA-256, bob's history holding it once.
func TestFileFailpointsAsErrors(t *testing.T) {
	injected := errors.New("injected")
	for _, point := range []string{
		"file-upload/after-record", "file-upload/before-chunk", "file-upload/after-chunk",
		"file-upload/before-manifest", "file-upload/after-manifest",
		"file-fetch/before-chunk", "file-fetch/after-chunk", "file-fetch/before-commit",
	} {
		t.Run(point, func(t *testing.T) {
			w := newFileWorld(t, t.TempDir())
			// Three windows to put, five to fetch: the chunk failpoints
			// fail the third.
			src, sum := writeRandomFile(t, t.TempDir(), "a.bin", 2*putWindow+1, 8)
			hits := 0
			fp := func(p string) error {
				if p == point {
					if hits++; hits == 3 || hits == 1 && !strings.HasSuffix(p, "-chunk") {
						return injected
					}
				}
				return nil
			}
			ctx := context.Background()
			alice, bob := engine.MustParseAddress("alice/1"), engine.MustParseAddress("bob/1")
			run := func(addr string, f func(c *engine.Client) error) error {
				c, closeFn, err := w.open(addr, fp)
				if err != nil {
					t.Fatal(err)
				}
				defer closeFn()
				return f(c)
			}
			send := func(c *engine.Client) error { _, err := c.SendFile(ctx, bob, src, nil); return err }
			var id wire.LogicalID
			if strings.HasPrefix(point, "file-upload/") {
				if err := run("alice/1", send); !errors.Is(err, injected) {
					t.Fatalf("SendFile with %s failing: %v", point, err)
				}
			}
			if err := run("alice/1", func(c *engine.Client) (err error) { id, err = c.SendFile(ctx, bob, src, nil); return err }); err != nil {
				t.Fatalf("SendFile again: %v", err)
			}
			w.deliver(t, id)
			dir := t.TempDir()
			fetch := func(c *engine.Client) error { _, err := c.FetchFile(ctx, alice, id, dir, nil); return err }
			if strings.HasPrefix(point, "file-fetch/") {
				if err := run("bob/1", fetch); !errors.Is(err, injected) {
					t.Fatalf("FetchFile with %s failing: %v", point, err)
				}
			}
			if err := run("bob/1", fetch); err != nil {
				t.Fatalf("FetchFile again: %v", err)
			}
			if got := fileSum(t, filepath.Join(dir, "a.bin")); got != sum {
				t.Fatal("the saved file differs from the original")
			}
			if left, _ := os.ReadDir(dir); len(left) != 1 {
				t.Fatalf("destination holds %v, want one file", left)
			}
			w.with(t, "bob/1", func(c *engine.Client) {
				h, err := c.History(ctx, alice, 0, 10)
				if err != nil || len(h) != 1 || h[0].ID != id {
					t.Fatalf("bob's history %+v, %v; want the file once", h, err)
				}
			})
		})
	}
}

// TestSendGroupFile: one upload, the manifest as a group message of
// content file, fetched and committed like a one-to-one file.
func TestSendGroupFile(t *testing.T) {
	w := newFileWorld(t, t.TempDir())
	if err := w.do("alice/1", "groupcreate:friends:bob/1", nil); err != nil {
		t.Fatal(err)
	}
	if err := w.do("bob/1", "sync", nil); err != nil {
		t.Fatal(err)
	}
	src, sum := writeRandomFile(t, t.TempDir(), "g.dat", 3*testChunk, 9)
	ctx := context.Background()
	var id wire.LogicalID
	w.with(t, "alice/1", func(c *engine.Client) {
		g, err := groupNamed(ctx, c, "friends")
		if err != nil {
			t.Fatal(err)
		}
		if id, err = c.SendGroupFile(ctx, g.ID, src, nil); err != nil {
			t.Fatalf("SendGroupFile: %v", err)
		}
	})
	w.deliver(t, id)
	saved, err := w.fetch(id, t.TempDir())
	if err != nil || fileSum(t, saved) != sum {
		t.Fatalf("fetch of a group file: %s, %v", saved, err)
	}
}

// TestDiscardFileDropsPartial: declining a file removes what a fetch kept.
func TestDiscardFileDropsPartial(t *testing.T) {
	w := newFileWorld(t, t.TempDir())
	src, _ := writeRandomFile(t, t.TempDir(), "d.bin", 4*testChunk, 10)
	id := w.sendAndDeliver(t, src)
	h := &enginetest.Hostile{Stride: testChunk + wire.FileTagSize, At: 2, Mode: enginetest.CorruptFlip}
	w.wrap = func(b *enginetest.Blobs) engine.BlobRelay { h.Blobs = b; return h }
	h.Arm(1)
	if _, err := w.fetch(id, t.TempDir()); !errors.Is(err, engine.ErrChunkAuth) {
		t.Fatalf("fetch: %v", err)
	}
	parts := filepath.Join(w.root, "bob_1", "files", "*.part")
	if got, _ := filepath.Glob(parts); len(got) != 1 {
		t.Fatalf("partial downloads %v, want one", got)
	}
	w.with(t, "bob/1", func(c *engine.Client) {
		if _, err := c.Discard(context.Background(), engine.MustParseAddress("alice/1"), id, engine.DiscardRejected); err != nil {
			t.Fatal(err)
		}
	})
	if got, _ := filepath.Glob(parts); len(got) != 0 {
		t.Fatalf("a discarded file's partial download stays: %v", got)
	}
}
