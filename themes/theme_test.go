package themes

import (
	"reflect"
	"strings"
	"testing"

	"github.com/charmbracelet/lipgloss"
)

func TestGet(t *testing.T) {
	for _, tc := range []struct {
		name, want string
		fails      bool
	}{
		{"", Dark, false},
		{"dark", Dark, false},
		{"light", Light, false},
		{"high-contrast", HighContrast, false},
		{"High-Contrast", HighContrast, false},
		{"solarized", "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := GetColor(tc.name, true)
			if tc.fails {
				if err == nil || !strings.Contains(err.Error(), "dark, high-contrast, light") {
					t.Fatalf("Get(%q) = %v; want an error naming the themes", tc.name, err)
				}
				return
			}
			if err != nil || got.Name != tc.want {
				t.Fatalf("Get(%q) = %q, %v; want %q", tc.name, got.Name, err, tc.want)
			}
		})
	}
}

func TestNames(t *testing.T) {
	if got, want := Names(), []string{Dark, HighContrast, Light}; !reflect.DeepEqual(got, want) {
		t.Fatalf("Names() = %v, want %v", got, want)
	}
}

// TestNoColor: with NO_COLOR set, no style of any group carries a colour,
// and focus is still visible (reverse video).
func TestNoColor(t *testing.T) {
	t.Setenv("NO_COLOR", "1")
	for _, name := range Names() {
		th, err := Get(name)
		if err != nil {
			t.Fatal(err)
		}
		if !th.Mono {
			t.Fatalf("%s: Mono = false under NO_COLOR", name)
		}
		eachStyle(th, func(path string, s lipgloss.Style) {
			for _, c := range []lipgloss.TerminalColor{s.GetForeground(), s.GetBackground()} {
				if _, ok := c.(lipgloss.NoColor); !ok {
					t.Errorf("%s: %s has colour %v under NO_COLOR", name, path, c)
				}
			}
		})
		if !th.Panel.TitleFocused.GetReverse() {
			t.Errorf("%s: the focused title is not reverse video under NO_COLOR", name)
		}
	}
	t.Setenv("NO_COLOR", "")
	if th, _ := Get(Dark); th.Mono {
		t.Fatal("an empty NO_COLOR turned colours off")
	}
}

// TestThemesDiffer: every theme gives the states distinct colours from each
// other theme's, so a theme choice is visible.
func TestThemesDiffer(t *testing.T) {
	seen := map[string]string{}
	for _, name := range Names() {
		th, _ := GetColor(name, true)
		key := ""
		for _, s := range []lipgloss.Style{th.Timeline.Acked, th.Timeline.Pending, th.Timeline.NotSent, th.Panel.TitleFocused} {
			key += colorString(s.GetForeground()) + "/" + colorString(s.GetBackground()) + " "
		}
		if other, ok := seen[key]; ok {
			t.Fatalf("%s and %s look the same", name, other)
		}
		seen[key] = name
	}
}

func colorString(c lipgloss.TerminalColor) string {
	if col, ok := c.(lipgloss.Color); ok {
		return string(col)
	}
	return "none"
}

// eachStyle calls fn with every lipgloss.Style of a theme, by field path.
func eachStyle(th Theme, fn func(string, lipgloss.Style)) {
	var walk func(string, reflect.Value)
	styleType := reflect.TypeOf(lipgloss.Style{})
	walk = func(path string, v reflect.Value) {
		if v.Type() == styleType {
			fn(path, v.Interface().(lipgloss.Style))
			return
		}
		if v.Kind() != reflect.Struct {
			return
		}
		for i := 0; i < v.NumField(); i++ {
			walk(path+"."+v.Type().Field(i).Name, v.Field(i))
		}
	}
	walk("Theme", reflect.ValueOf(th))
}

// TestForBackground: with no theme named, a light background gets the
// light theme and a dark one the dark theme.
func TestForBackground(t *testing.T) {
	if got := ForBackground(false); got != Light {
		t.Errorf("a light background gets %q, want %q", got, Light)
	}
	if got := ForBackground(true); got != Dark {
		t.Errorf("a dark background gets %q, want %q", got, Dark)
	}
}
