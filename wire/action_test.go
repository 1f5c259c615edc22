package wire_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/parley-chat/parley/wire"
)

// actionFormat is the body of one action content type: the decoder needs
// the content type, which travels in the frame around the body.
func actionFormat(c wire.ContentType, file string) format[wire.Action] {
	return actionFormatVersion(c, 1, file)
}

// actionFormatVersion is actionFormat for a body of version v.
func actionFormatVersion(c wire.ContentType, v int, file string) format[wire.Action] {
	return format[wire.Action]{
		file:   file,
		title:  fmt.Sprintf("action body (content type %d, version %d)", c, v),
		fuzz:   "FuzzDecodeAction",
		encode: wire.EncodeAction,
		decode: func(b []byte) (wire.Action, error) { return wire.DecodeAction(c, b) },
	}
}

var groupActionFormat = format[wire.GroupMessage]{
	file:   "group-action.txt",
	title:  "group message frame (frame version 1, kind 3) carrying an action",
	fuzz:   "FuzzDecodeGroupMessage",
	encode: wire.EncodeGroupMessage,
	decode: wire.DecodeGroupMessage,
}

var contentActionFormat = format[wire.ContentMessage]{
	file:   "content-action.txt",
	title:  "content frame (frame version 1, kind 6) carrying an action",
	fuzz:   "FuzzDecodeContentMessage",
	encode: wire.EncodeContentMessage,
	decode: wire.DecodeContentMessage,
}

func TestActionVectors(t *testing.T) {
	target := seq16(0x10)
	t.Run("reply", func(t *testing.T) {
		checkVectors(t, actionFormat(wire.ContentReply, "action-reply.txt"), []vector[wire.Action]{
			{name: "reply", doc: `reply, target bytes 10.., text "yes"`, v: wire.Action{Content: wire.ContentReply, Target: target, Text: []byte("yes")}},
			{name: "empty", doc: `reply, target bytes 10.., no text`, v: wire.Action{Content: wire.ContentReply, Target: target}},
		})
	})
	t.Run("reaction", func(t *testing.T) {
		checkVectors(t, actionFormat(wire.ContentReaction, "action-reaction.txt"), []vector[wire.Action]{
			{name: "thumbs", doc: `reaction, target bytes 10.., emoji U+1F44D`, v: wire.Action{Content: wire.ContentReaction, Target: target, Emoji: "\U0001F44D"}},
			{name: "remove", doc: `reaction removed, target bytes 10..`, v: wire.Action{Content: wire.ContentReaction, Target: target, Remove: true}},
		})
	})
	t.Run("reaction-v2", func(t *testing.T) {
		checkVectors(t, actionFormatVersion(wire.ContentReaction, 2, "action-reaction-v2.txt"), []vector[wire.Action]{
			{name: "numbered", doc: `reaction number 1, target bytes 10.., emoji U+1F44D`, v: wire.Action{Content: wire.ContentReaction, Target: target, Emoji: "\U0001F44D", Order: 1}},
			{name: "numbered-remove", doc: `reaction number 0x01020304 removed, target bytes 10..`, v: wire.Action{Content: wire.ContentReaction, Target: target, Remove: true, Order: 0x01020304}},
		})
	})
	t.Run("edit", func(t *testing.T) {
		checkVectors(t, actionFormat(wire.ContentEdit, "action-edit.txt"), []vector[wire.Action]{
			{name: "edit", doc: `edit 2, target bytes 10.., text "fixed"`, v: wire.Action{Content: wire.ContentEdit, Target: target, Edit: 2, Text: []byte("fixed")}},
		})
	})
	t.Run("delete", func(t *testing.T) {
		checkVectors(t, actionFormat(wire.ContentDelete, "action-delete.txt"), []vector[wire.Action]{
			{name: "delete", doc: `delete, target bytes 10..`, v: wire.Action{Content: wire.ContentDelete, Target: target}},
		})
	})
	t.Run("content-action", func(t *testing.T) {
		body := mustEncode(wire.EncodeAction, wire.Action{Content: wire.ContentReaction, Target: target, Emoji: "\U0001F44D"})
		checkVectors(t, contentActionFormat, []vector[wire.ContentMessage]{
			{name: "reaction", doc: `content frame (kind 6), ID bytes 00.., content reaction (4), body the reaction vector "thumbs"`,
				v: wire.ContentMessage{ID: seq16(0x00), Content: wire.ContentReaction, Body: body}},
		})
	})
	t.Run("group-action", func(t *testing.T) {
		checkVectors(t, groupActionFormat, groupActionVectors())
	})
}

