package tui

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"
	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/engine/enginetest"
	"github.com/parley-chat/parley/tui/composer"
	"github.com/parley-chat/parley/tui/conversations"
	"github.com/parley-chat/parley/tui/timeline"
	"github.com/parley-chat/parley/wire"
)

// groupTrio is alice, bob and carol in the group team, committing on
// arrival, with a message of alice's and one of carol's everyone has.
type groupTrio struct {
	t                 *testing.T
	ctx               context.Context
	alice, bob, carol *engine.Client
	team              wire.GroupID
}

func newGroupTrio(t *testing.T) *groupTrio {
	t.Helper()
	ctx := context.Background()
	net := enginetest.NewNetwork()
	blobs, err := enginetest.NewBlobs(filepath.Join(t.TempDir(), "blobs"))
	if err != nil {
		t.Fatal(err)
	}
	g := &groupTrio{t: t, ctx: ctx, alice: openFileClient(t, net, blobs, demoAlice), bob: openFileClient(t, net, blobs, demoBob), carol: openFileClient(t, net, blobs, demoCarol)}
	for _, c := range g.all() {
		c.SetPolicy(engine.Policy{Commit: engine.CommitOnArrival})
		if err := c.RefreshPreKeys(ctx); err != nil {
			t.Fatal(err)
		}
	}
	info, _, err := g.alice.CreateGroup(ctx, "team", []engine.Address{demoBob, demoCarol})
	if err != nil {
		t.Fatal(err)
	}
	g.team = info.ID
	g.deliver()
	if _, err := g.carol.SendGroup(ctx, g.team, []byte("carol's idea")); err != nil {
		t.Fatal(err)
	}
	g.deliver()
	if _, err := g.alice.SendGroup(ctx, g.team, []byte("the plan")); err != nil {
		t.Fatal(err)
	}
	g.deliver()
	return g
}

func (g *groupTrio) all() []*engine.Client { return []*engine.Client{g.alice, g.bob, g.carol} }

// deliver hands everyone's pending lanes to the relay and syncs everyone.
func (g *groupTrio) deliver() {
	g.t.Helper()
	for range 2 {
		for _, c := range g.all() {
			if _, err := c.Pump(g.ctx); err != nil {
				g.t.Fatal(err)
			}
			if _, err := c.Sync(g.ctx); err != nil {
				g.t.Fatal(err)
			}
		}
	}
}

// groupPane is a pane of c showing the group, at w x h.
func (g *groupTrio) groupPane(c *engine.Client, self, peer engine.Address, w, h int) *pane {
	g.t.Helper()
	p := filePane(g.t, c, self, peer, PaneOptions{Compose: true})
	p.SetSize(w, h)
	var cmd tea.Cmd
	*p, cmd = p.Update(conversations.SelectedMsg{Peer: peer, Group: &g.team, Name: "team"})
	*p, _ = p.Update(msgOf[timeline.GroupLoadedMsg](g.t, cmd))
	press(p, alt('2'))
	return p
}

func groupReload(t *testing.T, p *pane) {
	t.Helper()
	*p, _ = p.Update(msgOf[timeline.GroupLoadedMsg](t, p.tl().group.Reload()))
}

