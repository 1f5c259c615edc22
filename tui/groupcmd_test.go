package tui

import (
	"context"
	"strings"
	"testing"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/engine/enginetest"
	"github.com/parley-chat/parley/themes"
	"github.com/parley-chat/parley/tui/conversations"
	"github.com/parley-chat/parley/wire"
)

// TestGroupCommandOnTheEngine: the group command line's create and remove
// run on a real client and are noted in the events.
func TestGroupCommandOnTheEngine(t *testing.T) {
	net := enginetest.NewNetwork()
	ctx := context.Background()
	alice := openTestClient(t, net, demoAlice)
	for _, c := range []*engine.Client{alice, openTestClient(t, net, demoBob), openTestClient(t, net, demoCarol)} {
		if err := c.RefreshPreKeys(ctx); err != nil {
			t.Fatal(err)
		}
	}
	done := make(chan struct{})
	t.Cleanup(func() { close(done) })
	m := New(ctx, themes.MustGet("dark"), discard, fixedClock)
	p := &m.panes[m.AddPane(demoAlice, &Attachment{Client: alice, Events: make(chan engine.Event), Done: done}, PaneOptions{Compose: true})]

	run := func(c conversations.GroupCommandMsg) {
		t.Helper()
		msg := p.runGroupCommand(c)().(groupDoneMsg)
		if msg.err != nil {
			t.Fatalf("%+v: %v", c, msg.err)
		}
		p.groupDone(msg) // the conversations' read it asks for coalesces with the first, never run here
	}
	run(conversations.GroupCommandMsg{Create: true, Name: "team", Members: []engine.Address{demoBob, demoCarol}})
	groups, err := alice.Groups(ctx)
	if err != nil || len(groups) != 1 || len(groups[0].Roster.Members) != 3 {
		t.Fatalf("after create: %+v, %v; want one group of three", groups, err)
	}
	run(conversations.GroupCommandMsg{Name: "team", Group: groups[0].ID, Op: wire.RosterRemove, Members: []engine.Address{demoCarol}})
	g, err := alice.Group(ctx, groups[0].ID)
	if err != nil || g.Roster.Has(demoCarol.String()) || !g.Roster.Has(demoBob.String()) {
		t.Fatalf("after remove: %+v, %v; want bob without carol", g.Roster, err)
	}
	var log strings.Builder
	for _, e := range p.ev().Entries() {
		log.WriteString(e.Text + "\n")
	}
	for _, want := range []string{"created #team with bob/1, carol/1", "removed carol/1 in #team"} {
		if !strings.Contains(log.String(), want) {
			t.Errorf("the events lack %q:\n%s", want, log.String())
		}
	}
}