// groupActionVectors are group messages carrying each action: the body is
// the action body, as in a content frame.
func groupActionVectors() []vector[wire.GroupMessage] {
	target := seq16(0x10)
	m := func(c wire.ContentType, a wire.Action) wire.GroupMessage {
		a.Content = c
		a.Target = target
		return wire.GroupMessage{ID: seq16(0x00), Group: seq16(0x20), Generation: 2, Content: c, Body: mustEncode(wire.EncodeAction, a)}
	}
	return []vector[wire.GroupMessage]{
		{name: "reply", doc: `group message (kind 3), ID bytes 00.., group bytes 20.., generation 2, content reply (3), body the reply vector "reply"`,
			v: m(wire.ContentReply, wire.Action{Text: []byte("yes")})},
		{name: "reaction", doc: `group message, as "reply", content reaction (4), body the reaction vector "thumbs"`,
			v: m(wire.ContentReaction, wire.Action{Emoji: "\U0001F44D"})},
		{name: "edit", doc: `group message, as "reply", content edit (5), body the edit vector "edit"`,
			v: m(wire.ContentEdit, wire.Action{Edit: 2, Text: []byte("fixed")})},
		{name: "delete", doc: `group message, as "reply", content delete (6), body the delete vector "delete"`,
			v: m(wire.ContentDelete, wire.Action{})},
	}
}

// TestActionRefuses: every rule of checkAction at the encoder and the
// decoder, and the bounds of a reaction just below, at and above.
func TestActionRefuses(t *testing.T) {
	for _, tt := range []struct {
		name  string
		a     wire.Action
		valid bool
	}{
		{"longest emoji", wire.Action{Content: wire.ContentReaction, Emoji: strings.Repeat("\U0001F44D", wire.MaxEmojiRunes)}, true},
		{"emoji over the code points", wire.Action{Content: wire.ContentReaction, Emoji: strings.Repeat("a", wire.MaxEmojiRunes+1)}, false},
		{"family with joiners", wire.Action{Content: wire.ContentReaction, Emoji: "\U0001F468\u200d\U0001F469\u200d\U0001F467"}, true},
		{"heart with selector", wire.Action{Content: wire.ContentReaction, Emoji: "\u2764\ufe0f"}, true},
		{"plus one", wire.Action{Content: wire.ContentReaction, Emoji: "+1"}, true},
		{"escape", wire.Action{Content: wire.ContentReaction, Emoji: "\x1b[2J"}, false},
		{"bidi override", wire.Action{Content: wire.ContentReaction, Emoji: "\u202e!"}, false},
		{"space", wire.Action{Content: wire.ContentReaction, Emoji: "a b"}, false},
		{"newline", wire.Action{Content: wire.ContentReaction, Emoji: "\U0001F44D\n"}, false},
		{"invalid utf-8", wire.Action{Content: wire.ContentReaction, Emoji: "\xff"}, false},
		{"empty emoji", wire.Action{Content: wire.ContentReaction}, false},
		{"remove with emoji", wire.Action{Content: wire.ContentReaction, Remove: true, Emoji: "x"}, false},
		{"reaction with text", wire.Action{Content: wire.ContentReaction, Emoji: "x", Text: []byte("t")}, false},
		{"edit 0", wire.Action{Content: wire.ContentEdit, Text: []byte("t")}, false},
		{"edit with emoji", wire.Action{Content: wire.ContentEdit, Edit: 1, Emoji: "x"}, false},
		{"reply with edit", wire.Action{Content: wire.ContentReply, Edit: 1}, false},
		{"delete with text", wire.Action{Content: wire.ContentDelete, Text: []byte("t")}, false},
		{"numbered reaction", wire.Action{Content: wire.ContentReaction, Emoji: "x", Order: 7}, true},
		{"numbered removal", wire.Action{Content: wire.ContentReaction, Remove: true, Order: 1 << 31}, true},
		{"reply with a reaction number", wire.Action{Content: wire.ContentReply, Order: 1}, false},
		{"edit with a reaction number", wire.Action{Content: wire.ContentEdit, Edit: 1, Order: 1}, false},
		{"delete with a reaction number", wire.Action{Content: wire.ContentDelete, Order: 1}, false},
		{"text content", wire.Action{Content: wire.ContentText}, false},
		{"file content", wire.Action{Content: wire.ContentFile}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			b, err := wire.EncodeAction(tt.a)
			if !tt.valid {
				if !errors.Is(err, wire.ErrMalformed) || b != nil {
					t.Fatalf("EncodeAction = %x, %v; want ErrMalformed", b, err)
				}
				return
			}
			got, err := wire.DecodeAction(tt.a.Content, b)
			if err != nil || got.Emoji != tt.a.Emoji || got.Order != tt.a.Order || got.Remove != tt.a.Remove {
				t.Fatalf("DecodeAction = %+v, %v; want %+v", got, err, tt.a)
			}
		})
	}
	long := wire.Action{Content: wire.ContentEdit, Edit: 1, Text: make([]byte, wire.MaxActionTextSize)}
	b, err := wire.EncodeAction(long)
	if err != nil {
		t.Fatalf("longest edit: %v", err)
	}
	if m, err := wire.EncodeContentMessage(wire.ContentMessage{Content: wire.ContentEdit, Body: b}); err != nil || len(m) > wire.MaxFrameSize {
		t.Fatalf("longest edit in a content frame: %d bytes, %v", len(m), err)
	}
	long.Text = append(long.Text, 0)
	if _, err := wire.EncodeAction(long); !errors.Is(err, wire.ErrMessageTooLarge) {
		t.Fatalf("edit over the limit: %v, want ErrMessageTooLarge", err)
	}
	bad := mustEncode(wire.EncodeAction, wire.Action{Content: wire.ContentDelete})
	bad[0] = 2
	if _, err := wire.DecodeAction(wire.ContentDelete, bad); !errors.Is(err, wire.ErrUnsupportedVersion) {
		t.Fatalf("version 2: %v, want ErrUnsupportedVersion", err)
	}
	// Version 2 is a reaction's only: another kind under it is not
	// read as version 1, and version 3 is nothing yet.
	reply := mustEncode(wire.EncodeAction, wire.Action{Content: wire.ContentReply, Text: []byte("yes")})
	reply[0] = wire.ActionVersionOrdered
	if _, err := wire.DecodeAction(wire.ContentReply, reply); !errors.Is(err, wire.ErrUnsupportedVersion) {
		t.Fatalf("reply of version 2: %v, want ErrUnsupportedVersion", err)
	}
	ordered := mustEncode(wire.EncodeAction, wire.Action{Content: wire.ContentReaction, Emoji: "x", Order: 1})
	ordered[0] = 3
	if _, err := wire.DecodeAction(wire.ContentReaction, ordered); !errors.Is(err, wire.ErrUnsupportedVersion) {
		t.Fatalf("reaction of version 3: %v, want ErrUnsupportedVersion", err)
	}
	// A version 2 reaction of number 0 is refused: Order 0 is version 1.
	zero := append([]byte{wire.ActionVersionOrdered}, make([]byte, 16+4)...)
	zero = append(zero, 0, 1, 'x')
	if _, err := wire.DecodeAction(wire.ContentReaction, zero); !errors.Is(err, wire.ErrMalformed) {
		t.Fatalf("reaction number 0 in version 2: %v, want ErrMalformed", err)
	}
	// An action's body under another action's content type is refused:
	// a delete's 17 bytes are a truncated reaction.
	if _, err := wire.DecodeAction(wire.ContentReaction, mustEncode(wire.EncodeAction, wire.Action{Content: wire.ContentDelete})); !errors.Is(err, wire.ErrMalformed) {
		t.Fatalf("a delete read as a reaction: %v, want ErrMalformed", err)
	}
	// A group message carries actions (its body is checked by the
	// engine, as a content frame's is), and nothing past them.
	if _, err := wire.EncodeGroupMessage(wire.GroupMessage{Content: wire.ContentReaction, Body: []byte("x")}); err != nil {
		t.Fatalf("group reaction: %v, want it encoded", err)
	}
	if _, err := wire.EncodeGroupMessage(wire.GroupMessage{Content: wire.ContentDelete + 1, Body: []byte("x")}); !errors.Is(err, wire.ErrMalformed) {
		t.Fatalf("group content type 7: %v, want ErrMalformed", err)
	}
}

