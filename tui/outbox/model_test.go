package outbox

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/themes"
	"github.com/parley-chat/parley/wire"
)

var (
	bob   = engine.MustParseAddress("bob/1")
	carol = engine.MustParseAddress("carol/1")
)

type sentList struct {
	// people are the users whose devices fold into one conversation,
	// with its address (a held device list).
	people    map[string]engine.Address
	msgs      []engine.OutboundMessage
	retried   []engine.Address
	abandoned []wire.LogicalID
	retryErr  map[engine.Address]error
}

func newSent(peers ...engine.Address) *sentList {
	s := &sentList{retryErr: map[engine.Address]error{}}
	for i, p := range peers {
		s.msgs = append(s.msgs, engine.OutboundMessage{Seq: int64(i + 1), Recipient: p, ID: wire.LogicalID{byte(i + 1)}, Body: []byte(fmt.Sprintf("to %s %d", p, i+1))})
	}
	return s
}

func (s *sentList) PendingOutbound(_ context.Context, q engine.PageQuery) ([]engine.OutboundMessage, error) {
	var out []engine.OutboundMessage
	for _, m := range s.msgs {
		if m.Seq > q.After && len(out) < q.Limit {
			out = append(out, m)
		}
	}
	return out, nil
}

func (s *sentList) CountOutbound(context.Context, *engine.Address) (int, error) {
	return len(s.msgs), nil
}

func (s *sentList) Retry(_ context.Context, peer engine.Address) ([]wire.LogicalID, error) {
	s.retried = append(s.retried, peer)
	var ids []wire.LogicalID
	for _, m := range s.msgs {
		if m.Recipient == peer {
			if err := s.retryErr[peer]; err != nil {
				return ids, &engine.MessageNotSentError{ID: m.ID, Err: err}
			}
			ids = append(ids, m.ID)
		}
	}
	return ids, nil
}

func (s *sentList) Abandon(_ context.Context, peer engine.Address, id wire.LogicalID) error {
	for i, m := range s.msgs {
		if m.ID == id && m.Recipient == peer {
			s.msgs = append(s.msgs[:i], s.msgs[i+1:]...)
			s.abandoned = append(s.abandoned, id)
			return nil
		}
	}
	return engine.ErrNotPending
}

func (s *sentList) ConversationsByPerson(context.Context) ([]engine.Conversation, error) {
	n := map[engine.Address]int{}
	var order []engine.Address
	for _, m := range s.msgs {
		if n[m.Recipient] == 0 {
			order = append(order, m.Recipient)
		}
		n[m.Recipient]++
	}
	var out []engine.Conversation
	person := map[engine.Address]int{}
	for _, p := range order {
		c := engine.Conversation{Peer: p, PendingOut: n[p]}
		conv, ok := s.people[p.User]
		if !ok {
			out = append(out, c)
			continue
		}
		i, ok := person[conv]
		if !ok {
			i, person[conv] = len(out), len(out)
			out = append(out, engine.Conversation{Peer: conv, Devices: []engine.Conversation{}})
		}
		out[i].PendingOut += c.PendingOut
		out[i].Devices = append(out[i].Devices, c)
	}
	return append(out, engine.Conversation{Peer: engine.MustParseAddress("dave/1")}), nil
}

func press(s string) tea.KeyMsg {
	if s == "down" {
		return tea.KeyMsg{Type: tea.KeyDown}
	}
	return tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune(s)}
}

func step(m Model, cmd tea.Cmd) Model {
	for cmd != nil {
		m, cmd = m.Update(cmd())
	}
	return m
}

func newOutbox(s *sentList) Model {
	m := New(context.Background(), s, themes.MustGet("dark"))
	m = step(m, m.SetSize(70, 8))
	m.Focus()
	return step(m, m.Reload())
}

