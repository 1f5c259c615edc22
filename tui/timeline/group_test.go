package timeline

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"
	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/themes"
	"github.com/parley-chat/parley/wire"
)

type groupHistory struct {
	entries   []engine.GroupEntry
	members   []string
	waiting   []engine.InboundMessage
	finalized *[]engine.FinalizeRequest
}

func (s groupHistory) Group(_ context.Context, id wire.GroupID) (engine.GroupInfo, error) {
	g := engine.GroupInfo{ID: id, Name: "team"}
	for _, m := range s.members {
		g.Roster.Members = append(g.Roster.Members, wire.RosterMember{Address: m})
	}
	return g, nil
}

func (s groupHistory) PendingInbound(_ context.Context, q engine.PageQuery) ([]engine.InboundMessage, error) {
	var out []engine.InboundMessage
	for _, w := range s.waiting {
		if q.Peer == nil || w.Sender == *q.Peer {
			out = append(out, w)
		}
	}
	return out, nil
}

func (s groupHistory) FinalizeBatch(_ context.Context, reqs []engine.FinalizeRequest) ([]engine.FinalizeResult, error) {
	*s.finalized = append(*s.finalized, reqs...)
	return make([]engine.FinalizeResult, len(reqs)), nil
}

func (s groupHistory) GroupHistory(_ context.Context, _ wire.GroupID, after int64, limit int) ([]engine.GroupEntry, error) {
	var out []engine.GroupEntry
	for _, e := range s.entries {
		if e.Seq > after && len(out) < limit {
			out = append(out, e)
		}
	}
	return out, nil
}

// TestGroupView: each message once with its sender; one's own message
// with its matrix, which l opens to the lanes.
func TestGroupView(t *testing.T) {
	at := time.Date(2026, 1, 2, 10, 0, 0, 0, time.UTC)
	a := engine.MustParseAddress
	src := groupHistory{entries: []engine.GroupEntry{
		{Seq: 1, Sender: a("bob/1"), At: at, Body: []byte("hello all")},
		{Seq: 2, Own: true, Sender: a("alice/1"), At: at.Add(time.Minute), Body: []byte("hi"), Lanes: []engine.Lane{
			{Recipient: a("bob/1"), State: engine.LaneAcknowledged}, {Recipient: a("carol/1"), State: engine.LanePending}}},
	}}
	g := NewGroup(context.Background(), src, themes.MustGet("dark"))
	g.SetSize(60, 10)
	g.SetNames(map[engine.Address]string{a("carol/1"): "carol"})
	g, _ = g.Update(g.SetGroup(wire.GroupID{1}, "team")())
	now := at.Add(2*time.Hour + time.Minute)
	v := ansi.Strip(g.View(now, true))
	for _, want := range []string{"# team", "10:00:00 bob/1 hello all", "10:01:00 you hi", "✓ 1/2 · carol pending 2h"} {
		if !strings.Contains(v, want) {
			t.Errorf("view lacks %q:\n%s", want, v)
		}
	}
	if strings.Contains(v, "bob/1 acknowledged") {
		t.Errorf("lanes shown before l:\n%s", v)
	}
	g, _ = g.Update(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("l")})
	v = ansi.Strip(g.View(now, true))
	for _, want := range []string{"✓ bob/1 acknowledged", "· carol pending"} {
		if !strings.Contains(v, want) {
			t.Errorf("opened view lacks %q:\n%s", want, v)
		}
	}
}

// TestGroupViewImported: a group message a link's or a restore's import
// brought is marked imported; one received here is not.
func TestGroupViewImported(t *testing.T) {
	at := time.Date(2026, 1, 2, 10, 0, 0, 0, time.UTC)
	a := engine.MustParseAddress
	src := groupHistory{entries: []engine.GroupEntry{
		{Seq: 1, Sender: a("bob/1"), At: at, Body: []byte("from before"), Imported: &engine.Imported{At: at, Link: true}},
		{Seq: 2, Sender: a("bob/1"), At: at.Add(time.Minute), Body: []byte("since")},
	}}
	g := NewGroup(context.Background(), src, themes.MustGet("dark"))
	g.SetSize(60, 10)
	g, _ = g.Update(g.SetGroup(wire.GroupID{1}, "team")())
	v := ansi.Strip(g.View(at.Add(time.Hour), true))
	if !strings.Contains(v, "bob/1 from before imported") || strings.Contains(v, "since imported") {
		t.Errorf("want the first message alone marked imported:\n%s", v)
	}
}

