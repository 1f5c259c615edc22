package cli

import (
	"context"
	"strings"
	"testing"
)

// TestRelayBlobFlags: parley relay --help names the blob limits with their
// defaults, and a size it cannot read is a usage error naming its flag.
func TestRelayBlobFlags(t *testing.T) {
	env, stdout, _ := scriptedEnv()
	run(context.Background(), env, []string{"relay", "--help"})
	for _, want := range []string{
		"--blob-max-size", "(default 128MiB)", "--blob-address-bytes", "--blob-ip-bytes", "(default 256MiB)",
		"--blob-total-bytes", "--blob-lifetime", "--blob-idle-lifetime", "--blob-reserve-bytes",
		"--refusal-rate", "--refusal-burst", "--floods-per-ip", "--write-rate", "--ip-write-rate",
	} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("relay --help does not show %q", want)
		}
	}
	for _, args := range [][]string{{"--blob-max-size", "lots"}, {"--blob-total-bytes", "0"}, {"--blob-lifetime", "-1h"},
		{"--blob-idle-lifetime", "0s"}, {"--blob-reserve-bytes", "much"}} {
		env, _, stderr := scriptedEnv()
		if code := run(context.Background(), env, append([]string{"relay"}, args...)); code != exitUsage || !strings.Contains(stderr.String(), args[0]) {
			t.Errorf("relay %v: exit %d, %q; want a usage error naming the flag", args, code, stderr)
		}
	}
}