func TestRetry(t *testing.T) {
	s := newSent(bob, carol, bob)
	m := newOutbox(s)
	m = step(m.Update(press("down")))
	m = step(m.Update(press("r")))
	if len(s.retried) != 1 || s.retried[0] != carol {
		t.Fatalf("r retried %v, want carol/1 (the selected message's peer)", s.retried)
	}
	if !strings.Contains(m.View(), "retry: 1 handed off to carol/1") {
		t.Fatalf("status:\n%s", m.View())
	}
	s.retried = nil
	s.retryErr[bob] = errors.New("relay down")
	m = step(m.Update(press("R")))
	if len(s.retried) != 2 {
		t.Fatalf("R retried %v, want bob/1 and carol/1 (and not dave/1, who has nothing pending)", s.retried)
	}
	if v := m.View(); !strings.Contains(v, "retry: 1 handed off to 2 peers; bob/1: message_not_sent") {
		t.Fatalf("a failing peer should not stop the others, and be named:\n%s", v)
	}
}

// TestRetryPerson: retrying bob's conversation, bob being a person whose
// list is held, hands off the lanes of both his devices (asked by either
// address), a failure on bob/1 not stopping bob/2; retrying everything
// counts bob once among the conversations.
func TestRetryPerson(t *testing.T) {
	bob2 := engine.MustParseAddress("bob/2")
	s := newSent(bob, bob2, carol, bob2)
	s.people = map[string]engine.Address{"bob": bob}
	for _, peer := range []engine.Address{bob, bob2} {
		s.retried = nil
		msg, _ := RetryConversation(context.Background(), s, peer)().(RetriedMsg)
		if fmt.Sprint(s.retried) != "[bob/1 bob/2]" || msg.Sent != 3 || msg.Err != nil {
			t.Fatalf("RetryConversation(%s) retried %v: %+v; want bob/1 and bob/2, 3 handed off", peer, s.retried, msg)
		}
		if got, want := DescribeRetry(msg), "3 handed off to bob/1 (2 devices)"; got != want {
			t.Errorf("DescribeRetry = %q, want %q", got, want)
		}
	}
	s.retried = nil
	s.retryErr[bob] = errors.New("relay down")
	msg, _ := RetryConversation(context.Background(), s, bob)().(RetriedMsg)
	if fmt.Sprint(s.retried) != "[bob/1 bob/2]" || msg.Sent != 2 || msg.Peer != bob {
		t.Fatalf("with bob/1 failing: retried %v: %+v; want bob/2 handed off still, bob/1 named", s.retried, msg)
	}
	s.retried = nil
	m := newOutbox(s)
	m = step(m.Update(press("R")))
	if fmt.Sprint(s.retried) != "[bob/1 bob/2 carol/1]" {
		t.Fatalf("R retried %v, want bob's two devices and carol", s.retried)
	}
	if v := m.View(); !strings.Contains(v, "retry: 3 handed off to 2 peers (3 devices); bob/1: message_not_sent") {
		t.Fatalf("R's status should count bob once:\n%s", v)
	}
}

func TestStatesShown(t *testing.T) {
	s := newSent(bob, bob)
	m := newOutbox(s)
	m = step(m.Update(engine.Event{Kind: engine.EventSent, Peer: bob, ID: wire.LogicalID{1}}))
	m = step(m.Update(engine.Event{Kind: engine.EventNotSent, Peer: bob, ID: wire.LogicalID{2}, Err: errors.New("down")}))
	v := m.View()
	if !strings.Contains(v, "relay accepted") || !strings.Contains(v, "not sent") {
		t.Fatalf("states missing:\n%s", v)
	}
	s.msgs = s.msgs[1:]
	m = step(m.Update(engine.Event{Kind: engine.EventReceived, Result: &engine.ReceiveResult{Kind: engine.ResultAcknowledgement, Sender: bob, ID: wire.LogicalID{1}, Cleared: true}}))
	if v := m.View(); strings.Contains(v, "relay accepted") || !strings.Contains(v, "1 pending sent") {
		t.Fatalf("after the ACK:\n%s", v)
	}
}

