package cli

import (
	"fmt"
	"testing"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/wire"
)

// A sibling's copy of an action is reported as the action it is: a
// reaction copy applied here names its target and emoji, one that waits
// for its target says so, and a reply copy keeps its text and names what
// it answers. A text copy is unchanged.
func TestSentCopyFields(t *testing.T) {
	to := engine.MustParseAddress("alice/1")
	from := engine.MustParseAddress("bob/2")
	target := wire.LogicalID{7}
	render := func(r engine.ReceiveResult) string {
		m := map[string]any{}
		for _, f := range resultFields(r) {
			m[f.k] = f.v
		}
		return fmt.Sprint(m)
	}
	base := engine.ReceiveResult{Kind: engine.ResultSentCopy, Sender: from, CopyTo: &to, ID: wire.LogicalID{1}}

	reaction := base
	reaction.Content = wire.ContentReaction
	reaction.Action = &engine.AppliedAction{Content: wire.ContentReaction, Target: target, Emoji: "👍"}
	if got, want := render(reaction), fmt.Sprint(map[string]any{"kind": "sent_copy", "sender": "bob/2", "id": hexID(base.ID), "to": "alice/1", "action": "reacted", "applied": true, "target": hexID(target), "emoji": "👍", "remove": false}); got != want {
		t.Errorf("reaction copy:\n got %s\nwant %s", got, want)
	}

	waiting := base
	waiting.Content = wire.ContentEdit
	if got, want := render(waiting), fmt.Sprint(map[string]any{"kind": "sent_copy", "sender": "bob/2", "id": hexID(base.ID), "to": "alice/1", "action": "edited", "applied": false}); got != want {
		t.Errorf("waiting edit copy:\n got %s\nwant %s", got, want)
	}

	reply := base
	reply.Content = wire.ContentReply
	reply.Body = []byte("sure")
	reply.Action = &engine.AppliedAction{Content: wire.ContentReply, Target: target, Text: []byte("sure")}
	if got := render(reply); got != fmt.Sprint(map[string]any{"kind": "sent_copy", "sender": "bob/2", "id": hexID(base.ID), "to": "alice/1", "body": "sure", "body_b64": "c3VyZQ==", "reply_to": hexID(target)}) {
		t.Errorf("reply copy: %s", got)
	}

	text := base
	text.Body = []byte("hello")
	if got := render(text); got != fmt.Sprint(map[string]any{"kind": "sent_copy", "sender": "bob/2", "id": hexID(base.ID), "to": "alice/1", "body": "hello", "body_b64": "aGVsbG8="}) {
		t.Errorf("text copy: %s", got)
	}
}

// TestDecisionHeardFields: a decision heard that this device refused to
// keep names why ("error", the error's name); one kept carries no error.
// Before the fix the error was left out and the refusal looked like any
// decision heard.
func TestDecisionHeardFields(t *testing.T) {
	from, on := engine.MustParseAddress("alice/1"), engine.MustParseAddress("bob/1")
	r := engine.ReceiveResult{Kind: engine.ResultDecisionHeard, Sender: on, ID: wire.LogicalID{1},
		Decided: &engine.KeptDecision{Sender: from, ID: wire.LogicalID{2}, Outcome: engine.OutcomeDiscarded, On: on}}
	fields := func(r engine.ReceiveResult) map[string]any {
		m := map[string]any{}
		for _, f := range resultFields(r) {
			m[f.k] = f.v
		}
		return m
	}
	if m := fields(r); m["error"] != nil || m["outcome"] != "discarded" {
		t.Errorf("a decision heard: %v", m)
	}
	r.Err = fmt.Errorf("decision on a sibling's copy: %w", engine.ErrDecisionOwnMessage)
	if m := fields(r); m["error"] != "decision_own_message" || m["outcome"] != "discarded" {
		t.Errorf("a decision heard and refused: %v; want error decision_own_message", m)
	}
	r.Err = engine.ErrDecisionMismatch
	if m := fields(r); m["error"] != "decision_mismatch" {
		t.Errorf("a decision heard with another action: %v; want error decision_mismatch", m)
	}
}
