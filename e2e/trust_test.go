package e2e

import (
	"strings"
	"testing"
)

// TestCLITrust: parley trust PEER shows the identity the relay serves (its
// fingerprint and safety number) and pins nothing (exit 1) unless told:
// --fingerprint pins the key only if it is the one with that fingerprint
// (another is refused, fingerprint_mismatch, exit 1), --yes pins what this
// run showed. Both at once, or a malformed fingerprint, are usage errors.
func TestCLITrust(t *testing.T) {
	relay := startRelay(t)
	alice, bob := newProfile(t, relay, "alice/1"), newProfile(t, relay, "bob/1")
	alice.ok("send", "bob/1", "hello")
	bob.sync()
	bob.commitAll()
	alice.sync()
	fp := bob.jsonLines("identity")[0]["fingerprint"].(string)

	r := alice.run("", "trust", "--json", "bob/1")
	if r.code != 1 || !strings.Contains(r.stderr, "not pinned") || !strings.Contains(r.stdout, fp) || !strings.Contains(r.stdout, `"pinned":false`) {
		t.Fatalf("trust without --yes or --fingerprint: exit %d, stdout %q, stderr %q; want 1, the fingerprint shown, not pinned", r.code, r.stdout, r.stderr)
	}
	other := "0000" + fp[4:]
	if r := alice.run("", "trust", "--fingerprint", other, "bob/1"); r.code != 1 || !strings.Contains(r.stderr, "fingerprint_mismatch") && !strings.Contains(r.stderr, "not the identity shown") {
		t.Fatalf("trust with another fingerprint: exit %d %q, want 1 and the mismatch", r.code, r.stderr)
	}
	for _, bad := range [][]string{{"--fingerprint", "12345"}, {"--yes", "--fingerprint", fp}} {
		if r := alice.run("", append(append([]string{"trust"}, bad...), "bob/1")...); r.code != 2 {
			t.Fatalf("trust %v: exit %d %q, want 2", bad, r.code, r.stderr)
		}
	}
	if got := alice.jsonLines("trust", "--fingerprint", strings.ReplaceAll(fp, " ", ""), "bob/1"); len(got) != 1 || got[0]["pinned"] != true || got[0]["fingerprint"] != fp {
		t.Fatalf("trust --fingerprint: %v, want pinned with %s", got, fp)
	}
	got := alice.jsonLines("trust", "--yes", "bob/1")
	if len(got) != 1 || got[0]["pinned"] != true || got[0]["fingerprint"] != fp {
		t.Fatalf("trust --yes: %v, want pinned with %s", got, fp)
	}
	// The number a pin prints is the one safety-number prints, with its
	// basis, so that the two can be compared with what bob reads.
	sn := alice.jsonLines("safety-number", "bob/1")
	if len(sn) != 1 || got[0]["safety_number"] != sn[0]["safety_number"] || got[0]["basis"] != sn[0]["basis"] || got[0]["basis"] == nil {
		t.Fatalf("trust --yes printed %v, safety-number %v: want the same number and basis", got, sn)
	}
	// The conversation goes on, on a fresh session that names the one it
	// replaces: bob, who still holds that one, takes it at once.
	alice.ok("send", "bob/1", "after trust")
	bob.sync()
	bob.commitAll()
	if got := historyBodies(bob, "alice/1", "in"); len(got) != 2 || got[1] != "after trust" {
		t.Fatalf("bob's history %q, want both messages", got)
	}
}
