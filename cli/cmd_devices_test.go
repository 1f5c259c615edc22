package cli

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestDevices: a new profile lists its one device, active, linked at init,
// marked as this one.
func TestDevices(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "alice")
	ctx := context.Background()
	env, _, stderr := scriptedEnv("secret", "secret")
	before := time.Now().Add(-time.Second)
	if code := run(ctx, env, []string{"init", "--profile", dir, "--address", "alice/1", "--relay", "ws://127.0.0.1:1"}); code != exitOK {
		t.Fatalf("init: exit %d, stderr %q", code, stderr)
	}
	env, stdout, stderr := scriptedEnv("secret")
	if code := run(ctx, env, []string{"devices", "--profile", dir, "--json"}); code != exitOK {
		t.Fatalf("devices: exit %d, stderr %q", code, stderr)
	}
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	if len(lines) != 1 {
		t.Fatalf("devices printed %q, want one line", stdout)
	}
	var row struct {
		Device   string `json:"device"`
		State    string `json:"state"`
		LinkedAt string `json:"linked_at"`
		This     bool   `json:"this"`
	}
	if err := json.Unmarshal([]byte(lines[0]), &row); err != nil {
		t.Fatal(err)
	}
	at, err := time.Parse(time.RFC3339Nano, row.LinkedAt)
	if row.Device != "alice/1" || row.State != "active" || !row.This || err != nil || at.Before(before) || at.After(time.Now()) {
		t.Fatalf("row %+v (%v): want alice/1, active, linked at init, this device", row, err)
	}
}
