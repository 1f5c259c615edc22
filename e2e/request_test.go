package e2e

import (
	"strings"
	"testing"

	"github.com/parley-chat/parley/engine"
)

// TestCLIStrangerCapped: a profile made by parley init holds a device it
// has not accepted to engine.MaxPendingPerStranger pending messages, all in
// one message request (the rest are reported as pending_cap and stay
// pending with the sender); request-settings --accept-all true lifts that,
// the sender's retries deliver the rest, and accepting the request makes
// them all pending deliveries. A profile made with --accept-all starts that
// way.
func TestCLIStrangerCapped(t *testing.T) {
	t.Parallel() // waits on child processes most of the time; see TestTerminalScenarios
	relay := startRelay(t)
	bob, mallory := newStranger(t, relay, "bob/1"), newStranger(t, relay, "mallory/1")
	if got := bob.jsonLines("request-settings"); len(got) != 1 || got[0]["accept_all"] != false {
		t.Fatalf("request-settings of a new profile: %v, want accept_all false", got)
	}
	const n = engine.MaxPendingPerStranger + 4
	for i := 0; i < n; i++ {
		mallory.ok("send", "bob/1", "spam")
	}
	capped, requested := 0, 0
	for i := 0; i < 10 && capped < n-engine.MaxPendingPerStranger; i++ {
		k := kinds(bob.sync())
		capped += k["pending_cap"]
		requested += k["request"]
	}
	reqs := bob.jsonLines("requests")
	if len(reqs) != 1 || reqs[0]["count"] != float64(engine.MaxPendingPerStranger) || requested != engine.MaxPendingPerStranger || capped != n-engine.MaxPendingPerStranger {
		t.Fatalf("bob holds requests %v after %d reported request and %d pending_cap: want one of %d and %d pending_cap",
			reqs, requested, capped, engine.MaxPendingPerStranger, n-engine.MaxPendingPerStranger)
	}
	if got := len(bob.jsonLines("inbox")); got != 0 {
		t.Fatalf("bob's inbox lists %d messages of a request, want none", got)
	}
	if got := bob.jsonLines("request-settings", "--accept-all", "true"); got[0]["accept_all"] != true {
		t.Fatalf("request-settings --accept-all true: %v", got)
	}
	mallory.ok("retry", "bob/1")
	for i := 0; i < 10 && len(bob.jsonLines("inbox")) < n-engine.MaxPendingPerStranger; i++ {
		bob.sync()
	}
	bob.ok("accept", "mallory/1")
	if got := len(bob.jsonLines("inbox")); got != n {
		t.Fatalf("after --accept-all true, a retry and accept, bob holds %d pending, want %d", got, n)
	}
	bot := &cliProfile{t: t, dir: t.TempDir() + "/bot", addr: "bot/1"}
	bot.ok("init", "--address", "bot/1", "--relay", relay.url, "--accept-all")
	if out := bot.ok("request-settings"); !strings.Contains(out, "accept_all=true") {
		t.Fatalf("request-settings of a profile made with --accept-all: %q", out)
	}
}

