// Command parley is an end-to-end encrypted chat for the terminal whose
// reliability you can see: every message in flight is listed until the peer's
// application finalized it, and nothing is lost across crashes, lost
// envelopes, lost acknowledgements or a simultaneous session start.
//
// Run "parley help" for the commands; they live in package cli.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/parley-chat/parley/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Main(ctx, os.Args[1:])
	stop()
	os.Exit(code)
}
