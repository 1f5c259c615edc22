package composer

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/themes"
	"github.com/parley-chat/parley/wire"
)

var bob = engine.MustParseAddress("bob/1")

type sender struct {
	sent []string
	err  error
}

func (*sender) RefreshPeerList(context.Context, string) (engine.PeerAccount, bool, error) {
	return engine.PeerAccount{}, false, nil
}

func (s *sender) Enqueue(_ context.Context, reqs []engine.SendRequest) ([]engine.SendResult, error) {
	if s.err != nil {
		return nil, s.err
	}
	out := make([]engine.SendResult, len(reqs))
	for i, r := range reqs {
		if !r.ClearDraft {
			return nil, errors.New("the composer's send must forget the draft in its transaction")
		}
		s.sent = append(s.sent, r.Peer.String()+":"+string(r.Body))
		out[i].ID = wire.LogicalID{byte(len(s.sent))}
	}
	return out, nil
}

func newComposer(src *sender) Model {
	m := New(context.Background(), src, themes.MustGet("dark"))
	m.SetSize(60, 4)
	m.Focus()
	m.SetPeer(bob)
	return m
}

func typeText(m Model, s string) Model {
	m.ta.SetValue(s)
	m.size = len(s)
	return m
}

var enter = tea.KeyMsg{Type: tea.KeyEnter}

func TestSend(t *testing.T) {
	src := &sender{}
	m := newComposer(src)
	if _, cmd := m.Update(enter); cmd != nil {
		t.Fatal("enter on an empty composer sent something")
	}
	m, _ = m.Update(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("hi")})
	m, cmd := m.Update(enter)
	if cmd == nil || m.Value() != "" {
		t.Fatalf("enter did not send (value %q)", m.Value())
	}
	res := cmd().(SentMsg)
	if res.Err != nil || len(src.sent) != 1 || src.sent[0] != "bob/1:hi" {
		t.Fatalf("sent %q, %v; want bob/1:hi", src.sent, res.Err)
	}
}

// TestSendsInOrder: each Enter stores at once (no queue in memory), and
// the sends reach the source in the order they were entered whichever
// command runs first.
func TestSendsInOrder(t *testing.T) {
	src := &sender{}
	m := newComposer(src)
	m = typeText(m, "one")
	m, first := m.Update(enter)
	m = typeText(m, "two")
	m, second := m.Update(enter)
	if first == nil || second == nil {
		t.Fatal("an Enter did not start its send at once")
	}
	if m.Unsent() != 2 {
		t.Fatalf("Unsent = %d, want 2", m.Unsent())
	}
	if msg, ok := second().(SentMsg); !ok || string(msg.Body) != "two" {
		t.Fatalf("the second command returned %v, want the send of two", msg)
	}
	if msg, ok := first().(SentMsg); !ok || string(msg.Body) != "one" {
		t.Fatalf("the first command returned %v, want the send of one", msg)
	}
	if want := []string{"bob/1:one", "bob/1:two"}; strings.Join(src.sent, ",") != strings.Join(want, ",") {
		t.Fatalf("sent %q, want %q", src.sent, want)
	}
}

// TestSizeLimit: a body of exactly MaxBody bytes (a little under 192 KiB:
// what the sent copy to the own devices carries) goes, one byte more is
// refused before anything is sent, and the text stays to be edited.
func TestSizeLimit(t *testing.T) {
	for _, tc := range []struct {
		name  string
		size  int
		sends bool
	}{
		{"below", MaxBody - 1, true},
		{"at", MaxBody, true},
		{"above", MaxBody + 1, false},
		{"multibyte above", MaxBody/3*3 + 3, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := &sender{}
			m := newComposer(src)
			body := strings.Repeat("a", tc.size)
			if strings.HasPrefix(tc.name, "multibyte") {
				body = strings.Repeat("€", tc.size/3)
			}
			if err := m.Check(body); (err == nil) != tc.sends {
				t.Fatalf("Check(%d bytes) = %v; sends %v", len(body), err, tc.sends)
			}
			if !tc.sends {
				m = typeText(m, "x")
				m.ta.SetValue(body)
				m, cmd := m.Update(enter)
				if cmd != nil || !strings.Contains(m.View(), "message_too_large") || m.Value() == "" {
					t.Fatalf("an over-size body was sent or lost:\n%s", m.View())
				}
			}
		})
	}
}