// TestCLIRequests: a stranger's first message is a request (sync reports
// kind request, never a delivery, and inbox does not list it); the sender
// gets no acknowledgement until bob accepts; a rejected and blocked sender
// reaches bob no more.
func TestCLIRequests(t *testing.T) {
	relay := startRelay(t)
	bob := newStranger(t, relay, "bob/1")
	alice, carol := newStranger(t, relay, "alice/1"), newStranger(t, relay, "carol/1")
	bob.sync() // publishes bob's bundle
	alice.ok("send", "bob/1", "hi bob \x1b[2J\x1b]52;c;eA==\a")
	got := bob.sync()
	if len(got) != 1 || got[0]["kind"] != "request" || got[0]["sender"] != "alice/1" || got[0]["body"] != nil {
		t.Fatalf("bob's sync reported %v, want one request from alice/1 without its body", got)
	}
	if in := bob.jsonLines("inbox"); len(in) != 0 {
		t.Fatalf("bob's inbox lists %v, want no request", in)
	}
	reqs := bob.jsonLines("requests")
	if len(reqs) != 1 || reqs[0]["sender"] != "alice/1" || reqs[0]["count"] != float64(1) || reqs[0]["first_seen"] == nil {
		t.Fatalf("requests %v, want alice/1 with one message", reqs)
	}
	if p := reqs[0]["preview"].(string); !strings.HasPrefix(p, "hi bob ") || strings.ContainsAny(p, "\x1b\a") {
		t.Fatalf("preview %q, want the body with its controls escaped", p)
	}
	if out := bob.ok("requests"); strings.ContainsAny(out, "\x1b\a") || !strings.Contains(out, "sender=alice/1") {
		t.Fatalf("requests in text form: %q", out)
	}
	// Its message is not pending until bob accepts: commit says so, by
	// the full ID or as the chat shows it.
	reqID := got[0]["id"].(string)
	for _, c := range []struct{ ref, want string }{
		{reqID[:8], "none of the pending messages from alice/1 has an ID starting with " + reqID[:8] + ": alice/1 is not accepted, and its 1 message waits as a message request (\"parley accept alice/1\" first)"},
		{reqID, "message " + reqID + " from alice/1 is a message request: \"parley accept alice/1\" first"},
	} {
		if r := bob.run("", "commit", "alice/1", c.ref); r.code != 1 || r.stderr != "parley commit: "+c.want+"\n" {
			t.Fatalf("commit of a request's message by %s: exit %d %q, want 1 and %q", c.ref, r.code, r.stderr, c.want)
		}
	}
	// Nothing went back to alice: her message stays pending.
	if k := kinds(alice.sync()); k["acknowledgement"] != 0 {
		t.Fatalf("alice received %v before bob accepted", k)
	}
	if out := alice.jsonLines("outbox"); len(out) != 1 {
		t.Fatalf("alice's outbox %v, want her message pending", out)
	}
	if acc := bob.jsonLines("accept", "alice/1"); len(acc) != 1 || acc[0]["count"] != float64(1) {
		t.Fatalf("accept printed %v", acc)
	}
	bob.commitAll()
	if k := kinds(alice.sync()); k["acknowledgement"] != 1 {
		t.Fatalf("alice received %v after bob accepted and committed, want the acknowledgement", k)
	}
	if out := alice.jsonLines("outbox"); len(out) != 0 {
		t.Fatalf("alice's outbox %v after the acknowledgement", out)
	}

	carol.ok("send", "bob/1", "buy now")
	if k := kinds(bob.sync()); k["request"] != 1 {
		t.Fatalf("bob's sync reported %v, want carol's request", k)
	}
	if r := bob.jsonLines("reject", "carol/1", "--block"); len(r) != 1 || r[0]["blocked"] != true {
		t.Fatalf("reject --block printed %v", r)
	}
	if reqs := bob.jsonLines("requests"); len(reqs) != 0 {
		t.Fatalf("requests after reject: %v", reqs)
	}
	carol.ok("send", "bob/1", "again")
	if k := kinds(bob.sync()); k["request"]+k["delivery"] != 0 {
		t.Fatalf("a blocked sender reached bob: %v", k)
	}
	if reqs, in := bob.jsonLines("requests"), bob.jsonLines("inbox"); len(reqs)+len(in) != 0 {
		t.Fatalf("after a blocked sender wrote: requests %v, inbox %v", reqs, in)
	}
	if r := bob.jsonLines("unblock", "carol/1"); len(r) != 1 || r[0]["blocked"] != false {
		t.Fatalf("unblock printed %v", r)
	}
	if r := bob.run("", "unblock", "carol/1"); r.code == 0 {
		t.Fatalf("unblock of a device not blocked: exit 0 %q", r.stdout)
	}
	if r := bob.run("", "reject", "alice/1"); r.code == 0 {
		t.Fatalf("reject without a request: exit 0 %q", r.stdout)
	}
}