func FuzzDecodeAction(f *testing.F) {
	// One seed per content type: its content type byte, then a valid body.
	for _, a := range []wire.Action{
		{Content: wire.ContentReply, Text: []byte("yes")},
		{Content: wire.ContentReaction, Emoji: "\U0001F44D"},
		{Content: wire.ContentReaction, Remove: true},
		{Content: wire.ContentReaction, Emoji: "\u2764\ufe0f", Order: 2},
		{Content: wire.ContentReaction, Remove: true, Order: 0xffffffff},
		{Content: wire.ContentEdit, Edit: 3, Text: []byte("x")},
		{Content: wire.ContentDelete},
	} {
		f.Add(append([]byte{byte(a.Content)}, mustEncode(wire.EncodeAction, a)...))
	}
	// A reaction whose emoji is an escape sequence.
	f.Add(mustHex("04010000000000000000000000000000000000041b5b324a"))
	// A version 2 reaction of number 0, and a version 2 delete.
	f.Add(mustHex("040200000000000000000000000000000000000000000001" + "78"))
	f.Add(mustHex("0602000000000000000000000000000000000000"))
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) == 0 {
			return
		}
		c := wire.ContentType(b[0])
		fuzzRoundTrip(t, b[1:], func(b []byte) (wire.Action, error) { return wire.DecodeAction(c, b) }, wire.EncodeAction)
	})
}
