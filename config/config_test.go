package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/parley-chat/parley/engine"
)

func write(t *testing.T, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "config.toml")
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestMissingFileIsEmpty(t *testing.T) {
	f, err := Load(filepath.Join(t.TempDir(), "none.toml"))
	if err != nil || f.Theme != "" || f.AutoRetry != nil || len(f.Profiles) != 0 {
		t.Fatalf("a missing file: %+v, %v; want empty settings", f, err)
	}
}

func TestProfileOverridesTopLevel(t *testing.T) {
	f, err := Load(write(t, `
theme = "light"
commit = "on-read"
auto_retry = true
[notify]
bell = true
[names]
"bob/1" = "Bob"
"carol/1" = "Carol"
[profiles."alice/1"]
commit = "manual"
auto_retry = false
[profiles."alice/1".notify]
desktop = true
[profiles."alice/1".names]
"bob/1" = "Robert"
`))
	if err != nil {
		t.Fatal(err)
	}
	a := f.For(engine.MustParseAddress("alice/1"))
	if a.Theme != "light" || a.Commit != "manual" || Bool(a.AutoRetry, true) || !Bool(a.Notify.Bell, false) || !Bool(a.Notify.Desktop, false) {
		t.Fatalf("alice/1's settings: %+v", a)
	}
	names := a.DeviceNames()
	if len(names) != 2 || names[engine.MustParseAddress("bob/1")] != "Robert" || names[engine.MustParseAddress("carol/1")] != "Carol" {
		t.Fatalf("alice/1's names: %v", names)
	}
	b := f.For(engine.MustParseAddress("bob/1"))
	if b.Commit != "on-read" || !Bool(b.AutoRetry, false) || Bool(b.Notify.Desktop, false) {
		t.Fatalf("bob/1's settings (the top level): %+v", b)
	}
}

func TestRefusals(t *testing.T) {
	for _, tc := range []struct{ text, want string }{
		{`thme = "dark"`, "unknown setting thme"},
		{"[notify]\nbel = true", "unknown setting notify.bel"},
		{`commit = "sometimes"`, "commit: commit policy \"sometimes\""},
		{`theme = "neon"`, "theme:"},
		{`auto_retry = "yes"`, "auto_retry"},
		{"[profiles.\"Alice/1\"]\ncommit = \"auto\"", "must be lowercase"},
		{"[profiles.\"alice/1\"]\ncommit = \"often\"", `profiles."alice/1".commit`},
		{`theme = `, "config.toml"},
		{"[names]\n\"Bob/1\" = \"Bob\"", `names."Bob/1"`},
		{"[names]\n\"bob/1\" = \"a\\tb\"", "invalid contact name"},
	} {
		_, err := Load(write(t, tc.text))
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "config.toml") {
			t.Errorf("%q: %v; want an error naming the file and %q", tc.text, err, tc.want)
		}
	}
}
