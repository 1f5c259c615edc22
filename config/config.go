// Package config owns parley's settings file: the interface's theme, commit
// policy, automatic retry and notifications, for every profile and for one
// profile at a time. It reads TOML ($XDG_CONFIG_HOME/parley/config.toml by
// default) and refuses what it does not know, so that a typo is an error
// that names the key rather than a setting silently ignored. Flags of the
// command line override what the file says; the file overrides the
// built-in defaults.
//
// Names of devices may be given here ([names], a plain file) or in the
// profile (parley contact, or e in the interface), where they are sealed
// like the messages; a name in the profile wins over one here.
package config

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"sort"
	"strings"

	"github.com/BurntSushi/toml"
	"github.com/adrg/xdg"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/themes"
)

// Settings are what the file can say, for every profile (the top level)
// or for one (a [profiles."user/device"] table). A nil or empty field says
// nothing: the next source decides.
type Settings struct {
	// Theme is a themes name.
	Theme string `toml:"theme"`
	// Commit is the commit policy of parley tui: "manual", "on-read" or
	// "auto".
	Commit string `toml:"commit"`
	// AutoRetry retries pending sent messages on their own: at a
	// reconnection, after a convergence and with a backoff otherwise.
	AutoRetry *bool `toml:"auto_retry"`
	// Notify says how a message for a conversation not in view is
	// announced.
	Notify Notify `toml:"notify"`
	// Names are names for devices, by address ("bob/1" = "Bob").
	Names map[string]string `toml:"names"`
	// Emoji is how the interface draws the emoji clusters terminals
	// measure differently: "auto" (as the terminal is known to),
	// "whole" or "plain".
	Emoji string `toml:"emoji"`
	// Previews draws a received picture (PNG, JPEG, GIF) in the
	// conversation once it is downloaded and verified; on by default.
	Previews *bool `toml:"previews"`
	// Graphics is how a picture is drawn: "auto" (the kitty graphics
	// protocol on kitty and Ghostty, half blocks elsewhere), "kitty" or
	// "blocks".
	Graphics string `toml:"graphics"`
}

// Notify are the notification settings.
type Notify struct {
	// Bell rings the terminal bell.
	Bell *bool `toml:"bell"`
	// Desktop sends a desktop notification through the terminal (OSC 777
	// and OSC 9, which terminals that do not know them ignore).
	Desktop *bool `toml:"desktop"`
	// Title shows the number of unread messages in the terminal's title.
	Title *bool `toml:"title"`
}

// File is a whole settings file.
type File struct {
	Settings
	Profiles map[string]Settings `toml:"profiles"`

	path string
}

// DefaultPath is where the settings file is looked for.
func DefaultPath() string {
	return filepath.Join(xdg.ConfigHome, "parley", "config.toml")
}

// Load reads the file at path. A file that does not exist is an empty one;
// an unknown key, a value of the wrong type or a setting parley does not
// know is an error naming the file and the key.
func Load(path string) (File, error) {
	f := File{path: path}
	md, err := toml.DecodeFile(path, &f)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return File{path: path}, nil
	case err != nil:
		return File{}, fmt.Errorf("settings file %s: %w", path, err)
	}
	if extra := md.Undecoded(); len(extra) > 0 {
		keys := make([]string, len(extra))
		for i, k := range extra {
			keys[i] = k.String()
		}
		sort.Strings(keys)
		return File{}, fmt.Errorf("settings file %s: unknown setting %s (known: theme, commit, auto_retry, emoji, previews, graphics, notify.bell, notify.desktop, notify.title, names, and the same under [profiles.\"user/device\"])",
			path, strings.Join(keys, ", "))
	}
	if err := f.Settings.check(""); err != nil {
		return File{}, fmt.Errorf("settings file %s: %w", path, err)
	}
	for addr, s := range f.Profiles {
		if _, err := engine.ParseAddress(addr); err != nil {
			return File{}, fmt.Errorf("settings file %s: [profiles.%q]: %w", path, addr, err)
		}
		if err := s.check(fmt.Sprintf("profiles.%q.", addr)); err != nil {
			return File{}, fmt.Errorf("settings file %s: %w", path, err)
		}
	}
	return f, nil
}

// Path is the file's path.
func (f File) Path() string { return f.path }

func (s Settings) check(prefix string) error {
	if s.Theme != "" {
		if _, err := themes.Get(s.Theme); err != nil {
			return fmt.Errorf("%stheme: %w", prefix, err)
		}
	}
	if s.Commit != "" {
		if _, err := engine.ParseCommitPolicy(s.Commit); err != nil {
			return fmt.Errorf("%scommit: %w", prefix, err)
		}
	}
	switch s.Emoji {
	case "", "auto", "whole", "plain":
	default:
		return fmt.Errorf("%semoji: %q is not auto, whole or plain", prefix, s.Emoji)
	}
	switch s.Graphics {
	case "", "auto", "kitty", "blocks":
	default:
		return fmt.Errorf("%sgraphics: %q is not auto, kitty or blocks", prefix, s.Graphics)
	}
	for addr, name := range s.Names {
		if _, err := engine.ParseAddress(addr); err != nil {
			return fmt.Errorf("%snames.%q: %w", prefix, addr, err)
		}
		if err := engine.CheckContactName(name); err != nil {
			return fmt.Errorf("%snames.%q: %w", prefix, addr, err)
		}
	}
	return nil
}

// DeviceNames returns the names as addresses to names.
func (s Settings) DeviceNames() map[engine.Address]string {
	out := make(map[engine.Address]string, len(s.Names))
	for addr, name := range s.Names {
		if a, err := engine.ParseAddress(addr); err == nil && name != "" {
			out[a] = name
		}
	}
	return out
}

// For returns the settings of the profile with address: its own table over
// the top level.
func (f File) For(address engine.Address) Settings {
	return f.Settings.Over(f.Profiles[address.String()])
}

// Over returns s with every field that o sets replaced by o's.
func (s Settings) Over(o Settings) Settings {
	if o.Theme != "" {
		s.Theme = o.Theme
	}
	if o.Commit != "" {
		s.Commit = o.Commit
	}
	if o.Emoji != "" {
		s.Emoji = o.Emoji
	}
	if o.AutoRetry != nil {
		s.AutoRetry = o.AutoRetry
	}
	if o.Previews != nil {
		s.Previews = o.Previews
	}
	if o.Graphics != "" {
		s.Graphics = o.Graphics
	}
	if o.Notify.Bell != nil {
		s.Notify.Bell = o.Notify.Bell
	}
	if o.Notify.Desktop != nil {
		s.Notify.Desktop = o.Notify.Desktop
	}
	if o.Notify.Title != nil {
		s.Notify.Title = o.Notify.Title
	}
	if len(o.Names) > 0 {
		names := make(map[string]string, len(s.Names)+len(o.Names))
		for a, n := range s.Names {
			names[a] = n
		}
		for a, n := range o.Names {
			names[a] = n
		}
		s.Names = names
	}
	return s
}

// Bool returns *p, or def when p is nil.
func Bool(p *bool, def bool) bool {
	if p == nil {
		return def
	}
	return *p
}