func TestBlocked(t *testing.T) {
	src := &sender{}
	m := newComposer(src)
	m.SetBlocked("identity_changed: bob/1 has a new identity")
	m = typeText(m, "hello")
	m, cmd := m.Update(enter)
	if cmd != nil || m.Value() != "hello" || !strings.Contains(m.View(), "identity_changed") {
		t.Fatalf("a blocked send went out (cmd %v, value %q):\n%s", cmd != nil, m.Value(), m.View())
	}
	m.SetBlocked("")
	if _, cmd = m.Update(enter); cmd == nil {
		t.Fatal("unblocked, the send still does not go")
	}
}

// TestRefusedSendRestoresText: when nothing was stored the text comes back;
// when the message is stored but not sent it does not (it is pending).
func TestRefusedSendRestoresText(t *testing.T) {
	src := &sender{err: engine.ErrIdentityChanged}
	m := newComposer(src)
	m = typeText(m, "hello")
	m, cmd := m.Update(enter)
	m, _ = m.Update(cmd())
	if m.Value() != "hello" || !strings.Contains(m.View(), "identity_changed") {
		t.Fatalf("refused text lost (%q):\n%s", m.Value(), m.View())
	}
	src.err = &engine.MessageNotSentError{Err: errors.New("relay down")}
	m, cmd = m.Update(enter)
	m, _ = m.Update(cmd())
	if m.Value() != "" {
		t.Fatalf("a stored, not sent message came back to the editor: %q", m.Value())
	}
}

// TestChunkedWordsAreText: typed text read in one chunk arrives as one rune
// message per word, whose String() is the word; words that name keys
// ("enter", "home", "tab", "down") are still text, and only the real enter
// sends.
func TestChunkedWordsAreText(t *testing.T) {
	src := &sender{}
	m := newComposer(src)
	const typed = "qq enter ww home down tab zz"
	for i, w := range strings.Split(typed, " ") {
		if i > 0 {
			m, _ = m.Update(tea.KeyMsg{Type: tea.KeySpace, Runes: []rune{' '}})
		}
		var cmd tea.Cmd
		m, cmd = m.Update(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune(w)})
		if cmd != nil {
			if _, ok := cmd().(SentMsg); ok {
				t.Fatalf("the word %q sent the message", w)
			}
		}
	}
	_, cmd := m.Update(enter)
	if cmd == nil {
		t.Fatal("enter did not send")
	}
	cmd()
	if len(src.sent) != 1 || src.sent[0] != "bob/1:"+typed {
		t.Fatalf("sent %q, want %q", src.sent, "bob/1:"+typed)
	}
}

// TestThreeLinesShowFromTheFirst: a composer sized for what it holds (its
// title and Lines, after each key, as the pane does) shows every line from
// the first: the key that adds a line arrives while the composer is still
// a line shorter, and the first line must not stay scrolled away.
func TestThreeLinesShowFromTheFirst(t *testing.T) {
	for _, n := range []int{2, 3, 4, 8} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			m := New(context.Background(), &sender{}, themes.MustGet("dark"))
			m.SetPeer(bob)
			m.Focus()
			m.SetSize(60, 3) // the title and two lines, as the pane starts it
			var ks []tea.KeyMsg
			for i := 0; i < n; i++ {
				if i > 0 {
					ks = append(ks, tea.KeyMsg{Type: tea.KeyCtrlJ})
				}
				ks = append(ks, tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune{rune('a' + i)}})
			}
			for _, k := range ks {
				// Drawn after each key and each size, as a program does:
				// the textarea's scrolling reads what it last drew. The
				// frame's insertion of typed keys comes with each.
				m, _ = m.Update(k)
				m.Flush()
				m.View()
				m.SetSize(60, 1+m.Lines())
				m.View()
			}
			lines := strings.Split(m.View(), "\n")
			for i := 0; i < n; i++ {
				if want := "› " + string(rune('a'+i)); i+1 >= len(lines) || strings.TrimSpace(lines[i+1]) != want {
					t.Fatalf("line %d of %d is not %q:\n%s", i+1, n, want, m.View())
				}
			}
		})
	}
}

