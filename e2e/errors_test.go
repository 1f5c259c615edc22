package e2e

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// errorCase is one bad command line: who runs it, what it is, and what the
// person must read: the exit code and words of the one line naming the
// cause and the thing (file, peer, group...).
type errorCase struct {
	name string
	who  *cliProfile
	env  []string // more environment, such as a wrong passphrase
	args []string
	code int
	want string
}

// TestCLIErrorTable runs every command's common bad inputs (a missing file,
// an unknown peer or group, a bad relay URL, a wrong passphrase, a bad ID,
// a bad --limit or --after, the profile open elsewhere, the relay down) and
// checks what the person reads: the exit code, one line "parley COMMAND:
// cause" (a usage error adds the usage line under it), the cause's words,
// no word said twice in a row nor a doubled prefix ("send: send file:",
// "error:"), and nothing on stdout but a kept-pending message's ID, once.
func TestCLIErrorTable(t *testing.T) {
	relay := startRelay(t)
	alice, bob := newProfile(t, relay, "alice/1"), newProfile(t, relay, "bob/1")
	alice.ok("send", "bob/1", "hello")
	bob.sync()
	fresh := &cliProfile{t: t, dir: filepath.Join(t.TempDir(), "fresh"), addr: "fresh/1"}

	// A profile whose relay is down (its port closed): what needs the relay
	// stays pending or fails naming it.
	down := &relayProc{url: "ws://127.0.0.1:" + freePort(t)}
	offline := newStranger(t, down, "offline/1")

	// A profile another process holds (a long sync, as a running parley tui).
	held := newProfile(t, relay, "held/1")
	holdProfile(t, held)

	file := filepath.Join(t.TempDir(), "note.txt")
	if err := os.WriteFile(file, []byte("a note"), 0o600); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(t.TempDir(), "missing")
	id := strings.Repeat("ab", 16)
	wrong := []string{"PARLEY_PASSPHRASE=wrong"}

	cases := []errorCase{
		// A file that is not there.
		{"send a missing file", alice, nil, []string{"send", "bob/1", "--file", missing}, 1, "cannot read " + missing + ": no such file or directory"},
		{"send a directory", alice, nil, []string{"send", "bob/1", "--file", t.TempDir()}, 1, "is not a regular file"},
		{"missing passphrase file", alice, nil, []string{"inbox", "--passphrase-file", missing}, 1, "cannot read the passphrase file " + missing},
		{"missing CA file", alice, nil, []string{"relay-settings", "--ca", missing}, 1, "cannot read the CA file " + missing},
		{"init with a missing CA file", fresh, nil, []string{"init", "--address", "fresh/1", "--relay", relay.url, "--relay-ca", missing}, 1, "cannot read the CA file " + missing},
		{"fetch into a missing directory", bob, nil, []string{"fetch", "alice/1", id, "--to", missing}, 2, "--to " + missing + " is not a directory"},

		// A peer this profile does not know.
		{"send to an unregistered peer", alice, nil, []string{"send", "zed/1", "hi"}, 1, "zed/1 is not registered at the relay"},
		{"send to a bad address", alice, nil, []string{"send", "Bob/1", "hi"}, 1, `"Bob/1" is not a device address`},
		{"safety number of a stranger", alice, nil, []string{"safety-number", "zed/1"}, 1, "no identity of zed/1 known yet"},
		{"commit from an unknown peer", bob, nil, []string{"commit", "zed/1", id}, 1, "no pending message " + id + " from zed/1"},
		{"discard from an unknown peer", bob, nil, []string{"discard", "zed/1", id}, 1, "no pending message " + id + " from zed/1"},
		{"fetch from an unknown peer", bob, nil, []string{"fetch", "zed/1", id}, 1, "no pending message " + id + " from zed/1"},
		{"abandon to an unknown peer", alice, nil, []string{"abandon", "zed/1", id}, 1, "no pending message " + id + " to zed/1"},
		{"trace with an unknown peer", alice, nil, []string{"trace", "zed/1", id}, 1, "no message " + id + " to or from zed/1"},
		{"reject without a request", bob, nil, []string{"reject", "zed/1"}, 1, "no request from zed/1"},
		{"unblock of a device not blocked", bob, nil, []string{"unblock", "zed/1"}, 1, "zed/1 is not blocked"},
		{"trust an unregistered peer", alice, nil, []string{"trust", "zed/1"}, 1, "zed/1 is not registered at the relay"},
		{"trust a bad fingerprint", alice, nil, []string{"trust", "bob/1", "--fingerprint", "abcd"}, 2, "--fingerprint wants 32 hex digits"},

		// A group this profile does not have.
		{"send to an unknown group", alice, nil, []string{"send", "nosuch", "hi"}, 1, "no group nosuch here"},
		{"send to an address without its device", alice, nil, []string{"send", "bob", "hi"}, 1, "no group bob here (did you mean bob/1?)"},
		{"send a file to an unknown group", alice, nil, []string{"send", "nosuch", "--file", file}, 1, "no group nosuch here"},
		{"history of an unknown group", alice, nil, []string{"history", "nosuch"}, 1, "no group nosuch here"},
		{"retry of an unknown group", alice, nil, []string{"retry", "nosuch"}, 1, "no group nosuch here"},
		{"trace in an unknown group", alice, nil, []string{"trace", "nosuch", id}, 1, "no group nosuch here"},
		{"group show of an unknown group", alice, nil, []string{"group", "show", "nosuch"}, 1, "no group nosuch here"},
		{"group add to an unknown group", alice, nil, []string{"group", "add", "nosuch", "bob/1"}, 1, "no group nosuch here"},
		{"group alone", alice, nil, []string{"group"}, 2, "say what to do: create, add, remove, admin, leave, show or list"},
		{"group with an unknown subcommand", alice, nil, []string{"group", "frob"}, 2, "unknown subcommand frob"},
		{"group add without members", alice, nil, []string{"group", "add", "friends"}, 2, "too few arguments for add"},

		// A relay URL that is not one.
		{"init with no memory for the KDF", fresh, nil, []string{"init", "--address", "fresh/1", "--relay", relay.url, "--kdf-memory", "0"}, 2, "--kdf-memory 0 --kdf-passes 3: kdf memory 0 KiB out of range"},
		{"init with no KDF pass", fresh, nil, []string{"init", "--address", "fresh/1", "--relay", relay.url, "--kdf-passes", "0"}, 2, "--kdf-memory 64 --kdf-passes 0: kdf time 0 out of range"},
		{"init with a bad relay URL", fresh, nil, []string{"init", "--address", "fresh/1", "--relay", "localhost:7777"}, 2, "--relay localhost:7777 is not a relay URL"},
		{"init with an http relay URL", fresh, nil, []string{"init", "--address", "fresh/1", "--relay", "http://127.0.0.1:7777"}, 2, "is not a relay URL: want ws://HOST:PORT or wss://HOST"},
		{"relay-settings with a bad URL", alice, nil, []string{"relay-settings", "--url", "foo"}, 2, "--url foo is not a relay URL"},

		// A wrong passphrase.
		{"inbox with a wrong passphrase", alice, wrong, []string{"inbox"}, 1, "wrong passphrase for profile " + alice.dir},
		{"send with a wrong passphrase", alice, wrong, []string{"send", "bob/1", "hi"}, 1, "wrong passphrase for profile " + alice.dir},
		{"requests with a wrong passphrase", alice, wrong, []string{"requests"}, 1, "wrong passphrase for profile " + alice.dir},

		// An ID that is not one.
		{"commit a bad ID", bob, nil, []string{"commit", "alice/1", "zz"}, 1, `"zz" is not a message ID`},
		{"discard a bad ID", bob, nil, []string{"discard", "alice/1", "xyz1"}, 1, `"xyz1" is not a message ID`},
		{"fetch a bad ID", bob, nil, []string{"fetch", "alice/1", "12"}, 1, `"12" is not a message ID`},
		{"trace a bad ID", alice, nil, []string{"trace", "bob/1", "zz"}, 1, `"zz" is not a message ID`},
		{"abandon a bad ID", alice, nil, []string{"abandon", "bob/1", "zz"}, 1, `"zz" is not a message ID`},
		{"commit an ID prefix nothing starts with", bob, nil, []string{"commit", "alice/1", "0000ffff"}, 1, "none of the pending messages from alice/1 has an ID starting with 0000ffff"},

		// Limits out of their range.
		{"inbox --limit -1", alice, nil, []string{"inbox", "--limit", "-1"}, 2, "--limit must be 1 to 1000"},
		{"inbox --limit 0", alice, nil, []string{"inbox", "--limit", "0"}, 2, "--limit must be 1 to 1000"},
		{"outbox --limit huge", alice, nil, []string{"outbox", "--limit", "99999999999999999999"}, 2, "--limit 99999999999999999999 is out of range"},
		{"outbox --limit 5000", alice, nil, []string{"outbox", "--limit", "5000"}, 2, "--limit must be 1 to 1000"},
		{"inbox --limit x", alice, nil, []string{"inbox", "--limit", "x"}, 2, "--limit x is not a whole number"},
		{"inbox --after huge", alice, nil, []string{"inbox", "--after", "99999999999999999999"}, 2, "--after 99999999999999999999 is out of range"},
		{"outbox --after -1", alice, nil, []string{"outbox", "--after", "-1"}, 2, "--after must be 0 or more"},
		{"history --limit -5", alice, nil, []string{"history", "bob/1", "--limit", "-5"}, 2, "--limit must be 1 to 1000"},
		{"history --limit huge", alice, nil, []string{"history", "bob/1", "--limit", "1000000"}, 2, "--limit must be 1 to 1000"},
		{"sync --wait -1s", alice, nil, []string{"sync", "--wait", "-1s"}, 2, "--wait must not be negative"},
		{"sync --wait x", alice, nil, []string{"sync", "--wait", "x"}, 2, "--wait x is not a duration"},
		{"prune --older-than -1h", alice, nil, []string{"prune", "--older-than", "-1h"}, 2, "--older-than is required and must be positive"},

		// The command line itself.
		{"unknown flag", alice, nil, []string{"inbox", "--frob"}, 2, "unknown flag --frob"},
		{"flag without its value", alice, nil, []string{"inbox", "--limit"}, 2, "flag --limit needs a value"},
		{"extra argument", alice, nil, []string{"inbox", "extra"}, 2, "unexpected argument extra"},
		{"missing argument", alice, nil, []string{"send", "bob/1"}, 2, "give exactly one body: TEXT, - or --file PATH"},
		{"too few arguments", alice, nil, []string{"commit", "bob/1"}, 2, "too few arguments"},
		{"--json where nothing is printed", alice, nil, []string{"tui", "--json"}, 2, "unknown flag --json"},

		// The profile open in another process: writers wait their turn.
		{"send beside the holder", held, nil, []string{"send", "alice/1", "hi"}, 4, "profile " + held.dir + " is open in another process"},
		{"sync beside the holder", held, nil, []string{"sync"}, 4, "profile " + held.dir + " is open in another process"},
		{"commit beside the holder", held, nil, []string{"commit", "alice/1", id}, 4, "profile " + held.dir + " is open in another process"},
		{"accept beside the holder", held, nil, []string{"accept", "zed/1"}, 4, "profile " + held.dir + " is open in another process"},
		{"contact beside the holder", held, nil, []string{"contact", "Zed", "zed/1"}, 4, "profile " + held.dir + " is open in another process"},

		// The relay down.
		{"send with the relay down", offline, nil, []string{"send", "bob/1", "hi"}, 3, "the message stays pending: relay " + down.url + " unreachable (connection refused); \"parley retry bob/1\" sends it again"},
		{"retry with the relay down", offline, nil, []string{"retry", "bob/1"}, 3, "stays pending: relay " + down.url + " unreachable (connection refused)"},
		{"sync with the relay down", offline, nil, []string{"sync"}, 1, "relay " + down.url + " unreachable (connection refused)"},
		{"send a file with the relay down", offline, nil, []string{"send", "bob/1", "--file", file}, 1, "relay " + down.url + " unreachable (connection refused)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := tc.who.runWith(tc.env, "", tc.args...)
			checkErrorOutput(t, tc, r)
		})
	}
}

