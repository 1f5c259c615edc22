package cli

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
)

// scriptedEnv is a command environment whose terminal answers each
// passphrase prompt with the next of answers.
func scriptedEnv(answers ...string) (*cliEnv, *bytes.Buffer, *bytes.Buffer) {
	var stdout, stderr bytes.Buffer
	env := &cliEnv{
		stdin:  strings.NewReader(""),
		stdout: &stdout, stderr: &stderr,
		getenv: func(string) string { return "" },
		readSecret: func() ([]byte, error) {
			if len(answers) == 0 {
				return nil, context.Canceled
			}
			a := answers[0]
			answers = answers[1:]
			return []byte(a), nil
		},
	}
	return env, &stdout, &stderr
}

// TestPassphrasePrompt: the prompt goes through the command's environment,
// names the profile, asks twice for a new profile, and lets a person retype
// a wrong passphrase up to passphraseTries times in all.
func TestPassphrasePrompt(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "alice")
	ctx := context.Background()

	env, _, stderr := scriptedEnv("secret", "other")
	if code := run(ctx, env, []string{"init", "--profile", dir, "--address", "alice/1", "--relay", "ws://127.0.0.1:1"}); code != exitError || !strings.Contains(stderr.String(), "the passphrases differ") {
		t.Fatalf("init with two different passphrases: exit %d, stderr %q; want exit 1 naming the difference", code, stderr)
	}
	env, _, stderr = scriptedEnv("secret", "secret")
	if code := run(ctx, env, []string{"init", "--profile", dir, "--address", "alice/1", "--relay", "ws://127.0.0.1:1"}); code != exitOK {
		t.Fatalf("init: exit %d, stderr %q", code, stderr)
	}
	if want := "passphrase for profile " + dir + ": "; !strings.Contains(stderr.String(), want) {
		t.Fatalf("init's prompt %q does not name the profile (want %q)", stderr, want)
	}

	env, stdout, stderr := scriptedEnv("wrong", "wrong again", "secret")
	if code := run(ctx, env, []string{"identity", "--profile", dir}); code != exitOK {
		t.Fatalf("identity after two wrong passphrases and a right one: exit %d, stderr %q", code, stderr)
	}
	if got := strings.Count(stderr.String(), "wrong passphrase, try again"); got != 2 {
		t.Fatalf("stderr %q says try again %d times, want 2", stderr, got)
	}
	if !strings.Contains(stdout.String(), "alice/1") {
		t.Fatalf("identity printed %q, want the address", stdout)
	}

	env, _, stderr = scriptedEnv("a", "b", "c", "secret")
	if code := run(ctx, env, []string{"identity", "--profile", dir}); code != exitError {
		t.Fatalf("identity after %d wrong passphrases: exit %d, want 1", passphraseTries, code)
	}
	if got := strings.Count(stderr.String(), dir+": "); got != passphraseTries {
		t.Fatalf("asked %d times, want %d: %q", got, passphraseTries, stderr)
	}
	if !strings.Contains(stderr.String(), "wrong passphrase for profile") {
		t.Fatalf("the last refusal %q does not name the cause", stderr)
	}
}

// TestUnknownCommandSuggests: a mistyped command names the nearest one; a
// word far from every command gets no guess; "version" prints the build.
func TestUnknownCommandSuggests(t *testing.T) {
	for _, tc := range []struct{ typed, want string }{
		{"snd", "did you mean send?"},
		{"histroy", "did you mean history?"},
		{"relya", "did you mean relay?"},
		{"xyzzyplugh", `unknown command "xyzzyplugh" (run`},
	} {
		env, _, stderr := scriptedEnv()
		if code := run(context.Background(), env, []string{tc.typed}); code != exitUsage {
			t.Errorf("%s: exit %d, want %d", tc.typed, code, exitUsage)
		}
		if !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("%s: stderr %q, want it to contain %q", tc.typed, stderr, tc.want)
		}
	}
	env, stdout, _ := scriptedEnv()
	if code := run(context.Background(), env, []string{"version"}); code != exitOK || !strings.HasPrefix(stdout.String(), "parley ") {
		t.Fatalf("version: exit %d, printed %q", code, stdout)
	}
}