// TestActionSizeLimit: a reply or an edit to a person is limited to what
// its sent copy to this person's other devices carries (MaxActionText, a
// little under a message's limit): one byte more is refused up front,
// naming the limit, and the text stays in its mode to be edited; at the
// limit it goes. Before the fix the composer let it through and the
// engine refused it with nothing stored.
func TestActionSizeLimit(t *testing.T) {
	for _, content := range []string{"reply", "edit"} {
		m := newComposer(&sender{})
		set := func(m *Model, body string) {
			if content == "reply" {
				m.Reply(bob, wire.LogicalID{7}, "the question")
				m.SetValue(body)
			} else {
				m.Edit(bob, wire.LogicalID{7}, body)
			}
			m.size = len(body)
		}
		over := strings.Repeat("a", MaxActionText+1)
		set(&m, over)
		m, cmd := m.Update(enter)
		if cmd != nil || m.Value() != over || m.Mode() != content || !strings.Contains(m.View(), "message_too_large") ||
			!strings.Contains(m.err, strconv.Itoa(MaxActionText)) {
			t.Fatalf("%s of %d bytes: sent %v, mode %q, error %q; want refused up front, kept in its mode", content, len(over), cmd != nil, m.Mode(), m.err)
		}
		m = newComposer(&sender{})
		set(&m, over[:MaxActionText])
		if _, cmd := m.Update(enter); cmd == nil {
			t.Fatalf("%s at the limit was not sent", content)
		}
	}
}

// paste is text arriving at once, as a terminal's bracketed paste does.
func paste(m Model, text string) Model {
	m, _ = m.Update(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune(text), Paste: true})
	return m
}

// TestPasteOverTheLimitIsRefusedWhole: a paste one byte over the current
// mode's limit (a message or a reply, to a person or a group) goes through
// the textarea whole and is refused on Enter, the text kept. Before the
// fix the textarea's limit was a person's message's (MaxBody+1 runes),
// below a group's (MaxGroupBody): it cut a longer group text short without
// a word, and what was left was sent.
func TestPasteOverTheLimitIsRefusedWhole(t *testing.T) {
	for _, tc := range []struct {
		name  string
		group bool
		reply bool
		limit int
	}{
		{"person", false, false, MaxBody},
		{"person reply", false, true, MaxActionText},
		{"group", true, false, MaxGroupBody},
		{"group reply", true, true, MaxGroupActionText},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := &groupSender{}
			m := New(context.Background(), src, themes.MustGet("dark"))
			m.SetSize(60, 4)
			m.Focus()
			m.SetPeer(bob)
			if tc.group {
				m.SetGroup(wire.GroupID{'g'}, "team")
			}
			if tc.reply {
				m.Reply(m.Peer(), wire.LogicalID{7}, "the question")
			}
			over := strings.Repeat("x", tc.limit+1)
			m = paste(m, over)
			if got := len(m.Value()); got != len(over) {
				t.Fatalf("the paste of %d bytes holds %d in the editor", len(over), got)
			}
			m, cmd := m.Update(enter)
			if cmd != nil || len(src.groups)+len(src.sent) != 0 {
				t.Fatalf("a paste of %d bytes, over the limit %d, was sent", len(over), tc.limit)
			}
			if m.Value() != over || !strings.Contains(m.err, "message_too_large") || !strings.Contains(m.err, strconv.Itoa(tc.limit)) {
				t.Fatalf("after Enter: %d bytes kept, error %q; want the text whole and message_too_large naming %d", len(m.Value()), m.err, tc.limit)
			}
		})
	}
}

// TestTooLargeErrorStaysOverTheModesLimit: in a reply the error about the
// text's size goes only once the text is within a reply's limit, not a
// message's (before the fix it went at MaxBody, still over MaxActionText).
func TestTooLargeErrorStaysOverTheModesLimit(t *testing.T) {
	m := newComposer(&sender{})
	m.Reply(bob, wire.LogicalID{7}, "the question")
	m.SetValue(strings.Repeat("a", MaxActionText+2))
	m, _ = m.Update(enter)
	if !strings.Contains(m.err, "message_too_large") {
		t.Fatalf("error %q, want message_too_large", m.err)
	}
	backspace := tea.KeyMsg{Type: tea.KeyBackspace}
	m, _ = m.Update(backspace)
	if m.size != MaxActionText+1 || !strings.Contains(m.err, "message_too_large") {
		t.Fatalf("at %d bytes, still over a reply's limit %d, the error is %q", m.size, MaxActionText, m.err)
	}
	m, _ = m.Update(backspace)
	if m.size != MaxActionText || m.err != "" {
		t.Fatalf("at %d bytes, within the limit, the error is %q", m.size, m.err)
	}
}
