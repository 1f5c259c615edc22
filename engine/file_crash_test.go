package engine_test

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/engine/enginetest"
	"github.com/parley-chat/parley/wire"
)

// countingBlobs counts the ciphertext bytes put and asked for, to see
// where a transfer resumed.
type countingBlobs struct {
	*enginetest.Blobs
	puts, gets atomic.Int64
}

func (c *countingBlobs) PutBlob(ctx context.Context, id wire.BlobID, off int64, data []byte) error {
	c.puts.Add(int64(len(data)))
	return c.Blobs.PutBlob(ctx, id, off, data)
}

func (c *countingBlobs) GetBlob(ctx context.Context, id wire.BlobID, off int64, n int) ([]byte, error) {
	c.gets.Add(int64(n))
	return c.Blobs.GetBlob(ctx, id, off, n)
}

// TestFileChild is the child process of TestFileTransferSurvivesSIGKILL:
// it runs one transfer and kills itself with SIGKILL at the nth time the
// named failpoint is reached.
func TestFileChild(t *testing.T) {
	root := os.Getenv("PARLEY_FILE_ROOT")
	if root == "" {
		t.Skip("only runs as a child of TestFileTransferSurvivesSIGKILL")
	}
	point, nth, _ := strings.Cut(os.Getenv("PARLEY_FILE_KILL"), "#")
	n, _ := strconv.Atoi(nth)
	hook := func(p string) error {
		if p == point {
			if n--; n == 0 {
				syscall.Kill(os.Getpid(), syscall.SIGKILL)
				select {}
			}
		}
		return nil
	}
	w := fileWorld{fpWorld: fpWorld{root: root}}
	err := fileOp(w, os.Getenv("PARLEY_FILE_OP"), hook)
	fmt.Fprintln(os.Stderr, "child was not killed:", err)
	os.Exit(1)
}

// fileOp runs "send:PATH" as alice or "fetch:IDHEX:DIR" as bob.
func fileOp(w fileWorld, op string, fp engine.Failpoint) error {
	ctx := context.Background()
	name, arg, _ := strings.Cut(op, ":")
	addr := map[string]string{"send": "alice/1", "fetch": "bob/1"}[name]
	c, closeFn, err := w.open(addr, fp)
	if err != nil {
		return err
	}
	defer closeFn()
	if name == "send" {
		_, err = c.SendFile(ctx, engine.MustParseAddress("bob/1"), arg, nil)
		return err
	}
	idHex, dir, _ := strings.Cut(arg, ":")
	var id wire.LogicalID
	if _, err := hex.Decode(id[:], []byte(idHex)); err != nil {
		return err
	}
	_, err = c.FetchFile(ctx, engine.MustParseAddress("alice/1"), id, dir, nil)
	return err
}

// killChild runs op in a child that SIGKILLs itself at kill ("point#n").
func killChild(t *testing.T, w fileWorld, op, kill string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestFileChild$")
	cmd.Env = append(os.Environ(), "PARLEY_FILE_ROOT="+w.root, "PARLEY_FILE_OP="+op, "PARLEY_FILE_KILL="+kill)
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		t.Fatalf("the child of %s did not die at %s: %v %s", op, kill, err, out)
	}
	if ws, ok := ee.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("the child of %s ended with %v, not SIGKILL at %s: %s", op, err, kill, out)
	}
}

// noPlaintextAtRest fails when any file of the profile holds 64 bytes of
// the original in clear (the partial download is ciphertext; the key is
// only in the sealed manifest).
func noPlaintextAtRest(t *testing.T, profile, src string) {
	t.Helper()
	orig, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	err = filepath.WalkDir(profile, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for _, off := range []int{0, len(orig) / 2, len(orig) - 64} {
			if bytes.Contains(b, orig[off:off+64]) {
				t.Errorf("%s holds the file's bytes at %d in clear", p, off)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestFileTransferSurvivesSIGKILL kills the sender mid-upload and the
// receiver mid-download (real processes, SIGKILL at a chunk boundary or
// around the manifest and the commit); each resumes from the last durable
// chunk, the manifest arrives once, and the saved file's SHA-256 is the
// original's.
func TestFileTransferSurvivesSIGKILL(t *testing.T) {
	if testing.Short() {
		t.Skip("kills child processes")
	}
	// Three windows to put, five to fetch.
	const chunks = 4*fetchWindow + 100
	const sealed = testChunk + wire.FileTagSize
	const cipher = chunks*sealed - 100 // the last chunk 100 bytes short
	for _, tt := range []struct {
		name, upKill, downKill string
		upDone, downDone       int64 // ciphertext bytes kept at the kill
	}{
		{"mid-chunks", "file-upload/after-chunk#1", "file-fetch/after-chunk#300", putWindow, 300 * sealed},
		{"before a chunk", "file-upload/before-chunk#1", "file-fetch/before-chunk#1", 0, 0},
		{"around manifest and commit", "file-upload/after-manifest#1", "file-fetch/before-commit#1", cipher, cipher},
	} {
		t.Run(tt.name, func(t *testing.T) {
			w := newFileWorld(t, t.TempDir())
			src, sum := writeRandomFile(t, t.TempDir(), "video.mp4", chunks*testChunk-100, 7)
			killChild(t, w, "send:"+src, tt.upKill)

			cb := &countingBlobs{}
			w.wrap = func(b *enginetest.Blobs) engine.BlobRelay { cb.Blobs = b; return cb }
			var id wire.LogicalID
			w.with(t, "alice/1", func(c *engine.Client) {
				var err error
				if id, err = c.SendFile(context.Background(), engine.MustParseAddress("bob/1"), src, nil); err != nil {
					t.Fatalf("resumed SendFile: %v", err)
				}
			})
			if got := cb.puts.Load(); got != cipher-tt.upDone {
				t.Fatalf("the resumed upload put %d bytes, want %d", got, cipher-tt.upDone)
			}
			w.deliver(t, id)

			dir := t.TempDir()
			killChild(t, w, "fetch:"+hex.EncodeToString(id[:])+":"+dir, tt.downKill)
			if tt.downDone < chunks {
				if left, _ := os.ReadDir(dir); len(left) != 0 {
					t.Fatalf("a killed fetch left %v in the destination", left)
				}
			}
			noPlaintextAtRest(t, w.profile("bob/1"), src)
			saved, err := w.fetch(id, dir)
			if err != nil {
				t.Fatalf("resumed fetch: %v", err)
			}
			if got := cb.gets.Load(); got != cipher-tt.downDone {
				t.Fatalf("the resumed download asked for %d bytes, want %d", got, cipher-tt.downDone)
			}
			if fileSum(t, saved) != sum || filepath.Base(saved) != "video.mp4" {
				t.Fatalf("saved %s does not match the original", saved)
			}
			if left, _ := os.ReadDir(dir); len(left) != 1 {
				t.Fatalf("destination holds %v, want the one file", left)
			}
			w.with(t, "bob/1", func(c *engine.Client) {
				h, err := c.History(context.Background(), engine.MustParseAddress("alice/1"), 0, 10)
				if err != nil || len(h) != 1 || h[0].ID != id {
					t.Fatalf("bob's history %+v, %v; want the file once", h, err)
				}
			})
		})
	}
}
