package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/parley-chat/parley/transport"
)

func init() {
	register(&command{name: "relay", args: "[--listen ADDR] [--data DIR]", summary: "run a relay; the first line on stdout is \"listening on ws://HOST:PORT\"", run: cmdRelay})
}

func cmdRelay(ctx context.Context, env *cliEnv, args []string) error {
	f := newFlags(commands["relay"], env, false)
	listen := f.String("listen", "127.0.0.1:0", "address to listen on (port 0 picks a free port)")
	data := f.String("data", "", "keep mailboxes, bundles and registrations in SQLite in this directory (default: memory)")
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
	srv, err := transport.NewServer(transport.ServerConfig{DataDir: *data, AllowReregister: *rereg, FaultDrop: *drop, FaultDup: *dup, FaultSeed: *seed})
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
