package profile

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/store"
)

var cheap = store.Options{KDF: store.KDFParams{Time: 1, MemoryKiB: 8, Threads: 1}}

// TestOpenErrors: every way an open fails is one line naming its cause and
// matches the engine error under it.
func TestOpenErrors(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "alice")
	p, err := Create(ctx, dir, engine.MustParseAddress("alice/1"), "ws://127.0.0.1:1", Options{Passphrase: []byte("right"), Store: cheap})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Open(ctx, dir, Options{Passphrase: []byte("right")}); !errors.Is(err, engine.ErrProfileOpen) || !strings.Contains(err.Error(), "open in another process") {
		t.Fatalf("second open: %v", err)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		dir  string
		pass string
		want error
		text string
	}{
		{"wrong passphrase", dir, "wrong", engine.ErrWrongPassphrase, "wrong passphrase for profile"},
		{"no profile", t.TempDir(), "right", engine.ErrNoProfile, "parley init"},
	} {
		_, err := Open(ctx, tc.dir, Options{Passphrase: []byte(tc.pass)})
		if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.text) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: got %v, want one line with %q matching %v", tc.name, err, tc.text, tc.want)
		}
	}
	if _, err := Create(ctx, dir, engine.MustParseAddress("alice/1"), "ws://127.0.0.1:1", Options{Passphrase: []byte("right"), Store: cheap}); !errors.Is(err, engine.ErrProfileExists) {
		t.Fatalf("create over a profile: %v", err)
	}
}

// TestOpenOffline: a profile opens without its relay, and a call that needs
// the relay fails as unreachable, connecting only then.
func TestOpenOffline(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "bob")
	p, err := Create(ctx, dir, engine.MustParseAddress("bob/1"), "ws://127.0.0.1:1", Options{Passphrase: []byte("x"), Store: cheap})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if p.RelayState().Conn.String() != "disconnected" {
		t.Fatalf("relay state before first use: %v", p.RelayState().Conn)
	}
	_, err = p.Client.Send(ctx, engine.MustParseAddress("alice/1"), []byte("hi"))
	if !errors.Is(err, engine.ErrRelayUnreachable) {
		t.Fatalf("send with the relay down: %v, want relay unreachable", err)
	}
}