// TestGroupActionsShowOnMembersTimeline: alice replies to carol, reacts,
// edits and deletes from her group timeline; bob's group timeline shows
// the quoted reply, the reaction under the message with alice's name, the
// edit marked and the tombstone.
func TestGroupActionsShowOnMembersTimeline(t *testing.T) {
	g := newGroupTrio(t)
	ap := g.groupPane(g.alice, demoAlice, demoBob, 120, 40)

	// r on the newest message, alice's own "the plan".
	*ap, _ = ap.Update(msgOf[timeline.ActionMsg](t, press(ap, runes("r"))))
	if v := screen(ap); !strings.Contains(v, "↪ replying to you: “the plan”") {
		t.Fatalf("the composer does not quote the group's newest message:\n%s", v)
	}
	press(ap, runes("and the schedule"))
	acted := msgOf[composer.ActedMsg](t, press(ap, enter))
	if acted.Err != nil || acted.Req.Group == nil || *acted.Req.Group != g.team || acted.Req.Content != wire.ContentReply {
		t.Fatalf("the reply went %+v", acted)
	}
	*ap, _ = ap.Update(acted)

	// + 1 on the newest (the reply), e on it, then D on it with y.
	groupReload(t, ap)
	press(ap, alt('2'))
	if a := act(t, ap, press(ap, runes("+"), runes("1"))); a.Err != nil || a.Req.Emoji != "👍" || a.Req.Group == nil {
		t.Fatalf("react: %+v", a)
	}
	groupReload(t, ap)
	press(ap, alt('2'))
	*ap, _ = ap.Update(msgOf[timeline.ActionMsg](t, press(ap, runes("e"))))
	if got := ap.comp().Value(); got != "and the schedule" {
		t.Fatalf("the edit starts from %q", got)
	}
	ap.comp().SetValue("and the new schedule")
	acted = msgOf[composer.ActedMsg](t, press(ap, enter))
	if acted.Err != nil || acted.Req.Content != wire.ContentEdit || acted.Req.Group == nil {
		t.Fatalf("the edit went %+v", acted)
	}
	*ap, _ = ap.Update(acted)
	g.deliver()

	bp := g.groupPane(g.bob, demoBob, demoAlice, 120, 40)
	v := screen(bp)
	for _, want := range []string{"↪ alice/1: “the plan”", "and the new schedule edited", "👍 alice/1", "carol's idea"} {
		if !strings.Contains(v, want) {
			t.Fatalf("bob's group timeline lacks %q:\n%s", want, v)
		}
	}

	// v on bob's view: the versions of alice's edited reply.
	cmd := press(bp, runes("v"))
	*bp, cmd = bp.Update(msgOf[timeline.VersionsMsg](t, cmd))
	*bp, _ = bp.Update(msgOf[versionsMsg](t, cmd))
	if v := screen(bp); !strings.Contains(v, `original "and the schedule"`) || !strings.Contains(v, `edit 1 "and the new schedule"`) {
		t.Fatalf("v in the group does not show the versions:\n%s", v)
	}
	press(bp, esc, alt('2'))

	// D asks; y deletes the newest of alice's own: the reply.
	groupReload(t, ap)
	press(ap, alt('2'), runes("D"))
	if v := screen(ap); !strings.Contains(v, "delete “and the new schedule” for everyone?") {
		t.Fatalf("D does not ask:\n%s", v)
	}
	if a := act(t, ap, press(ap, runes("y"))); a.Err != nil || a.Req.Content != wire.ContentDelete {
		t.Fatalf("delete: %+v", a)
	}
	g.deliver()
	groupReload(t, bp)
	v = screen(bp)
	if !strings.Contains(v, "alice/1 message deleted") || strings.Contains(v, "new schedule") || strings.Contains(v, "👍") {
		t.Fatalf("bob's group timeline shows no tombstone:\n%s", v)
	}
}

// TestGroupEditDeleteRefusedToNonAuthor: bob, whose newest message in the
// group is none, gets a one-line refusal for e and D and nothing is sent;
// r and + act on alice's message; the screen keeps 80x24.
func TestGroupEditDeleteRefusedToNonAuthor(t *testing.T) {
	g := newGroupTrio(t)
	bp := g.groupPane(g.bob, demoBob, demoAlice, 80, 24)
	for _, k := range []string{"e", "D"} {
		n := msgOf[timeline.NoticeMsg](t, press(bp, runes(k)))
		*bp, _ = bp.Update(n)
		if !strings.Contains(n.Text, "refused: only its author edits or deletes a message") || strings.Contains(n.Text, "\n") {
			t.Fatalf("%s on alice's message: %q", k, n.Text)
		}
		v := bp.View()
		if lines := strings.Split(v, "\n"); len(lines) != 24 || !strings.Contains(ansi.Strip(v), "refused") {
			t.Fatalf("%s: the refusal is not on the 80x24 screen:\n%s", k, ansi.Strip(v))
		}
		for i, l := range strings.Split(v, "\n") {
			if w := ansi.StringWidth(l); w != 80 {
				t.Fatalf("%s: line %d is %d cells wide:\n%s", k, i, w, ansi.Strip(v))
			}
		}
	}
	if a := act(t, bp, press(bp, runes("+"), runes("6"))); a.Err != nil || a.Req.Emoji != "🎉" {
		t.Fatalf("bob's reaction: %+v", a)
	}
	// The engine refuses an edit of another's message too, said in one line.
	*bp, _ = bp.Update(composer.ActedMsg{Req: engine.ActionRequest{Group: &g.team, Content: wire.ContentEdit}, Err: &engine.ActionRefusedError{Reason: engine.DiscardNotAuthor}})
	if v := screen(bp); !strings.Contains(v, "edit refused: only its author edits or deletes a message") {
		t.Fatalf("the engine's refusal is not said:\n%s", v)
	}
	groupReload(t, bp)
	if v := screen(bp); !strings.Contains(v, "🎉 you") {
		t.Fatalf("bob's reaction is not under alice's message:\n%s", v)
	}
}

// TestGroupWaitingActionInWords: a member's reaction waiting for carol's
// decision reads as what it does, not as its encoded body.
func TestGroupWaitingActionInWords(t *testing.T) {
	g := newGroupTrio(t)
	g.carol.SetPolicy(engine.Policy{Commit: engine.CommitManual})
	bp := g.groupPane(g.bob, demoBob, demoAlice, 120, 40)
	if a := act(t, bp, press(bp, runes("+"), runes("1"))); a.Err != nil {
		t.Fatalf("bob's reaction: %+v", a)
	}
	g.deliver()
	cp := g.groupPane(g.carol, demoCarol, demoAlice, 120, 40)
	if v := screen(cp); !strings.Contains(v, "reacts 👍 to “the plan”") {
		t.Fatalf("carol's group view does not say what the waiting reaction does:\n%s", v)
	}
}
