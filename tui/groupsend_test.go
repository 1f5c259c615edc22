package tui

import (
	"context"
	"strings"
	"testing"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"
	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/engine/enginetest"
	"github.com/parley-chat/parley/themes"
	"github.com/parley-chat/parley/tui/composer"
	"github.com/parley-chat/parley/tui/conversations"
	"github.com/parley-chat/parley/tui/outbox"
)

// sentOf runs cmd (and the commands it batches) until one answers with the
// composer's SentMsg.
func sentOf(t *testing.T, cmd tea.Cmd) composer.SentMsg {
	t.Helper()
	return msgOf[composer.SentMsg](t, cmd)
}

// msgOf runs cmd (and the commands it batches) until one answers with a T.
func msgOf[T any](t *testing.T, cmd tea.Cmd) T {
	t.Helper()
	queue := []tea.Cmd{cmd}
	for len(queue) > 0 {
		c := queue[0]
		queue = queue[1:]
		if c == nil {
			continue
		}
		switch msg := c().(type) {
		case T:
			return msg
		case tea.BatchMsg:
			queue = append(queue, msg...)
		}
	}
	var zero T
	t.Fatalf("no command answered with a %T", zero)
	return zero
}

// TestComposerSendsToGroup: with a group chosen the composer writes to the
// group (its title says so), enter sends one message with a lane to every
// other member on the real engine, and choosing a peer again gives back
// that peer's draft while the group's text waits for the group.
func TestComposerSendsToGroup(t *testing.T) {
	net := enginetest.NewNetwork()
	ctx := context.Background()
	alice := openTestClient(t, net, demoAlice)
	for _, c := range []*engine.Client{alice, openTestClient(t, net, demoBob), openTestClient(t, net, demoCarol)} {
		if err := c.RefreshPreKeys(ctx); err != nil {
			t.Fatal(err)
		}
	}
	team, _, err := alice.CreateGroup(ctx, "team", []engine.Address{demoBob, demoCarol})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	t.Cleanup(func() { close(done) })
	m := New(ctx, themes.MustGet("dark"), discard, fixedClock)
	p := &m.panes[m.AddPane(demoAlice, &Attachment{Client: alice, Events: make(chan engine.Event), Done: done}, PaneOptions{Compose: true})]
	p.draft.loaded, p.draft.saved = true, map[engine.Address]string{} // as if the stored drafts were read (none)
	p.setActive(true)
	p.SetSize(120, 40)
	*p, _ = p.Update(conversations.SelectedMsg{Peer: demoBob})
	p.comp().SetValue("for bob only")

	*p, _ = p.Update(conversations.SelectedMsg{Peer: demoBob, Group: &team.ID, Name: "team"})
	if v := p.comp().Value(); v != "" {
		t.Fatalf("the group's composer holds %q, want bob's draft set aside", v)
	}
	if title := ansi.Strip(p.comp().View()); !strings.Contains(title, "Composer → #team") {
		t.Errorf("the composer does not say it writes to the group:\n%s", title)
	}
	p.comp().SetValue("hello team")
	var cmd tea.Cmd
	*p, cmd = p.Update(tea.KeyMsg{Type: tea.KeyEnter})
	sent := sentOf(t, cmd)
	if sent.Err != nil || sent.Group == nil || *sent.Group != team.ID || !sent.Peer.IsZero() {
		t.Fatalf("sent %+v, want the group with no error", sent)
	}
	*p, _ = p.Update(sent)

	hist, err := alice.GroupHistory(ctx, team.ID, 0, 10)
	if err != nil {
		t.Fatal(err)
	}
	var got *engine.GroupEntry
	for i := range hist {
		if string(hist[i].Body) == "hello team" {
			got = &hist[i]
		}
	}
	if got == nil || !got.Own || len(got.Lanes) != 2 {
		t.Fatalf("group history %+v: want alice's message once with a lane to bob and to carol", hist)
	}
	if msgs, _ := alice.History(ctx, demoBob, 0, 10); len(msgs) != 0 {
		t.Errorf("the group message went to bob's conversation too: %+v", msgs)
	}
	var log strings.Builder
	for _, e := range p.ev().Entries() {
		log.WriteString(e.Name + " " + e.Text + "\n")
	}
	if !strings.Contains(log.String(), "group_send") || !strings.Contains(log.String(), "#team") {
		t.Errorf("the events do not tell the group send:\n%s", log.String())
	}

	// ctrl+r with the group chosen retries the members with pending lanes
	// of the group (no member acknowledged anything here): to each, in its
	// order, the group's creation and the message.
	*p, cmd = p.Update(tea.KeyMsg{Type: tea.KeyCtrlR})
	retried := msgOf[outbox.RetriedMsg](t, cmd)
	if retried.Err != nil || retried.Sent != 4 || len(retried.Peers) != 2 {
		t.Errorf("ctrl+r on the group: %+v; want its lane to bob and to carol handed off again", retried)
	}

	p.comp().SetValue("half written")
	*p, _ = p.Update(conversations.SelectedMsg{Peer: demoBob})
	if v, to := p.comp().Value(), p.comp().Peer(); v != "for bob only" || to != demoBob || p.comp().Group() != nil {
		t.Errorf("back on bob the composer holds %q to %v (group %v), want bob's draft", v, to, p.comp().Group())
	}
	if d := p.changedDrafts(); d[demoBob] != "for bob only" {
		t.Errorf("drafts to save %q: the group's text leaked into bob's", d)
	}
	*p, _ = p.Update(conversations.SelectedMsg{Peer: demoBob, Group: &team.ID, Name: "team"})
	if v := p.comp().Value(); v != "half written" {
		t.Errorf("back on the group the composer holds %q, want the text left there", v)
	}
	if d := p.changedDrafts(); d[demoBob] == "half written" {
		t.Error("the group's text was saved as bob's draft")
	}
	// The profile keeps peers' drafts only: quitting asks before losing
	// the group's text.
	if handled, quit := m.Quit(tea.KeyMsg{Type: tea.KeyCtrlC}); !handled || quit {
		t.Errorf("ctrl+c with text written to a group: handled %v, quit %v; want a question first", handled, quit)
	}
}
