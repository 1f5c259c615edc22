package main

import (
	"strings"
	"testing"

	"github.com/parley-chat/parley/engine"
)

// TestCLIStrangerCapped: a profile made by parley init holds a device it
// has not accepted to engine.MaxPendingPerStranger pending messages (the
// rest are reported as pending_cap and stay pending with the sender);
// request-settings --accept-all true lifts that, and the sender's retries
// deliver the rest. A profile made with --accept-all starts that way.
func TestCLIStrangerCapped(t *testing.T) {
	relay := startRelay(t)
	bob, mallory := newProfile(t, relay, "bob/1"), newProfile(t, relay, "mallory/1")
	if got := bob.jsonLines("request-settings"); len(got) != 1 || got[0]["accept_all"] != false {
		t.Fatalf("request-settings of a new profile: %v, want accept_all false", got)
	}
	const n = engine.MaxPendingPerStranger + 4
	for i := 0; i < n; i++ {
		mallory.ok("send", "bob/1", "spam")
	}
	capped := 0
	for i := 0; i < 10 && capped < n-engine.MaxPendingPerStranger; i++ {
		capped += kinds(bob.sync())["pending_cap"]
	}
	if got := len(bob.jsonLines("inbox")); got != engine.MaxPendingPerStranger || capped != n-engine.MaxPendingPerStranger {
		t.Fatalf("bob holds %d pending, %d reported pending_cap: want %d and %d", got, capped, engine.MaxPendingPerStranger, n-engine.MaxPendingPerStranger)
	}
	if got := bob.jsonLines("request-settings", "--accept-all", "true"); got[0]["accept_all"] != true {
		t.Fatalf("request-settings --accept-all true: %v", got)
	}
	mallory.ok("retry", "bob/1")
	for i := 0; i < 10 && len(bob.jsonLines("inbox")) < n; i++ {
		bob.sync()
	}
	if got := len(bob.jsonLines("inbox")); got != n {
		t.Fatalf("after --accept-all true and a retry, bob holds %d pending, want %d", got, n)
	}
	bot := &cliProfile{t: t, dir: t.TempDir() + "/bot", addr: "bot/1"}
	bot.ok("init", "--address", "bot/1", "--relay", relay.url, "--accept-all")
	if out := bot.ok("request-settings"); !strings.Contains(out, "accept_all=true") {
		t.Fatalf("request-settings of a profile made with --accept-all: %q", out)
	}
}
