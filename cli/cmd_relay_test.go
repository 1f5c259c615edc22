package cli

import (
	"context"
	"os"
	"path/filepath"
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
		"--stranger-envelopes", "default half of --mailbox-envelopes", "--stranger-ip-envelopes", "default a quarter of --stranger-envelopes",
		"--stranger-bytes", "--stranger-ip-bytes", "--accepted-peers", "--blocked-senders", "--accepted-lifetime", "(default 2160h0m0s)",
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

// TestPlaintextRelayRefused (finding 8): init refuses a ws:// relay that is
// not loopback unless --insecure-relay accepts it (a warning then, and the
// acceptance is recorded in the profile); a profile whose plaintext relay
// was never accepted (made before the rule) is warned about, not refused.
func TestPlaintextRelayRefused(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "alice")
	const remote = "ws://relay.invalid:1"

	env, _, stderr := scriptedEnv("pw", "pw")
	if code := run(ctx, env, []string{"init", "--profile", dir, "--address", "alice/1", "--relay", remote}); code != exitUsage || !strings.Contains(stderr.String(), "--insecure-relay") {
		t.Fatalf("init with %s: exit %d, %q; want a usage error naming --insecure-relay", remote, code, stderr)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("a refused init left %s behind (%v)", dir, err)
	}

	env, _, stderr = scriptedEnv("pw", "pw")
	if code := run(ctx, env, []string{"init", "--profile", dir, "--address", "alice/1", "--relay", remote, "--insecure-relay"}); code != exitOK {
		t.Fatalf("init --insecure-relay: exit %d, %q", code, stderr)
	}
	if !strings.Contains(stderr.String(), "warning") {
		t.Fatalf("init --insecure-relay does not warn: %q", stderr)
	}
	env, _, stderr = scriptedEnv("pw")
	if code := run(ctx, env, []string{"relay-settings", "--profile", dir}); code != exitOK || strings.Contains(stderr.String(), "warning") {
		t.Fatalf("relay-settings of an accepted plaintext relay: exit %d, %q; want no warning", code, stderr)
	}

	// As if made before the rule: the acceptance is not recorded.
	if err := os.Remove(filepath.Join(dir, "insecure-relay")); err != nil {
		t.Fatal(err)
	}
	env, _, stderr = scriptedEnv("pw")
	if code := run(ctx, env, []string{"relay-settings", "--profile", dir}); code != exitOK || !strings.Contains(stderr.String(), "warning") {
		t.Fatalf("relay-settings of an older plaintext profile: exit %d, %q; want a warning and exit 0", code, stderr)
	}
	env, _, stderr = scriptedEnv("pw")
	if code := run(ctx, env, []string{"relay-settings", "--profile", dir, "--url", "ws://other.invalid:1"}); code != exitUsage {
		t.Fatalf("relay-settings --url to another plaintext relay: exit %d, %q; want a usage error", code, stderr)
	}
}
