// Attaching a file: "/file PATH" sent from the composer asks for the file
// to be uploaded to the chosen peer or group (the pane runs the engine's
// SendFile or SendGroupFile and shows its progress), and tab completes
// the path's last element. The composer does no I/O in Update: the
// directory is read in a command.

package composer

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/wire"
)

// AttachPrefix starts a line that attaches a file instead of sending text.
const AttachPrefix = "/file "

// AttachMsg asks for the file at Path (as typed: "~/" is the home
// directory) to be sent to Peer, or to every member of Group.
type AttachMsg struct {
	Peer  engine.Address
	Group *wire.GroupID
	Path  string
}

// CompletedMsg carries a completion of the path being attached: Value
// replaces the composer's text if it is still Was; Choices are the names
// that share what was typed, when more than one does.
type CompletedMsg struct {
	Was, Value string
	Choices    []string
}

// attach turns a "/file PATH" line into an AttachMsg; false when the line
// is text.
func (m *Model) attach(body string) (tea.Cmd, bool) {
	if !strings.HasPrefix(body, AttachPrefix) {
		return nil, false
	}
	path := strings.TrimSpace(strings.TrimPrefix(body, AttachPrefix))
	if err := m.Check(""); err != nil {
		m.err = err.Error()
		return nil, true
	}
	if path == "" {
		m.err = "/file PATH attaches a file (tab completes the path)"
		return nil, true
	}
	m.err, m.note = "", ""
	m.ta.Reset()
	m.changed()
	msg := AttachMsg{Peer: m.peer, Group: m.group, Path: path}
	return func() tea.Msg { return msg }, true
}

// ExpandPath resolves a leading "~/" to the home directory.
func ExpandPath(p string) string {
	if rest, ok := strings.CutPrefix(p, "~/"); ok {
		if home, err := os.UserHomeDir(); err == nil {
			return filepath.Join(home, rest)
		}
	}
	return p
}

// Complete completes the path of a "/file " line (its last element, in a
// command that reads the directory); false when the text is no such line.
func (m Model) Complete() (tea.Cmd, bool) {
	was := m.Value()
	typed, ok := strings.CutPrefix(was, AttachPrefix)
	if !ok || strings.Contains(typed, "\n") {
		return nil, false
	}
	return func() tea.Msg {
		dir, base := filepath.Split(typed)
		look := ExpandPath(dir)
		if look == "" {
			look = "."
		}
		ents, err := os.ReadDir(look)
		if err != nil {
			return CompletedMsg{Was: was, Value: was}
		}
		var names []string
		for _, e := range ents {
			n := e.Name()
			if !strings.HasPrefix(n, base) || (strings.HasPrefix(n, ".") && !strings.HasPrefix(base, ".")) {
				continue
			}
			if e.IsDir() {
				n += string(filepath.Separator)
			}
			names = append(names, n)
		}
		sort.Strings(names)
		msg := CompletedMsg{Was: was, Value: was}
		if len(names) == 0 {
			return msg
		}
		common := names[0]
		for _, n := range names[1:] {
			for !strings.HasPrefix(n, common) {
				common = common[:len(common)-1]
			}
		}
		msg.Value = AttachPrefix + dir + common
		if len(names) > 1 {
			msg.Choices = names
		}
		return msg
	}, true
}

// completed applies a completion, unless the text changed meanwhile.
func (m *Model) completed(msg CompletedMsg) {
	if m.Value() != msg.Was {
		return
	}
	if msg.Value != msg.Was {
		m.SetValue(msg.Value)
		m.ta.CursorEnd()
	}
	m.note = ""
	if len(msg.Choices) > 0 {
		m.note = fmt.Sprintf("%d match: %s", len(msg.Choices), strings.Join(msg.Choices, "  "))
	}
}

// SetError shows err under the composer's title (an attachment that
// failed after the line left the composer).
func (m *Model) SetError(err string) { m.err = err }
