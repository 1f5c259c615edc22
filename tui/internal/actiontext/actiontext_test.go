package actiontext

import (
	"strings"
	"testing"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/wire"
)

func encode(t *testing.T, a wire.Action) []byte {
	t.Helper()
	b, err := wire.EncodeAction(a)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestDescribe: each action said in words, its target quoted (or said to
// be missing or deleted), and the peer's text cleaned of control
// characters.
func TestDescribe(t *testing.T) {
	target := wire.LogicalID{7}
	known := func(body string, deleted bool) Lookup {
		return func(id wire.LogicalID) (engine.HistoryEntry, bool) {
			if id != target {
				return engine.HistoryEntry{}, false
			}
			return engine.HistoryEntry{ID: id, Body: []byte(body), Deleted: deleted}, true
		}
	}
	for _, tc := range []struct {
		a      wire.Action
		lookup Lookup
		want   string
	}{
		{wire.Action{Content: wire.ContentReaction, Target: target, Emoji: "👍"}, known("first words of a long message here", false), "reacts 👍 to “first words of a long m…”"},
		{wire.Action{Content: wire.ContentReaction, Target: target, Remove: true}, known("hi", false), "takes back the reaction to “hi”"},
		{wire.Action{Content: wire.ContentEdit, Target: target, Edit: 1, Text: []byte("new \x1b[2Jtext")}, known("old", false), "edits “old” to “new [2Jtext”"},
		{wire.Action{Content: wire.ContentDelete, Target: target}, known("bye", false), "deletes “bye” for everyone"},
		{wire.Action{Content: wire.ContentReply, Target: target, Text: []byte("sure")}, nil, "replies to message 07000000: sure"},
		{wire.Action{Content: wire.ContentReply, Target: target, Text: []byte("sure")}, known("", false), "replies to “”: sure"},
		{wire.Action{Content: wire.ContentReply, Target: wire.LogicalID{8}, Text: []byte("eh")}, known("x", false), "replies to a message not here: eh"},
		{wire.Action{Content: wire.ContentReaction, Target: target, Emoji: "🎉"}, known("", true), "reacts 🎉 to a deleted message"},
	} {
		got, ok := Describe(tc.a.Content, encode(t, tc.a), tc.lookup)
		if !ok || got != tc.want {
			t.Errorf("Describe(%v) = %q, %v; want %q", tc.a.Content, got, ok, tc.want)
		}
		if strings.ContainsAny(got, "\x1b\x07") {
			t.Errorf("Describe(%v) = %q keeps a control character", tc.a.Content, got)
		}
	}
	if _, ok := Describe(wire.ContentText, []byte("hello"), nil); ok {
		t.Error("a text message was described as an action")
	}
	if got, ok := Describe(wire.ContentEdit, []byte{0xff}, nil); !ok || got != "edit (unreadable)" {
		t.Errorf("an undecodable edit: %q, %v", got, ok)
	}
}

// TestOwn: a sent action in the outbox's words.
func TestOwn(t *testing.T) {
	for _, tc := range []struct {
		a    wire.Action
		want string
	}{
		{wire.Action{Content: wire.ContentReaction, Emoji: "👍"}, "reaction 👍"},
		{wire.Action{Content: wire.ContentReaction, Remove: true}, "reaction taken back"},
		{wire.Action{Content: wire.ContentEdit, Edit: 2, Text: []byte("fixed")}, "edit “fixed”"},
		{wire.Action{Content: wire.ContentDelete}, "delete for everyone"},
		{wire.Action{Content: wire.ContentReply, Text: []byte("ok")}, "reply “ok”"},
	} {
		if got, ok := Own(tc.a.Content, encode(t, tc.a)); !ok || got != tc.want {
			t.Errorf("Own(%v) = %q, %v; want %q", tc.a.Content, got, ok, tc.want)
		}
	}
	if _, ok := Own(wire.ContentText, []byte("x")); ok {
		t.Error("a text message was described as an action")
	}
}

// TestApplied: an applied action in the event log's words.
func TestApplied(t *testing.T) {
	target := wire.LogicalID{0xab, 0xcd}
	for _, tc := range []struct {
		a    engine.AppliedAction
		want string
	}{
		{engine.AppliedAction{Content: wire.ContentReaction, Target: target, Emoji: "👍"}, "reaction 👍 to message abcd0000"},
		{engine.AppliedAction{Content: wire.ContentReaction, Target: target, Remove: true}, "reaction to message abcd0000 taken back"},
		{engine.AppliedAction{Content: wire.ContentEdit, Target: target, Text: []byte("x\x1by")}, "edit of message abcd0000 to “xy”"},
		{engine.AppliedAction{Content: wire.ContentDelete, Target: target}, "message abcd0000 deleted for everyone"},
	} {
		if got := Applied(tc.a); got != tc.want {
			t.Errorf("Applied(%v) = %q, want %q", tc.a.Content, got, tc.want)
		}
	}
}
