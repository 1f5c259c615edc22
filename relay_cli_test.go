package main

import (
	"context"
	"strings"
	"testing"
)

// TestRelayHelpShowsDefaults: parley relay --help names the default of
// every limit it has a flag for.
func TestRelayHelpShowsDefaults(t *testing.T) {
	env, stdout, _ := scriptedEnv()
	run(context.Background(), env, []string{"relay", "--help"})
	for _, want := range []string{
		"--max-sockets-per-ip", "(default 80)", "--envelope-lifetime", "(default 168h0m0s)",
		"--total-bytes", "(default 1GiB)", "--ipv6-prefix", "(default 64)", "--log-level", "(default info)",
		"--reserve-bytes", "default a quarter of --total-bytes",
	} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("relay --help does not show %q:\n%s", want, stdout)
		}
	}
}

// TestRelayLogLevel: a log level the relay does not know is a usage error.
func TestRelayLogLevel(t *testing.T) {
	env, _, stderr := scriptedEnv()
	if code := run(context.Background(), env, []string{"relay", "--log-level", "chatty"}); code != exitUsage || !strings.Contains(stderr.String(), "--log-level") {
		t.Fatalf("relay --log-level chatty: exit %d, %q; want a usage error", code, stderr)
	}
}
