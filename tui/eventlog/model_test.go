package eventlog

import (
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
	bob = engine.MustParseAddress("bob/1")
	at  = time.Date(2026, 11, 2, 12, 0, 0, 0, time.Local)
	id  = wire.LogicalID{0xab, 0xcd, 0xef, 0x01}
)

func received(r engine.ReceiveResult) engine.Event {
	r.Sender = bob
	return engine.Event{Kind: engine.EventReceived, At: at, Peer: bob, ID: r.ID, Result: &r}
}

// TestNames: every receive result and error is logged by its name.
func TestNames(t *testing.T) {
	react, err := wire.EncodeAction(wire.Action{Content: wire.ContentReaction, Target: id, Emoji: "👍"})
	if err != nil {
		t.Fatal(err)
	}
	applied := &engine.AppliedAction{Content: wire.ContentReaction, Target: id, Emoji: "👍"}
	for _, tc := range []struct {
		ev         engine.Event
		name, text string
	}{
		{received(engine.ReceiveResult{Kind: engine.ResultDelivery, ID: id, Body: []byte("hi")}), "delivery", `from bob/1 abcdef01 "hi"`},
		{received(engine.ReceiveResult{Kind: engine.ResultDelivery, ID: id, Content: wire.ContentReaction, Body: react}), "delivery", "from bob/1 abcdef01 reacts 👍 to message abcdef01 (pending"},
		{received(engine.ReceiveResult{Kind: engine.ResultDelivery, ID: id, Content: wire.ContentReaction, Body: react, Action: applied}), "applied", "from bob/1 abcdef01: reaction 👍 to message abcdef01"},
		{received(engine.ReceiveResult{Kind: engine.ResultApplied, ID: id, Action: applied}), "applied", "reaction 👍 to message abcdef01 (waited for its target)"},
		{received(engine.ReceiveResult{Kind: engine.ResultActionDiscarded, ID: id, Reason: engine.DiscardNotAuthor}), "action_discarded", "discarded (not_author)"},
		{received(engine.ReceiveResult{Kind: engine.ResultAlreadyCommitted, ID: id, AckSent: true}), "already_committed", "ACK sent again"},
		{received(engine.ReceiveResult{Kind: engine.ResultAlreadyCommitted, ID: id}), "already_committed", "ACK not sent"},
		{received(engine.ReceiveResult{Kind: engine.ResultAlreadyDiscarded, ID: id, AckSent: true}), "already_discarded", "ACK sent again"},
		{received(engine.ReceiveResult{Kind: engine.ResultAcknowledgement, ID: id, Cleared: true}), "acknowledgement", "cleared"},
		{received(engine.ReceiveResult{Kind: engine.ResultAcknowledgement, ID: id}), "acknowledgement", "not cleared"},
		{received(engine.ReceiveResult{Kind: engine.ResultAcknowledgement}), "acknowledgement", "winning session is announced"},
		{received(engine.ReceiveResult{Kind: engine.ResultGroupChanged, Group: &wire.GroupID{0x03, 0x8b, 0, 0x17}, Generation: 1}), "group_changed", "from bob/1: the roster of group #038b0017 changed (generation 1)"},
		{received(engine.ReceiveResult{Kind: engine.ResultNotAMember, ID: id, Group: &wire.GroupID{0x03, 0x8b, 0, 0x17}}), "not_a_member", "not in bob/1's roster of group #038b0017; the lane of abcdef01 to it ended"},
		{received(engine.ReceiveResult{Kind: engine.ResultError, Err: fmt.Errorf("x: %w", engine.ErrSessionCollision)}), "session_collision", "ours won"},
		{received(engine.ReceiveResult{Kind: engine.ResultError, Err: engine.ErrStaleSessionInitiation}), "stale_session_initiation", "must retry"},
		{received(engine.ReceiveResult{Kind: engine.ResultError, Err: engine.ErrIdentityChanged}), "identity_changed", "new identity"},
		{received(engine.ReceiveResult{Kind: engine.ResultError, Err: engine.ErrLogicalMessageConflict}), "logical_message_conflict", "another body"},
		{received(engine.ReceiveResult{Kind: engine.ResultError, Err: engine.ErrConflict}), "conflict", "state changed"},
		{received(engine.ReceiveResult{Kind: engine.ResultError, Err: engine.ErrDuplicateMessage}), "duplicate_message", ""},
		{received(engine.ReceiveResult{Kind: engine.ResultError, Err: engine.ErrDecrypt}), "decryption_failed", ""},
		{engine.Event{Kind: engine.EventSent, Peer: bob, ID: id}, "relay_accepted", "to bob/1 abcdef01"},
		{engine.Event{Kind: engine.EventNotSent, Peer: bob, ID: id, Err: errors.New("down")}, "message_not_sent", "down"},
		{engine.Event{Kind: engine.EventFinalized, Peer: bob, ID: id, Outcome: engine.OutcomeCommitted, AckSent: true}, "committed", "ACK sent"},
		{engine.Event{Kind: engine.EventFinalized, Peer: bob, ID: id, Outcome: engine.OutcomeDiscarded}, "discarded", "ACK not sent"},
		{engine.Event{Kind: engine.EventAbandoned, Peer: bob, ID: id}, "abandoned", "not a recall"},
		{engine.Event{Kind: engine.EventIdentityAccepted, Peer: bob}, "identity_accepted", "retry resends"},
		{engine.Event{Kind: engine.EventResync, Err: engine.ErrStateResyncRequired}, "state_resync_required", "read again"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := FromEvent(tc.ev)
			if e.Name != tc.name || !strings.Contains(e.Text, tc.text) {
				t.Fatalf("got %q %q, want %q containing %q", e.Name, e.Text, tc.name, tc.text)
			}
		})
	}
}

