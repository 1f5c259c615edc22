package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/adrg/xdg"

	"github.com/parley-chat/parley/transport"
)

func init() {
	register(&command{name: "relay", args: "[--listen ADDR] [--data DIR]", summary: "run a relay; the first line on stdout is \"listening on ws://HOST:PORT\"", run: cmdRelay})
}

// defaultRelayIDFile is where a relay without --data keeps its ID.
func defaultRelayIDFile() string {
	return filepath.Join(xdg.DataHome, "parley", "relay-id")
}

// loadRelayID reads the relay ID kept at path (64 hex digits), making a
// random one there (0600, in a 0700 directory) at the first start: clients
// pin the ID they first met, so a restarted relay must present the same.
func loadRelayID(path string) ([32]byte, error) {
	var id [32]byte
	b, err := os.ReadFile(path)
	switch {
	case err == nil:
		raw, err := hex.DecodeString(strings.TrimSpace(string(b)))
		if err != nil || len(raw) != len(id) {
			return id, fmt.Errorf("relay ID file %s: want 64 hex digits", path)
		}
		copy(id[:], raw)
		return id, nil
	case !errors.Is(err, fs.ErrNotExist):
		return id, fmt.Errorf("relay ID file: %w", err)
	}
	if _, err := rand.Read(id[:]); err != nil {
		return id, err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return id, fmt.Errorf("relay ID file: %w", err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return id, fmt.Errorf("relay ID file: %w", err)
	}
	if _, err := fmt.Fprintln(f, hex.EncodeToString(id[:])); err != nil {
		f.Close()
		return id, fmt.Errorf("relay ID file: %w", err)
	}
	if err := f.Close(); err != nil {
		return id, fmt.Errorf("relay ID file: %w", err)
	}
	return id, nil
}

func cmdRelay(ctx context.Context, env *cliEnv, args []string) error {
	f := newFlags(commands["relay"], env, false)
	listen := f.String("listen", "127.0.0.1:0", "address to listen on (port 0 picks a free port)")
	data := f.String("data", "", "keep mailboxes, bundles and registrations in SQLite in this directory (default: memory)")
	idFile := f.String("id-file", "", "keep the relay's ID in this file, made at the first start (default: in --data, else "+defaultRelayIDFile()+")")
	rereg := f.Bool("allow-reregister", false, "let a new identity key take over a registered address")
	drop := f.Float64("fault-drop", 0, "drop accepted envelopes with this probability (tests and demos)")
	dup := f.Float64("fault-dup", 0, "duplicate accepted envelopes with this probability (tests and demos)")
	seed := f.Uint64("fault-seed", 0, "seed of the fault injection (0: random)")
	if _, err := f.parse(env, args, 0, 0); err != nil {
		return err
	}
	if *drop < 0 || *drop > 1 || *dup < 0 || *dup > 1 {
		return usagef("--fault-drop and --fault-dup must be between 0 and 1")
	}
	var relayID [32]byte
	if *data == "" || *idFile != "" {
		path := *idFile
		if path == "" {
			path = defaultRelayIDFile()
		}
		var err error
		if relayID, err = loadRelayID(path); err != nil {
			return err
		}
	}
	srv, err := transport.NewServer(transport.ServerConfig{DataDir: *data, RelayID: relayID, AllowReregister: *rereg, FaultDrop: *drop, FaultDup: *dup, FaultSeed: *seed})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", *listen, err)
	}
	fmt.Fprintf(env.stdout, "listening on ws://%s\n", ln.Addr())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	select {
	case err := <-done:
		if errors.Is(err, http.ErrServerClosed) {
			return nil
		}
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		return fmt.Errorf("stop relay: %w", err)
	}
	<-done
	return nil
}