func TestAbandonAsks(t *testing.T) {
	s := newSent(bob, carol, bob)
	m := newOutbox(s)
	m = step(m.Update(press("x")))
	if len(s.abandoned) != 0 || !strings.Contains(m.View(), "abandon 01000000 to bob/1? (not a recall) y/n") {
		t.Fatalf("x did not ask first:\n%s", m.View())
	}
	m = step(m.Update(press("y")))
	if len(s.abandoned) != 1 || m.Total() != 2 {
		t.Fatalf("abandoned %d (total %d), want 1 (2 left)", len(s.abandoned), m.Total())
	}
	m = step(m.Update(press("X")))
	m = step(m.Update(press("n")))
	if len(s.abandoned) != 1 {
		t.Fatal("n did not cancel abandon all")
	}
	m = step(m.Update(press("X")))
	m = step(m.Update(press("y")))
	if len(s.msgs) != 0 || !strings.Contains(m.View(), "abandoned 2") {
		t.Fatalf("abandon all left %d:\n%s", len(s.msgs), m.View())
	}
}

// TestReadBeforeSized: the first read happens before the panel has a size
// (one row fits); once it is sized the page is read again, and every
// pending message shows.
func TestReadBeforeSized(t *testing.T) {
	s := newSent(bob, bob, bob, bob, bob, bob, bob)
	m := New(context.Background(), s, themes.MustGet("dark"))
	m = step(m, m.Reload())
	if len(m.Page()) != 1 || m.Total() != 7 {
		t.Fatalf("before a size: %d shown of %d", len(m.Page()), m.Total())
	}
	cmd := m.SetSize(70, 12)
	if cmd == nil {
		t.Fatal("a larger panel did not read its page again")
	}
	m = step(m, cmd)
	if len(m.Page()) != 7 {
		t.Fatalf("after a size: %d shown of %d, want 7", len(m.Page()), m.Total())
	}
	if m.SetSize(70, 12) != nil {
		t.Fatal("the same size read the page again")
	}
}

// TestStatusExpires: the status line of a retry goes away after a while.
func TestStatusExpires(t *testing.T) {
	s := newSent(bob)
	m := newOutbox(s)
	m = step(m.Update(press("r")))
	if !strings.Contains(m.View(), "retry: ") {
		t.Fatalf("no retry status:\n%s", m.View())
	}
	m.ExpireStatus(time.Now())
	if !strings.Contains(m.View(), "retry: ") {
		t.Fatal("the status went away at once")
	}
	m.ExpireStatus(time.Now().Add(StatusLifetime))
	if strings.Contains(m.View(), "retry: ") {
		t.Fatalf("the status stayed:\n%s", m.View())
	}
}

// TestFileRowsShowTheFile: a pending file message (its body is the
// manifest, binary) is listed as the file's name, size and type, one to
// one and on a group lane, never as its raw bytes.
func TestFileRowsShowTheFile(t *testing.T) {
	body, err := wire.EncodeManifest(wire.FileManifest{Name: "holiday-video.mp4", Size: 20 << 20, MediaType: "video/mp4",
		ChunkSize: 64 << 10, Chunks: 320, Key: [32]byte{0x40, 0xfe}, Blob: wire.BlobID{0xd2, 0x51}})
	if err != nil {
		t.Fatal(err)
	}
	g := wire.GroupID{3, 0x8b}
	s := &sentList{retryErr: map[engine.Address]error{}, msgs: []engine.OutboundMessage{
		{Seq: 1, Recipient: bob, ID: wire.LogicalID{1}, Body: body, Content: wire.ContentFile},
		{Seq: 2, Recipient: bob, ID: wire.LogicalID{2}, Body: body, Content: wire.ContentFile, Group: &g},
	}}
	m := New(context.Background(), s, themes.MustGet("dark"))
	m = step(m, m.SetSize(120, 8))
	m = step(m, m.Reload())
	v := m.View()
	if n := strings.Count(v, "[file] holiday-video.mp4 · 20.0 MiB · video/mp4"); n != 2 {
		t.Fatalf("the file is listed by its name, size and type %d times, want 2 (one to one, and the lane):\n%s", n, v)
	}
	if strings.ContainsRune(v, '\ufffd') {
		t.Fatalf("the manifest's bytes are drawn:\n%s", v)
	}
}
