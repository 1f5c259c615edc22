package composer

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/themes"
	"github.com/parley-chat/parley/wire"
)

// groupSender is a sender that also writes to groups, leaving the lanes in
// unsent pending.
type groupSender struct {
	sender
	groups []string
	unsent []engine.Address
}

func (g *groupSender) SendGroup(_ context.Context, id wire.GroupID, body []byte) (engine.GroupSendResult, error) {
	g.groups = append(g.groups, string(id[:1])+":"+string(body))
	return engine.GroupSendResult{ID: wire.LogicalID{9}, Unsent: g.unsent}, nil
}

// TestSendToGroup: addressed to a group, enter sends there and not to the
// peer; lanes left unsent make a MessageNotSentError (stored, pending); a
// source without groups, or a body over the group limit, is refused before
// anything is sent; SetPeer addresses the peer again.
func TestSendToGroup(t *testing.T) {
	src := &groupSender{}
	m := New(context.Background(), src, themes.MustGet("dark"))
	m.SetSize(60, 4)
	m.Focus()
	m.SetPeer(bob)
	m.SetGroup(wire.GroupID{'g'}, "team")
	if !m.Peer().IsZero() || m.Group() == nil || m.GroupName() != "team" {
		t.Fatalf("after SetGroup: peer %v, group %v %q", m.Peer(), m.Group(), m.GroupName())
	}
	m = typeText(m, "hi all")
	m, cmd := m.Update(enter)
	res := cmd().(SentMsg)
	if res.Err != nil || res.Group == nil || *res.Group != (wire.GroupID{'g'}) || len(src.groups) != 1 || src.groups[0] != "g:hi all" || len(src.sent) != 0 {
		t.Fatalf("sent %+v; groups %q, peers %q", res, src.groups, src.sent)
	}
	m, _ = m.Update(res)

	src.unsent = []engine.Address{bob}
	m = typeText(m, "again")
	m, cmd = m.Update(enter)
	res = cmd().(SentMsg)
	var nse *engine.MessageNotSentError
	if !errors.As(res.Err, &nse) || len(res.Unsent) != 1 || !strings.Contains(res.Err.Error(), "bob/1") {
		t.Fatalf("lanes left unsent: %+v, want a MessageNotSentError naming bob/1", res)
	}
	m, _ = m.Update(res)
	if m.Value() != "" {
		t.Errorf("a stored message came back to edit: %q", m.Value())
	}

	if err := m.Check(strings.Repeat("x", MaxGroupBody+1)); err == nil || !strings.Contains(err.Error(), "message_too_large") {
		t.Errorf("a body over the group limit: %v", err)
	}
	plain := New(context.Background(), &sender{}, themes.MustGet("dark"))
	plain.SetGroup(wire.GroupID{'g'}, "team")
	if err := plain.Check("hi"); err == nil {
		t.Error("a source without groups accepted a group message")
	}
	m.SetPeer(bob)
	if m.Group() != nil || m.Peer() != bob {
		t.Errorf("after SetPeer: group %v, peer %v", m.Group(), m.Peer())
	}
}