func TestScrollAndCapacity(t *testing.T) {
	m := New(themes.MustGet("dark"))
	m.SetSize(60, 5) // four rows
	m.Focus()
	for i := 0; i < Capacity+10; i++ {
		m.Add(Entry{At: at, Name: "n", Text: fmt.Sprint(i)})
	}
	if got := len(m.Entries()); got != Capacity || m.Entries()[0].Text != "10" {
		t.Fatalf("kept %d from %q, want %d from the 11th", got, m.Entries()[0].Text, Capacity)
	}
	if v := m.View(); !strings.Contains(v, fmt.Sprint(Capacity+9)) {
		t.Fatalf("the newest entry is not shown:\n%s", v)
	}
	m, _ = m.Update(tea.KeyMsg{Type: tea.KeyPgUp})
	m.Add(Entry{At: at, Name: "n", Text: "newer"})
	if v := m.View(); strings.Contains(v, " n newer") || !strings.Contains(v, "n 2005") || !strings.Contains(v, "5 newer below") {
		t.Fatalf("a log scrolled back should stay where it is:\n%s", v)
	}
	m, _ = m.Update(tea.KeyMsg{Type: tea.KeyEnd})
	if v := m.View(); !strings.Contains(v, " n newer") {
		t.Fatalf("end should follow again:\n%s", v)
	}
}

// TestOpenInFull: enter shows the marked entry's whole text, wrapped, which
// the line cuts; esc goes back, and up marks an older entry.
func TestOpenInFull(t *testing.T) {
	m := New(themes.MustGet("dark"))
	m.SetSize(40, 8)
	m.Focus()
	long := "the relay refused the envelope because the sender's share of the mailbox is full; the message stays pending"
	m.Add(Entry{At: at, Name: "first", Text: "short"}, Entry{At: at, Name: "message_not_sent", Text: long, Level: Error})
	if strings.Contains(m.View(), "stays pending") {
		t.Fatal("the list shows the whole text already; the test needs a longer one")
	}
	m, _ = m.Update(tea.KeyMsg{Type: tea.KeyEnter})
	v := m.View()
	if !strings.Contains(v, "message_not_sent") || !strings.Contains(v, "stays pending") || !strings.Contains(v, "back to the list") {
		t.Fatalf("enter did not open the newest entry in full:\n%s", v)
	}
	m, _ = m.Update(tea.KeyMsg{Type: tea.KeyEsc})
	m, _ = m.Update(tea.KeyMsg{Type: tea.KeyUp})
	m, _ = m.Update(tea.KeyMsg{Type: tea.KeyEnter})
	if v := m.View(); !strings.Contains(v, "Event") || !strings.Contains(v, "first") || strings.Contains(v, "stays pending") {
		t.Fatalf("up then enter did not open the older entry:\n%s", v)
	}
}
