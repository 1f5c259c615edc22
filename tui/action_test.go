package tui

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"
	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/engine/enginetest"
	"github.com/parley-chat/parley/themes"
	"github.com/parley-chat/parley/tui/composer"
	"github.com/parley-chat/parley/tui/inbox"
	"github.com/parley-chat/parley/tui/outbox"
	"github.com/parley-chat/parley/tui/timeline"
	"github.com/parley-chat/parley/wire"
)

// actionPair is alice and bob on one network, with alice's "hi bob" and
// bob's "hi alice" committed on both sides.
type actionPair struct {
	t          *testing.T
	ctx        context.Context
	alice, bob *engine.Client
}

func newActionPair(t *testing.T) *actionPair {
	t.Helper()
	ctx := context.Background()
	net := enginetest.NewNetwork()
	blobs, err := enginetest.NewBlobs(filepath.Join(t.TempDir(), "blobs"))
	if err != nil {
		t.Fatal(err)
	}
	ap := &actionPair{t: t, ctx: ctx, alice: openFileClient(t, net, blobs, demoAlice), bob: openFileClient(t, net, blobs, demoBob)}
	for _, c := range []*engine.Client{ap.alice, ap.bob} {
		if err := c.RefreshPreKeys(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := ap.alice.Send(ctx, demoBob, []byte("hi bob")); err != nil {
		t.Fatal(err)
	}
	ap.deliver(ap.bob)
	if _, err := ap.bob.Send(ctx, demoAlice, []byte("hi alice")); err != nil {
		t.Fatal(err)
	}
	ap.deliver(ap.alice)
	ap.deliver(ap.bob) // the acknowledgement
	return ap
}

// deliver sends what the other side has pending and commits everything
// pending at c.
func (ap *actionPair) deliver(c *engine.Client) {
	ap.t.Helper()
	other := ap.alice
	if c == ap.alice {
		other = ap.bob
	}
	if _, err := other.Pump(ap.ctx); err != nil {
		ap.t.Fatal(err)
	}
	ap.sync(c)
	pend, err := c.PendingInbound(ap.ctx, engine.PageQuery{Limit: 100})
	if err != nil {
		ap.t.Fatal(err)
	}
	for _, m := range pend {
		if _, err := c.Commit(ap.ctx, m.Sender, m.ID); err != nil {
			ap.t.Fatal(err)
		}
	}
}

func (ap *actionPair) sync(c *engine.Client) {
	ap.t.Helper()
	if _, err := c.Sync(ap.ctx); err != nil {
		ap.t.Fatal(err)
	}
}

// press hands the pane keys, one at a time, and returns the last command.
func press(p *pane, keys ...tea.KeyMsg) tea.Cmd {
	var cmd tea.Cmd
	for _, k := range keys {
		*p, cmd = p.Update(k)
	}
	return cmd
}

// reload reads the pane's conversation again, as an engine event would.
func reload(t *testing.T, p *pane) {
	t.Helper()
	*p, _ = p.Update(msgOf[timeline.LoadedMsg](t, p.tl().Reload()))
}

// act runs the timeline's ask for an action through the pane, and, for a
// reaction or a delete, the action's command, which answers with the
// composer's ActedMsg; it returns it.
func act(t *testing.T, p *pane, cmd tea.Cmd) composer.ActedMsg {
	t.Helper()
	a := msgOf[timeline.ActionMsg](t, cmd)
	*p, cmd = p.Update(a)
	acted := msgOf[composer.ActedMsg](t, cmd)
	*p, _ = p.Update(acted)
	return acted
}

func screen(p *pane) string { return ansi.Strip(p.View()) }

var (
	enter = tea.KeyMsg{Type: tea.KeyEnter}
	esc   = tea.KeyMsg{Type: tea.KeyEsc}
)

// TestReplyFromTimeline: r in bob's timeline quotes alice's newest
// message above the composer (esc cancels the reply, the text stays),
// Enter sends a reply naming it, and both timelines show the reply under
// a one-line quote.
func TestReplyFromTimeline(t *testing.T) {
	ap := newActionPair(t)
	bp := filePane(t, ap.bob, demoBob, demoAlice, PaneOptions{Compose: true})
	press(bp, alt('2'))
	*bp, _ = bp.Update(msgOf[timeline.ActionMsg](t, press(bp, runes("r"))))
	if v := screen(bp); !strings.Contains(v, "↪ replying to you: “hi alice”") {
		// The newest message is bob's own: a reply quotes it.
		t.Fatalf("the composer does not show the quote:\n%s", v)
	}
	if bp.focus != panelComposer {
		t.Fatalf("focus in %v, want the composer", bp.focus)
	}
	press(bp, esc)
	if v := screen(bp); strings.Contains(v, "replying to") || bp.comp().Mode() != "" {
		t.Fatalf("esc did not cancel the reply:\n%s", v)
	}
	// Reply to alice's message: found by a search.
	press(bp, alt('2'), runes("/"), runes("hi bob"), enter)
	*bp, _ = bp.Update(msgOf[timeline.ActionMsg](t, press(bp, runes("r"))))
	if v := screen(bp); !strings.Contains(v, "↪ replying to alice/1: “hi bob”") {
		t.Fatalf("the composer does not quote the search's match:\n%s", v)
	}
	press(bp, runes("yes, hi"))
	acted := msgOf[composer.ActedMsg](t, press(bp, enter))
	if acted.Err != nil || acted.Req.Content != wire.ContentReply || string(acted.Req.Text) != "yes, hi" {
		t.Fatalf("sent %+v", acted)
	}
	*bp, _ = bp.Update(acted)
	reload(t, bp)
	v := screen(bp)
	if !strings.Contains(v, "↪ alice/1: “hi bob”") || !strings.Contains(v, "yes, hi") || strings.Contains(v, "replying to") {
		t.Fatalf("bob's timeline does not show the quoted reply:\n%s", v)
	}
	hist, err := ap.bob.History(ap.ctx, demoAlice, 0, 10)
	if err != nil {
		t.Fatal(err)
	}
	var target wire.LogicalID
	for _, e := range hist {
		if string(e.Body) == "hi bob" {
			target = e.ID
		}
	}
	if hist[0].ReplyTo == nil || *hist[0].ReplyTo != target || string(hist[0].Body) != "yes, hi" {
		t.Fatalf("the newest entry %+v is no reply to %x", hist[0], target)
	}

	ap.deliver(ap.alice)
	alp := filePane(t, ap.alice, demoAlice, demoBob, PaneOptions{})
	if v := screen(alp); !strings.Contains(v, "↪ you: “hi bob”") || !strings.Contains(v, "yes, hi") {
		t.Fatalf("alice's timeline does not show the quoted reply:\n%s", v)
	}
}

// TestReplyToUnknownMessage: a reply whose target this device does not
// have says so.
func TestReplyToUnknownMessage(t *testing.T) {
	ap := newActionPair(t)
	if _, err := ap.bob.Act(ap.ctx, engine.ActionRequest{Peer: demoAlice, Content: wire.ContentReply, Target: wire.LogicalID{9}, Text: []byte("re: what?")}); err != nil {
		t.Fatal(err)
	}
	bp := filePane(t, ap.bob, demoBob, demoAlice, PaneOptions{})
	if v := screen(bp); !strings.Contains(v, "↪ a message not here") || !strings.Contains(v, "re: what?") {
		t.Fatalf("the reply's unknown target is not said:\n%s", v)
	}
}

// TestReactFromTimeline: + opens the picker, 1 sends 👍 to the newest
// message, shown under it; + and Enter on the same emoji takes it back.
// Alice's inbox and timeline show the reaction waiting as what it is, and
// once committed, under her message.
func TestReactFromTimeline(t *testing.T) {
	ap := newActionPair(t)
	bp := filePane(t, ap.bob, demoBob, demoAlice, PaneOptions{Compose: true})
	press(bp, alt('2'), runes("/"), runes("hi bob"), enter)
	press(bp, runes("+"))
	if v := screen(bp); !strings.Contains(v, "react[1👍]") || !strings.Contains(v, "esc") {
		t.Fatalf("the picker is not shown:\n%s", v)
	}
	press(bp, esc)
	if v := screen(bp); strings.Contains(v, "react[1👍]") {
		t.Fatalf("esc did not close the picker:\n%s", v)
	}
	acted := act(t, bp, press(bp, runes("+"), runes("1")))
	if acted.Err != nil || acted.Req.Emoji != "👍" {
		t.Fatalf("reacted %+v", acted)
	}
	reload(t, bp)
	if v := screen(bp); !strings.Contains(v, "👍 you") {
		t.Fatalf("bob's reaction is not shown:\n%s", v)
	}

	// Bob's outbox says what the pending reaction is, not its encoding.
	out := outbox.New(ap.ctx, ap.bob, themes.MustGet("dark"))
	out, _ = out.Update(msgOf[outbox.LoadedMsg](t, out.SetSize(70, 10)))
	if v := ansi.Strip(out.View()); !strings.Contains(v, "alice/1") || !strings.Contains(v, "reaction 👍") {
		t.Fatalf("bob's outbox does not say what the reaction is:\n%s", v)
	}

	// Alice sees it waiting, in the inbox and in the conversation.
	if _, err := ap.bob.Pump(ap.ctx); err != nil {
		t.Fatal(err)
	}
	ap.sync(ap.alice)
	alp := filePane(t, ap.alice, demoAlice, demoBob, PaneOptions{})
	if v := screen(alp); !strings.Contains(v, "reacts 👍 to “hi bob”") {
		t.Fatalf("alice's timeline does not say what the waiting reaction is:\n%s", v)
	}
	in := inbox.New(ap.ctx, ap.alice, themes.MustGet("dark"))
	cmd := in.SetSize(70, 10)
	in, cmd = in.Update(msgOf[inbox.LoadedMsg](t, cmd))
	if cmd == nil {
		t.Fatal("the inbox reads no quotes")
	}
	in, _ = in.Update(cmd()) // the quotes of the actions shown
	if v := ansi.Strip(in.View()); !strings.Contains(v, "bob/1") || !strings.Contains(v, "reacts 👍 to “hi bob”") {
		t.Fatalf("alice's inbox does not say what the reaction is:\n%s", v)
	}
	ap.deliver(ap.alice)
	reload(t, alp)
	if v := screen(alp); !strings.Contains(v, "👍 bob/1") || strings.Contains(v, "reacts 👍") {
		t.Fatalf("alice's timeline does not show the committed reaction:\n%s", v)
	}

	// The same emoji again takes it back.
	acted = act(t, bp, press(bp, runes("+"), enter))
	if acted.Err != nil || !acted.Req.Remove {
		t.Fatalf("the same emoji again sent %+v, want a removal", acted)
	}
	reload(t, bp)
	if v := screen(bp); strings.Contains(v, "👍 you") {
		t.Fatalf("the reaction taken back is still shown:\n%s", v)
	}
}

// TestEditFromTimeline: e fills the composer with the newest own message,
// Enter sends the edit, the timeline shows the latest body marked edited,
// and v shows the earlier version.
func TestEditFromTimeline(t *testing.T) {
	ap := newActionPair(t)
	alp := filePane(t, ap.alice, demoAlice, demoBob, PaneOptions{Compose: true})
	*alp, _ = alp.Update(msgOf[timeline.ActionMsg](t, press(alp, alt('2'), runes("e"))))
	if got := alp.comp().Value(); got != "hi bob" || alp.focus != panelComposer {
		t.Fatalf("the composer holds %q (focus %v), want alice's message to edit", got, alp.focus)
	}
	if v := screen(alp); !strings.Contains(v, "editing your message") {
		t.Fatalf("the composer does not say it edits:\n%s", v)
	}
	alp.comp().SetValue("hi bob, how are you?")
	acted := msgOf[composer.ActedMsg](t, press(alp, enter))
	if acted.Err != nil || acted.Req.Content != wire.ContentEdit {
		t.Fatalf("edited %+v", acted)
	}
	*alp, _ = alp.Update(acted)
	reload(t, alp)
	v := screen(alp)
	if !strings.Contains(v, "hi bob, how are you?") || !strings.Contains(v, "edited") {
		t.Fatalf("the timeline does not show the edit:\n%s", v)
	}
	cmd := press(alp, alt('2'), runes("v"))
	*alp, cmd = alp.Update(msgOf[timeline.VersionsMsg](t, cmd))
	*alp, _ = alp.Update(msgOf[versionsMsg](t, cmd))
	if v := screen(alp); !strings.Contains(v, `original "hi bob"`) || !strings.Contains(v, `edit 1 "hi bob, how are you?"`) {
		t.Fatalf("v does not show the versions:\n%s", v)
	}
	ap.deliver(ap.bob)
	bp := filePane(t, ap.bob, demoBob, demoAlice, PaneOptions{})
	if v := screen(bp); !strings.Contains(v, "hi bob, how are you?") || !strings.Contains(v, "edited") {
		t.Fatalf("bob's timeline does not show the edit:\n%s", v)
	}
}

// TestDeleteFromTimeline: D asks, a key other than y keeps the message,
// D y deletes it for everyone: a tombstone without its reactions.
func TestDeleteFromTimeline(t *testing.T) {
	ap := newActionPair(t)
	hist, err := ap.alice.History(ap.ctx, demoBob, 0, 10)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range hist {
		if e.Direction == engine.DirectionOut {
			if _, err := ap.alice.Act(ap.ctx, engine.ActionRequest{Peer: demoBob, Content: wire.ContentReaction, Target: e.ID, Emoji: "🎉"}); err != nil {
				t.Fatal(err)
			}
		}
	}
	alp := filePane(t, ap.alice, demoAlice, demoBob, PaneOptions{Compose: true})
	if v := screen(alp); !strings.Contains(v, "🎉 you") {
		t.Fatalf("the reaction is not shown:\n%s", v)
	}
	press(alp, alt('2'), runes("D"))
	if v := screen(alp); !strings.Contains(v, "delete “hi bob” for everyone? y deletes it") {
		t.Fatalf("D does not ask:\n%s", v)
	}
	if cmd := press(alp, runes("n")); cmd != nil {
		if _, ok := cmd().(timeline.ActionMsg); ok {
			t.Fatal("a key other than y deleted")
		}
	}
	if v := screen(alp); strings.Contains(v, "for everyone?") || !strings.Contains(v, "hi bob") {
		t.Fatalf("n did not keep the message:\n%s", v)
	}
	press(alp, runes("D"))
	acted := act(t, alp, press(alp, runes("y")))
	if acted.Err != nil || acted.Req.Content != wire.ContentDelete {
		t.Fatalf("deleted %+v", acted)
	}
	reload(t, alp)
	v := screen(alp)
	if !strings.Contains(v, "message deleted") || strings.Contains(v, "hi bob") || strings.Contains(v, "🎉") {
		t.Fatalf("no tombstone, or the body or reaction still shown:\n%s", v)
	}
	ap.deliver(ap.bob)
	bp := filePane(t, ap.bob, demoBob, demoAlice, PaneOptions{})
	if v := screen(bp); !strings.Contains(v, "message deleted") || strings.Contains(v, "hi bob") {
		t.Fatalf("bob's timeline shows no tombstone:\n%s", v)
	}

	// An edit of the deleted message (asked before the delete landed) is
	// refused: the text comes back to the composer, still an edit.
	var gone engine.HistoryEntry
	for _, e := range alp.tl().Entries() {
		if e.Deleted {
			gone = e
		}
	}
	*alp, _ = alp.Update(timeline.ActionMsg{Peer: demoBob, Content: wire.ContentEdit, Target: gone})
	alp.comp().SetValue("hi bob!")
	acted = msgOf[composer.ActedMsg](t, press(alp, enter))
	*alp, _ = alp.Update(acted)
	v = screen(alp)
	if acted.Err == nil || alp.comp().Value() != "hi bob!" || alp.comp().Mode() != "edit" || !strings.Contains(v, "edit refused: the message was deleted") {
		t.Fatalf("a refused edit (%v) left the composer with %q in mode %q:\n%s", acted.Err, alp.comp().Value(), alp.comp().Mode(), v)
	}
	press(alp, esc)
	if alp.comp().Value() != "" || alp.comp().Mode() != "" {
		t.Fatalf("esc left %q in mode %q", alp.comp().Value(), alp.comp().Mode())
	}
}

// TestActionRefusedInStatusBar: the engine's refusal (an edit of the
// peer's message) is one line in the status bar, control characters
// cleaned, until the next key; keys with nothing to act on say so.
func TestActionRefusedInStatusBar(t *testing.T) {
	ap := newActionPair(t)
	bp := filePane(t, ap.bob, demoBob, demoAlice, PaneOptions{Compose: true})
	var theirs engine.HistoryEntry
	for _, e := range bp.tl().Entries() {
		if e.Direction == engine.DirectionIn {
			theirs = e
		}
	}
	// The keys never choose another's message for a delete: ask as they
	// would.
	acted := act(t, bp, func() tea.Msg {
		return timeline.ActionMsg{Peer: demoAlice, Content: wire.ContentDelete, Target: theirs}
	})
	var re *engine.ActionRefusedError
	if !errors.As(acted.Err, &re) || re.Reason != engine.DiscardNotAuthor {
		t.Fatalf("the engine answered %v, want not_author", acted.Err)
	}
	if v := screen(bp); !strings.Contains(v, "delete refused: only its author edits or deletes a message") {
		t.Fatalf("the refusal is not in the status bar:\n%s", v)
	}
	press(bp, alt('2'))
	if v := screen(bp); strings.Contains(v, "refused") {
		t.Fatalf("the refusal outlived the next key:\n%s", v)
	}
	*bp, _ = bp.Update(timeline.NoticeMsg{Text: "bad \x1b[2J\x07news"})
	if v := bp.View(); strings.Contains(v, "\x1b[2J") || strings.Contains(v, "\x07") || !strings.Contains(ansi.Strip(v), "bad [2Jnews") {
		t.Fatalf("a notice is not cleaned:\n%q", ansi.Strip(v))
	}
}

// TestActionKeysWithNothingToActOn: e in a conversation without a
// message of one's own says so in the status bar.
func TestActionKeysWithNothingToActOn(t *testing.T) {
	ctx := context.Background()
	net := enginetest.NewNetwork()
	blobs, err := enginetest.NewBlobs(filepath.Join(t.TempDir(), "blobs"))
	if err != nil {
		t.Fatal(err)
	}
	alice, bob := openFileClient(t, net, blobs, demoAlice), openFileClient(t, net, blobs, demoBob)
	for _, c := range []*engine.Client{alice, bob} {
		if err := c.RefreshPreKeys(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := alice.Send(ctx, demoBob, []byte("only alice writes")); err != nil {
		t.Fatal(err)
	}
	if _, err := bob.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := bob.Commit(ctx, demoAlice, mustPendingID(t, bob)); err != nil {
		t.Fatal(err)
	}
	bp := filePane(t, bob, demoBob, demoAlice, PaneOptions{})
	*bp, _ = bp.Update(msgOf[timeline.NoticeMsg](t, press(bp, alt('2'), runes("e"))))
	if v := screen(bp); !strings.Contains(v, "edit: none of your messages here") {
		t.Fatalf("e says nothing:\n%s", v)
	}
}

func mustPendingID(t *testing.T, c *engine.Client) wire.LogicalID {
	t.Helper()
	pend, err := c.PendingInbound(context.Background(), engine.PageQuery{Limit: 1})
	if err != nil || len(pend) == 0 {
		t.Fatalf("nothing pending (%v)", err)
	}
	return pend[0].ID
}

// TestActionsFitAt80x24: the picker, a reply's quote over the composer
// and a refusal in the status bar keep the screen at 80x24.
func TestActionsFitAt80x24(t *testing.T) {
	ap := newActionPair(t)
	bp := filePane(t, ap.bob, demoBob, demoAlice, PaneOptions{Compose: true, ChatFirst: true})
	*bp, _ = bp.Update(msgOf[timeline.LoadedMsg](t, tea.Batch(bp.SetSize(80, 24), bp.tl().Reload())))
	fits := func(what, want string) {
		t.Helper()
		v := bp.View()
		lines := strings.Split(v, "\n")
		if len(lines) != 24 {
			t.Fatalf("%s: %d lines, want 24:\n%s", what, len(lines), ansi.Strip(v))
		}
		for i, l := range lines {
			if w := ansi.StringWidth(l); w != 80 {
				t.Fatalf("%s: line %d is %d cells wide, want 80:\n%s", what, i, w, ansi.Strip(v))
			}
		}
		if !strings.Contains(ansi.Strip(v), want) {
			t.Fatalf("%s: %q not on screen:\n%s", what, want, ansi.Strip(v))
		}
	}
	press(bp, alt('2'), runes("+"))
	fits("the picker", "react[1👍]")
	press(bp, esc)
	*bp, _ = bp.Update(msgOf[timeline.ActionMsg](t, press(bp, runes("r"))))
	fits("a reply", "↪ replying to you: “hi alice”")
	*bp, _ = bp.Update(composer.ActedMsg{Req: engine.ActionRequest{Peer: demoAlice, Content: wire.ContentReaction, Emoji: "👍"},
		Err: &engine.ActionRefusedError{Reason: engine.DiscardWindowPassed}})
	fits("a refusal", "reaction refused: more than 24 hours after the message")
}
