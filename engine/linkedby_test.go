package engine_test

import (
	"context"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/store"
	"github.com/parley-chat/parley/wire"
)

// frozenVector reads the vector name of a frozen vector file.
func frozenVector(t *testing.T, file, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "testdata", "wire", file))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			out, err := hex.DecodeString(strings.TrimSpace(v))
			if err != nil {
				t.Fatal(err)
			}
			return out
		}
	}
	t.Fatalf("%s has no vector %s", file, name)
	return nil
}

// TestLinkedProfileKeepsTheLinker: a profile written from a package of
// version 3 keeps the device it names as its linker, across a reopen of
// the store; one written from a package of version 2 (an older build's,
// the frozen vector) still applies, and names none (device 1 is taken).
func TestLinkedProfileKeepsTheLinker(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		file, name string
		want       uint32
	}{
		{"link-package-v2.txt", "history", 0},
		{"link-package-v3.txt", "linker", 3},
	} {
		p, err := wire.DecodeLinkPackage(frozenVector(t, c.file, c.name))
		if err != nil {
			t.Fatalf("%s: %v", c.file, err)
		}
		dir := t.TempDir()
		st, err := store.Create(ctx, dir, passphrase, store.Options{KDF: cheapKDF})
		if err != nil {
			t.Fatal(err)
		}
		id, err := engine.NewIdentity(engine.SystemRandom{})
		if err != nil {
			t.Fatal(err)
		}
		none := engine.HistoryChoice{Mode: engine.HistoryNone}
		if _, err := engine.CreateLinkedProfile(ctx, st, "fake://", id, 2, p, none, nil, time.Unix(1000, 0)); err != nil {
			t.Fatalf("%s: %v", c.file, err)
		}
		if err := st.Close(); err != nil {
			t.Fatal(err)
		}
		st, err = store.Open(ctx, dir, passphrase, store.Options{})
		if err != nil {
			t.Fatal(err)
		}
		prof, err := st.Profile(ctx)
		if err != nil || prof.LinkedBy != c.want || prof.DeviceList == nil {
			t.Errorf("%s: linked by %d (%v), want %d", c.file, prof.LinkedBy, err, c.want)
		}
		if err := st.Close(); err != nil {
			t.Fatal(err)
		}
	}
}
