package cli

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// TestBenchHistory: parley bench --history runs a backup and a restore of
// a small history, and a link with that history, and reports them.
func TestBenchHistory(t *testing.T) {
	env, stdout, stderr := scriptedEnv()
	if code := run(context.Background(), env, []string{"bench", "--history", "30", "--json"}); code != exitOK {
		t.Fatalf("bench --history: exit %d, stderr %q", code, stderr)
	}
	var r struct {
		Messages     int     `json:"messages"`
		ArchiveBytes int64   `json:"archive_bytes"`
		ImportSecs   float64 `json:"import_seconds"`
		LinkBytes    int64   `json:"link_archive_bytes"`
		LinkImport   float64 `json:"link_import_seconds"`
		LinkDownload float64 `json:"link_download_seconds"`
	}
	if err := json.Unmarshal([]byte(strings.TrimSpace(stdout.String())), &r); err != nil || r.Messages != 30 || r.ArchiveBytes == 0 || r.ImportSecs <= 0 ||
		r.LinkBytes == 0 || r.LinkImport <= 0 || r.LinkDownload <= 0 {
		t.Fatalf("bench --history printed %q (%v)", stdout, err)
	}
}

// TestBackupRefusals: backup wants --to and one backup passphrase typed
// the same twice; restore wants --relay.
func TestBackupRefusals(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "alice")
	env, _, stderr := scriptedEnv("secret", "secret")
	if code := run(ctx, env, []string{"init", "--profile", dir, "--address", "alice/1", "--relay", "ws://127.0.0.1:1", "--kdf-memory", "1", "--kdf-passes", "1"}); code != exitOK {
		t.Fatalf("init: exit %d, stderr %q", code, stderr)
	}
	env, _, stderr = scriptedEnv("secret")
	if code := run(ctx, env, []string{"backup", "--profile", dir}); code != exitUsage {
		t.Fatalf("backup without --to: exit %d, stderr %q", code, stderr)
	}
	env, _, stderr = scriptedEnv("secret", "one", "two")
	if code := run(ctx, env, []string{"backup", "--profile", dir, "--to", filepath.Join(t.TempDir(), "b")}); code != exitError || !strings.Contains(stderr.String(), "differ") {
		t.Fatalf("backup with two different passphrases: exit %d, stderr %q", code, stderr)
	}
	env, _, stderr = scriptedEnv()
	if code := run(ctx, env, []string{"restore", "x.parley", "--profile", dir}); code != exitUsage {
		t.Fatalf("restore without --relay: exit %d, stderr %q", code, stderr)
	}
}
