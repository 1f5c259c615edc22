package e2e

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCLIFileUsage: send takes exactly one body source, and fetch a
// directory that exists; both are usage errors (exit 2) otherwise.
func TestCLIFileUsage(t *testing.T) {
	relay := startRelay(t)
	alice := newProfile(t, relay, "alice/1")
	src := filepath.Join(t.TempDir(), "f.txt")
	if err := os.WriteFile(src, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"send", "bob/1", "text", "--file", src},
		{"send", "bob/1"},
		{"fetch", "bob/1", strings.Repeat("0", 32), "--to", filepath.Join(t.TempDir(), "missing")},
	} {
		if r := alice.run("", args...); r.code != 2 {
			t.Errorf("parley %s: exit %d (%q), want 2", strings.Join(args, " "), r.code, r.stderr)
		}
	}
	// A message that is not pending cannot be fetched (exit 1).
	if r := alice.run("", "fetch", "bob/1", strings.Repeat("0", 32)); r.code != 1 {
		t.Errorf("fetch of nothing: exit %d (%q), want 1", r.code, r.stderr)
	}
}

// TestCLIFileThroughRelay: alice sends a file, bob's sync shows it pending
// with its name, size and type, a commit is refused, and fetch saves the
// original bytes and commits, through a real relay and its blob store.
func TestCLIFileThroughRelay(t *testing.T) {
	relay := startRelay(t)
	alice := newProfile(t, relay, "alice/1")
	bob := newProfile(t, relay, "bob/1")
	data := make([]byte, 300<<10+17)
	rand.NewChaCha8([32]byte{9}).Read(data)
	src := filepath.Join(t.TempDir(), "notes.txt")
	if err := os.WriteFile(src, data, 0o600); err != nil {
		t.Fatal(err)
	}
	r := alice.run("", "send", "bob/1", "--file", src)
	if r.code != 0 {
		t.Fatalf("send --file: exit %d, %q", r.code, r.stderr)
	}
	id := strings.TrimSpace(r.stdout)
	recs := bob.sync()
	if len(recs) != 1 || recs[0]["kind"] != "delivery" || recs[0]["id"] != id {
		t.Fatalf("bob's sync: %v", recs)
	}
	file, _ := recs[0]["file"].(map[string]any)
	if file["name"] != "notes.txt" || file["size"] != float64(len(data)) || !strings.HasPrefix(file["type"].(string), "text/plain") {
		t.Fatalf("file field %v", recs[0]["file"])
	}
	if r := bob.run("", "commit", "alice/1", id); r.code != 1 || !strings.Contains(r.stderr, "file_not_fetched") {
		t.Fatalf("commit of an unfetched file: exit %d %q", r.code, r.stderr)
	}
	dir := t.TempDir()
	bob.ok("fetch", "alice/1", id, "--to", dir)
	got, err := os.ReadFile(filepath.Join(dir, "notes.txt"))
	if err != nil || sha256.Sum256(got) != sha256.Sum256(data) || !bytes.Equal(got, data) {
		t.Fatalf("saved file differs from the original (%v)", err)
	}
	if in := bob.jsonLines("inbox"); len(in) != 0 {
		t.Fatalf("bob still has %v pending after the fetch", in)
	}

	// A second fetch of the file says where it is (exit 0), by its full ID
	// or as the chat shows it; once the file is gone, it says so, in one
	// line naming it.
	for _, ref := range []string{id, id[:8]} {
		again := bob.jsonLines("fetch", "alice/1", ref, "--to", dir)
		if len(again) != 1 || again[0]["saved"] != filepath.Join(dir, "notes.txt") || again[0]["id"] != id || again[0]["fetched_before"] != true {
			t.Fatalf("a second fetch of %s printed %v, want where the file was saved", ref, again)
		}
	}
	if err := os.Remove(filepath.Join(dir, "notes.txt")); err != nil {
		t.Fatal(err)
	}
	r = bob.run("", "fetch", "alice/1", id[:8], "--to", dir)
	if r.code != 1 || !strings.Contains(r.stderr, "file notes.txt from alice/1 was fetched and committed on") || strings.Count(r.stderr, "\n") != 1 {
		t.Fatalf("a fetch of a file fetched and then removed: exit %d %q, want 1 and one line naming it", r.code, r.stderr)
	}
}

// TestCLIFileFromAStranger: a file from a device bob has not accepted is a
// request whose preview names the file (never the manifest and its key),
// and bob fetches it once he accepts.
func TestCLIFileFromAStranger(t *testing.T) {
	relay := startRelay(t)
	bob := newProfile(t, relay, "bob/1")
	mallory := newStranger(t, relay, "mallory/1")
	data := []byte("a short file from someone bob does not know\n")
	src := filepath.Join(t.TempDir(), "hello.txt")
	if err := os.WriteFile(src, data, 0o600); err != nil {
		t.Fatal(err)
	}
	id := strings.TrimSpace(mallory.ok("send", "bob/1", "--file", src))
	if recs := bob.sync(); len(recs) != 1 || recs[0]["kind"] != "request" {
		t.Fatalf("bob's sync: %v, want one request", recs)
	}
	reqs := bob.jsonLines("requests")
	if len(reqs) != 1 || reqs[0]["preview"] != fmt.Sprintf("[file] hello.txt (%d bytes, text/plain; charset=utf-8)", len(data)) {
		t.Fatalf("bob's requests: %v, want one whose preview names the file", reqs)
	}
	bob.ok("accept", "mallory/1")
	dir := t.TempDir()
	bob.ok("fetch", "mallory/1", id, "--to", dir)
	if got, err := os.ReadFile(filepath.Join(dir, "hello.txt")); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("saved %q, %v; want the original", got, err)
	}
}