// checkErrorOutput checks what one bad command line printed.
func checkErrorOutput(t *testing.T, tc errorCase, r runResult) {
	t.Helper()
	cmdline := "parley " + strings.Join(tc.args, " ")
	if r.code != tc.code {
		t.Fatalf("%s: exit %d, want %d; stderr %q", cmdline, r.code, tc.code, r.stderr)
	}
	lines := strings.Split(strings.TrimSuffix(r.stderr, "\n"), "\n")
	want := 1
	if tc.code == 2 {
		want = 2
	}
	if len(lines) != want || !strings.HasSuffix(r.stderr, "\n") {
		t.Fatalf("%s: stderr %q, want %d line(s)", cmdline, r.stderr, want)
	}
	prefix := "parley " + tc.args[0] + ": "
	if !strings.HasPrefix(lines[0], prefix) {
		t.Fatalf("%s: %q does not start with %q", cmdline, lines[0], prefix)
	}
	if !strings.Contains(lines[0], tc.want) {
		t.Fatalf("%s: %q, want it to say %q", cmdline, lines[0], tc.want)
	}
	if tc.code == 2 && !strings.HasPrefix(lines[1], "usage: parley "+tc.args[0]+" ") {
		t.Fatalf("%s: second line %q, want the usage of parley %s", cmdline, lines[1], tc.args[0])
	}
	for _, l := range lines {
		if w := doubledWord(tc.args[0], l); w != "" {
			t.Fatalf("%s: %q says %q twice", cmdline, l, w)
		}
	}
	switch tc.code {
	case 3:
		// The message kept pending is named once: send prints its ID on
		// stdout, retry (which prints what it handed off) on stderr.
		ids := regexp.MustCompile(`[0-9a-f]{32}`).FindAllString(r.stdout+r.stderr, -1)
		if len(ids) != 1 || tc.args[0] == "send" && strings.TrimSpace(r.stdout) != ids[0] {
			t.Fatalf("%s: stdout %q, stderr %q; want the message's ID once (on stdout for send)", cmdline, r.stdout, r.stderr)
		}
	default:
		if r.stdout != "" {
			t.Fatalf("%s: printed %q on stdout", cmdline, r.stdout)
		}
	}
}

// doubledWord returns a word said twice in a row ("group group"), or a
// prefix that comes back or says nothing ("send: send file:", the
// command's own name, "error:") in line, or "".
func doubledWord(cmd, line string) string {
	words := strings.Fields(line)
	for i := 1; i < len(words); i++ {
		a, b := strings.Trim(words[i-1], ":,;()\"'"), strings.Trim(words[i], ":,;()\"'")
		if a != "" && strings.EqualFold(a, b) {
			return a
		}
	}
	if strings.HasPrefix(line, "usage: ") {
		return ""
	}
	heads := map[string]bool{strings.ToLower(cmd): true}
	for _, seg := range strings.Split(line, ": ")[1:] {
		f := strings.Fields(seg)
		if len(f) == 0 {
			continue
		}
		head := strings.ToLower(strings.Trim(f[0], ",;()\"'"))
		if head == "error" || heads[head] {
			return head + ":"
		}
		heads[head] = true
	}
	return ""
}
