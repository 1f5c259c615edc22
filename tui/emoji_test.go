package tui

import (
	"strings"
	"testing"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/tui/eventlog"
	"github.com/parley-chat/parley/wire"
)

// TestEmojiKeepTheirMeaning: a delivery whose body holds a skin tone and a
// ZWJ family is logged with the clusters as they are (never \u200d), and
// drawn whole where the terminal measures clusters as the layout does
// (whole, or auto on such a terminal); plain elsewhere (the tone dropped,
// the family replaced, never drawn as its first member), the screen the
// same size either way.
func TestEmojiKeepTheirMeaning(t *testing.T) {
	const thumbs, family = "👍🏽", "👨\u200d👩\u200d👧"
	body := "ok " + thumbs + " and " + family
	r := engine.ReceiveResult{Kind: engine.ResultDelivery, Sender: demoBob, ID: wire.LogicalID{7}, Body: []byte(body)}
	e := eventlog.FromEvent(engine.Event{Kind: engine.EventReceived, At: testNow, Peer: demoBob, Result: &r})
	if strings.Contains(e.Text, `\u`) || !strings.Contains(e.Text, `"`+body+`"`) {
		t.Fatalf("the event log writes %q, want the body quoted as it is", e.Text)
	}

	m, _, _ := newTestRoot(t)
	m.Note(0, e)
	plain := m.View()
	if strings.Contains(plain, thumbs) || strings.Contains(plain, family) || !strings.Contains(plain, "ok 👍 ") ||
		strings.Contains(plain, "👨") || !strings.Contains(plain, "and \ufffd ") {
		t.Fatalf("plain: the clusters are not drawn in their plain form:\n%s", plain)
	}
	m.wholeClusters = EmojiWhole.whole(nil)
	whole := m.View()
	if !strings.Contains(whole, thumbs) || !strings.Contains(whole, family) {
		t.Fatalf("whole: the clusters are not drawn whole:\n%s", whole)
	}
	if got, want := strings.Count(whole, "\n"), strings.Count(plain, "\n"); got != want {
		t.Fatalf("whole: %d lines, plain %d", got, want)
	}

	for _, tc := range []struct {
		env  map[string]string
		want bool
	}{
		{map[string]string{"TERM_PROGRAM": "WezTerm"}, true},
		{map[string]string{"TERM_PROGRAM": "ghostty"}, true},
		{map[string]string{"TERM": "xterm-ghostty"}, true},
		{map[string]string{"TERM_PROGRAM": "WezTerm", "TMUX": "/tmp/tmux-0/default,1,0"}, false},
		{map[string]string{"TERM": "xterm-256color"}, false},
	} {
		if got := EmojiAuto.whole(func(k string) string { return tc.env[k] }); got != tc.want {
			t.Errorf("auto in %v: whole %v, want %v", tc.env, got, tc.want)
		}
	}
	if _, err := ParseEmoji("sometimes"); err == nil {
		t.Error("ParseEmoji took an unknown mode")
	}
}