// TestGroupViewWaiting: a group message still waiting shows in the group's
// view (not only in its sender's conversation), the header says what its
// counts are, c commits the oldest text, x asks and y discards, and d
// downloads a waiting file.
func TestGroupViewWaiting(t *testing.T) {
	at := time.Date(2026, 1, 2, 10, 0, 0, 0, time.UTC)
	a := engine.MustParseAddress
	gid := wire.GroupID{7}
	other := wire.GroupID{8}
	file := waitingFile(t, 3, "plan.pdf")
	file.Sender, file.Group, file.Seq = a("carol/1"), &gid, 3
	var done []engine.FinalizeRequest
	src := groupHistory{members: []string{"alice/1", "bob/1", "carol/1"}, finalized: &done,
		entries: []engine.GroupEntry{{Seq: 1, Sender: a("bob/1"), At: at, Body: []byte("hello all")}},
		waiting: []engine.InboundMessage{
			{Seq: 1, Sender: a("bob/1"), ID: wire.LogicalID{1}, Group: &gid, Body: []byte("lunch at noon?"), ReceivedAt: at.Add(time.Minute)},
			{Seq: 2, Sender: a("bob/1"), ID: wire.LogicalID{2}, Group: &other, Body: []byte("another group"), ReceivedAt: at.Add(time.Minute)},
			file,
		}}
	g := NewGroup(context.Background(), src, themes.MustGet("dark"))
	g.SetSize(90, 12)
	g, _ = g.Update(g.SetGroup(gid, "team")())
	v := ansi.Strip(g.View(at, true))
	flat := strings.Join(strings.Fields(v), " ")
	for _, want := range []string{"# team · 3 members · 1 shown · 2 waiting", "10:01:00 bob/1 lunch at noon? waiting · c commit · x discard",
		"carol/1 [file] plan.pdf · 20.0 MiB · application/pdf waiting · d download"} {
		if !strings.Contains(flat, want) {
			t.Errorf("view lacks %q:\n%s", want, v)
		}
	}
	if strings.Contains(v, "another group") {
		t.Errorf("a message of another group shows:\n%s", v)
	}
	press := func(k string) tea.Cmd {
		var cmd tea.Cmd
		g, cmd = g.Update(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune(k)})
		return cmd
	}
	msg := press("c")()
	fin, ok := msg.(FinalizedMsg)
	if !ok || len(done) != 1 || done[0].ID != (wire.LogicalID{1}) || done[0].Outcome != engine.OutcomeCommitted || fin.Group == nil || *fin.Group != gid {
		t.Fatalf("c: %#v, finalized %+v; want lunch at noon? committed from the group's view", msg, done)
	}
	g, _ = g.Update(fin)
	press("x")
	if v := ansi.Strip(g.View(at, true)); !strings.Contains(v, "y discards it") {
		t.Fatalf("x asks nothing:\n%s", v)
	}
	press("y")()
	if n := len(done); n != 2 || done[1].Outcome != engine.OutcomeDiscarded {
		t.Fatalf("y: finalized %+v, want a discard", done)
	}
	fetch, ok := press("d")().(FetchMsg)
	if !ok || fetch.ID != file.ID || fetch.Name != "plan.pdf" {
		t.Fatalf("d asked %+v, want the file's download", fetch)
	}
	g, _ = g.Update(FetchedMsg{Sender: file.Sender, ID: file.ID, Name: "plan.pdf", Path: "/tmp/dl/plan.pdf"})
	if v := ansi.Strip(g.View(at, true)); !strings.Contains(v, "saved plan.pdf as /tmp/dl/plan.pdf · o opens it") {
		t.Fatalf("the download's end is not said:\n%s", v)
	}
	g, _ = g.Update(OpenedMsg{Path: "/tmp/dl/plan.pdf", Err: errors.New("no xdg-open on this system")})
	if v := ansi.Strip(g.View(at, true)); !strings.Contains(v, "open_failed: no xdg-open on this system") {
		t.Fatalf("a failed open is not said on screen:\n%s", v)
	}
}

// TestGroupPreviewUnderThePicture: a picture downloaded in a group is
// drawn under its message.
func TestGroupPreviewUnderThePicture(t *testing.T) {
	at := time.Date(2026, 1, 2, 10, 0, 0, 0, time.UTC)
	gid := wire.GroupID{7}
	id := wire.LogicalID{9}
	src := groupHistory{members: []string{"alice/1", "bob/1"}, finalized: &[]engine.FinalizeRequest{},
		entries: []engine.GroupEntry{{Seq: 1, Sender: engine.MustParseAddress("bob/1"), ID: id, At: at, Body: []byte("[file] cat.png")}}}
	g := NewGroup(context.Background(), src, themes.MustGet("dark"))
	g.SetSize(90, 12)
	g, _ = g.Update(g.SetGroup(gid, "team")())
	g.fetching[id] = true
	g, _ = g.Update(FetchedMsg{Sender: engine.MustParseAddress("bob/1"), ID: id, Name: "cat.png", Path: "/tmp/dl/cat.png", Preview: []string{"PIXELS-ROW-1", "PIXELS-ROW-2"}})
	v := ansi.Strip(g.View(at, true))
	row := strings.Index(v, "[file] cat.png")
	if row < 0 || !strings.Contains(v[row:], "PIXELS-ROW-1") || !strings.Contains(v[row:], "PIXELS-ROW-2") {
		t.Fatalf("the picture is not drawn under its message:\n%s", v)
	}
}
