package wire_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/parley-chat/parley/wire"
)

var sentCopyFormat = format[wire.SentCopy]{
	file:   "sent-copy.txt",
	title:  "sent copy (frame kind 14)",
	fuzz:   "FuzzDecodeSentCopy",
	encode: wire.EncodeSentCopy,
	decode: wire.DecodeSentCopy,
}

var sentActionCopyFormat = format[wire.SentActionCopy]{
	file:   "sent-action-copy.txt",
	title:  "sent copy of an action (frame kind 17)",
	fuzz:   "FuzzDecodeSentActionCopy",
	encode: wire.EncodeSentActionCopy,
	decode: wire.DecodeSentActionCopy,
}

var decisionFormat = format[wire.Decision]{
	file:   "decision.txt",
	title:  "decision (frame kind 15)",
	fuzz:   "FuzzDecodeDecision",
	encode: wire.EncodeDecision,
	decode: wire.DecodeDecision,
}

var decisionBodyFormat = format[wire.Decision]{
	file:   "decision-body.txt",
	title:  "decision with the committed body (frame kind 16)",
	fuzz:   "FuzzDecodeDecision",
	encode: wire.EncodeDecision,
	decode: wire.DecodeDecision,
}

var decisionActionFormat = format[wire.Decision]{
	file:   "decision-action.txt",
	title:  "decision with the committed action (frame kind 18)",
	fuzz:   "FuzzDecodeDecisionAction",
	encode: wire.EncodeDecision,
	decode: wire.DecodeDecision,
}

func decisionActionVectors() []vector[wire.Decision] {
	action := func(a wire.Action) []byte { return mustEncode(wire.EncodeAction, a) }
	return []vector[wire.Decision]{
		{name: "reaction", doc: `kind 18, id bytes 30.., sender "alice/1", message bytes 10.., reaction number 2 "ok" to bytes 50..`,
			v: wire.Decision{ID: seq16(0x30), Sender: "alice/1", Message: seq16(0x10), Outcome: wire.DecisionCommitted, Content: wire.ContentReaction,
				Body: action(wire.Action{Content: wire.ContentReaction, Target: seq16(0x50), Emoji: "ok", Order: 2})}},
		{name: "edit", doc: `kind 18, id bytes 20.., sender "carol.x/2147483647", message bytes 40.., edit 1 of bytes 50.. to "no"`,
			v: wire.Decision{ID: seq16(0x20), Sender: "carol.x/2147483647", Message: seq16(0x40), Outcome: wire.DecisionCommitted, Content: wire.ContentEdit,
				Body: action(wire.Action{Content: wire.ContentEdit, Target: seq16(0x50), Edit: 1, Text: []byte("no")})}},
		{name: "delete", doc: `kind 18, id all ff, sender "alice/2", message bytes 10.., a delete of bytes 50..`,
			v: wire.Decision{ID: wire.LogicalID(bytes.Repeat([]byte{0xff}, 16)), Sender: "alice/2", Message: seq16(0x10), Outcome: wire.DecisionCommitted, Content: wire.ContentDelete,
				Body: action(wire.Action{Content: wire.ContentDelete, Target: seq16(0x50)})}},
		{name: "reply", doc: `kind 18, id bytes 00.., sender "alice/1", message bytes 60.., a reply to bytes 50.. with text "yes"`,
			v: wire.Decision{ID: seq16(0x00), Sender: "alice/1", Message: seq16(0x60), Outcome: wire.DecisionCommitted, Content: wire.ContentReply,
				Body: action(wire.Action{Content: wire.ContentReply, Target: seq16(0x50), Text: []byte("yes")})}},
	}
}

func decisionBodyVectors() []vector[wire.Decision] {
	return []vector[wire.Decision]{
		{name: "committed-body", doc: `kind 16, id bytes 30.., sender "alice/1", message bytes 10.., body "hi"`,
			v: wire.Decision{ID: seq16(0x30), Sender: "alice/1", Message: seq16(0x10), Outcome: wire.DecisionCommitted, Body: []byte("hi")}},
		{name: "committed-empty", doc: `kind 16, id all ff, sender "carol.x/2147483647", message bytes 40.., empty body`,
			v: wire.Decision{ID: wire.LogicalID(bytes.Repeat([]byte{0xff}, 16)), Sender: "carol.x/2147483647", Message: seq16(0x40), Outcome: wire.DecisionCommitted, Body: []byte{}}},
	}
}

func sentCopyVectors() []vector[wire.SentCopy] {
	return []vector[wire.SentCopy]{
		{name: "sent-copy", doc: `kind 14, id bytes 00.., to "bob/1", body "hi"`,
			v: wire.SentCopy{ID: seq16(0x00), To: "bob/1", Body: []byte("hi")}},
		{name: "sent-copy-empty", doc: `kind 14, id all ff, to "carol.x/2147483647", empty body`,
			v: wire.SentCopy{ID: wire.LogicalID(bytes.Repeat([]byte{0xff}, 16)), To: "carol.x/2147483647", Body: []byte{}}},
	}
}

func sentActionCopyVectors() []vector[wire.SentActionCopy] {
	return []vector[wire.SentActionCopy]{
		{name: "reply", doc: `kind 17, id bytes 00.., to "bob/1", a reply to bytes 10.. with text "yes"`,
			v: wire.SentActionCopy{ID: seq16(0x00), To: "bob/1", Action: wire.Action{Content: wire.ContentReply, Target: seq16(0x10), Text: []byte("yes")}}},
		{name: "reaction", doc: `kind 17, id bytes 20.., to "bob/1", reaction number 2 "ok" to bytes 10..`,
			v: wire.SentActionCopy{ID: seq16(0x20), To: "bob/1", Action: wire.Action{Content: wire.ContentReaction, Target: seq16(0x10), Emoji: "ok", Order: 2}}},
		{name: "edit", doc: `kind 17, id bytes 30.., to "carol.x/2147483647", edit 1 of bytes 10.. to "no"`,
			v: wire.SentActionCopy{ID: seq16(0x30), To: "carol.x/2147483647", Action: wire.Action{Content: wire.ContentEdit, Target: seq16(0x10), Edit: 1, Text: []byte("no")}}},
		{name: "delete", doc: `kind 17, id all ff, to "bob/2", a delete of bytes 10..`,
			v: wire.SentActionCopy{ID: wire.LogicalID(bytes.Repeat([]byte{0xff}, 16)), To: "bob/2", Action: wire.Action{Content: wire.ContentDelete, Target: seq16(0x10)}}},
	}
}

func decisionVectors() []vector[wire.Decision] {
	return []vector[wire.Decision]{
		{name: "committed", doc: `kind 15, id bytes 00.., sender "alice/1", message bytes 10.., committed (1)`,
			v: wire.Decision{ID: seq16(0x00), Sender: "alice/1", Message: seq16(0x10), Outcome: wire.DecisionCommitted}},
		{name: "discarded", doc: `kind 15, id bytes 20.., sender "alice/2", message bytes 10.., discarded (2)`,
			v: wire.Decision{ID: seq16(0x20), Sender: "alice/2", Message: seq16(0x10), Outcome: wire.DecisionDiscarded}},
	}
}

func TestPersonVectors(t *testing.T) {
	t.Run("sent-copy", func(t *testing.T) { checkVectors(t, sentCopyFormat, sentCopyVectors()) })
	t.Run("sent-action-copy", func(t *testing.T) { checkVectors(t, sentActionCopyFormat, sentActionCopyVectors()) })
	t.Run("decision", func(t *testing.T) { checkVectors(t, decisionFormat, decisionVectors()) })
	t.Run("decision-body", func(t *testing.T) { checkVectors(t, decisionBodyFormat, decisionBodyVectors()) })
	t.Run("decision-action", func(t *testing.T) { checkVectors(t, decisionActionFormat, decisionActionVectors()) })
}

// TestPersonFramesRefuse: the limits and rules of both frames, at the
// encoder and at the decoder.
func TestPersonFramesRefuse(t *testing.T) {
	longest := wire.SentCopy{To: strings.Repeat("a", wire.MaxUserSize) + "/2147483647", Body: make([]byte, wire.MaxSentCopyBodySize)}
	for _, tt := range []struct {
		name string
		s    wire.SentCopy
		want error
	}{
		{"longest", longest, nil},
		{"body over the limit", wire.SentCopy{To: "bob/1", Body: make([]byte, wire.MaxSentCopyBodySize+1)}, wire.ErrMessageTooLarge},
		{"not an address", wire.SentCopy{To: "bob", Body: nil}, wire.ErrMalformed},
		{"device zero", wire.SentCopy{To: "bob/0"}, wire.ErrMalformed},
		{"upper case", wire.SentCopy{To: "Bob/1"}, wire.ErrMalformed},
	} {
		t.Run(tt.name, func(t *testing.T) {
			b, err := wire.EncodeSentCopy(tt.s)
			if !errors.Is(err, tt.want) {
				t.Fatalf("EncodeSentCopy = %v, want %v", err, tt.want)
			}
			if err == nil && len(b) > wire.MaxFrameSize {
				t.Fatalf("a sent copy of %d bytes, over MaxFrameSize", len(b))
			}
		})
	}
	// A decoder sees what an encoder refuses: a non-canonical address.
	b := mustEncode(wire.EncodeSentCopy, wire.SentCopy{To: "bob/1"})
	bad := bytes.Replace(b, []byte("bob/1"), []byte("bob/0"), 1)
	if _, err := wire.DecodeSentCopy(bad); !errors.Is(err, wire.ErrMalformed) {
		t.Errorf("DecodeSentCopy(bob/0) = %v, want ErrMalformed", err)
	}
	if _, err := wire.DecodeSentCopy(append([]byte{0x02}, b[1:]...)); !errors.Is(err, wire.ErrUnsupportedVersion) {
		t.Errorf("DecodeSentCopy(version 2) = %v, want ErrUnsupportedVersion", err)
	}
	d := mustEncode(wire.EncodeDecision, decisionVectors()[0].v)
	for _, o := range []byte{0, 3, 0xff} {
		bad := append(append([]byte(nil), d[:len(d)-1]...), o)
		if _, err := wire.DecodeDecision(bad); !errors.Is(err, wire.ErrMalformed) {
			t.Errorf("DecodeDecision(outcome %d) = %v, want ErrMalformed", o, err)
		}
		if _, err := wire.EncodeDecision(wire.Decision{Sender: "a/1", Outcome: wire.DecisionOutcome(o)}); !errors.Is(err, wire.ErrMalformed) {
			t.Errorf("EncodeDecision(outcome %d) = %v, want ErrMalformed", o, err)
		}
	}
	if _, err := wire.DecodeDecision(b); !errors.Is(err, wire.ErrMalformed) {
		t.Errorf("DecodeDecision(a sent copy) = %v, want ErrMalformed", err)
	}
	// A body travels with a commit only, and within its bound.
	longestDecision := wire.Decision{Sender: strings.Repeat("a", wire.MaxUserSize) + "/2147483647", Outcome: wire.DecisionCommitted, Body: make([]byte, wire.MaxDecisionBodySize)}
	if b, err := wire.EncodeDecision(longestDecision); err != nil || len(b) != wire.MaxFrameSize {
		t.Errorf("the longest decision: %d bytes, %v; want MaxFrameSize", len(b), err)
	}
	longestDecision.Body = append(longestDecision.Body, 0)
	if _, err := wire.EncodeDecision(longestDecision); !errors.Is(err, wire.ErrMessageTooLarge) {
		t.Errorf("a decision body over the bound: %v, want ErrMessageTooLarge", err)
	}
	if _, err := wire.EncodeDecision(wire.Decision{Sender: "a/1", Outcome: wire.DecisionDiscarded, Body: []byte("x")}); !errors.Is(err, wire.ErrMalformed) {
		t.Errorf("a discard with a body: %v, want ErrMalformed", err)
	}
	withBody := mustEncode(wire.EncodeDecision, decisionBodyVectors()[0].v)
	over := append(append([]byte(nil), withBody[:len(withBody)-6]...), 0xff, 0xff, 0xff, 0xff, 'h', 'i')
	if _, err := wire.DecodeDecision(over); !errors.Is(err, wire.ErrMalformed) {
		t.Errorf("DecodeDecision(a body length over the bound) = %v, want ErrMalformed", err)
	}
	if d, err := wire.DecodeDecision(withBody); err != nil || string(d.Body) != "hi" || d.Outcome != wire.DecisionCommitted {
		t.Errorf("DecodeDecision(kind 16) = %+v, %v; want a commit with its body", d, err)
	}
}

func FuzzDecodeSentCopy(f *testing.F) {
	for _, v := range sentCopyVectors() {
		b := mustEncode(wire.EncodeSentCopy, v.v)
		f.Add(b)            // a frozen vector
		f.Add(b[:len(b)-1]) // one byte short
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		fuzzRoundTrip(t, b, wire.DecodeSentCopy, wire.EncodeSentCopy)
	})
}

func FuzzDecodeDecision(f *testing.F) {
	for _, v := range append(decisionVectors(), decisionBodyVectors()...) {
		b := mustEncode(wire.EncodeDecision, v.v)
		f.Add(b)            // a frozen vector
		f.Add(b[:len(b)-1]) // the outcome missing
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		fuzzRoundTrip(t, b, wire.DecodeDecision, wire.EncodeDecision)
	})
}

func FuzzDecodeDecisionAction(f *testing.F) {
	for _, v := range decisionActionVectors() {
		b := mustEncode(wire.EncodeDecision, v.v)
		f.Add(b)            // a frozen vector
		f.Add(b[:len(b)-1]) // one byte short
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		fuzzRoundTrip(t, b, wire.DecodeDecision, wire.EncodeDecision)
	})
}

// TestDecisionActionRefuses: a kind-18 decision carries a commit of an
// action and nothing else, within the frame's bound.
func TestDecisionActionRefuses(t *testing.T) {
	v := decisionActionVectors()[0].v
	good := mustEncode(wire.EncodeDecision, v)
	longest := wire.Decision{Sender: strings.Repeat("a", wire.MaxUserSize) + "/2147483647", Outcome: wire.DecisionCommitted, Content: wire.ContentReply,
		Body: mustEncode(wire.EncodeAction, wire.Action{Content: wire.ContentReply, Text: make([]byte, wire.MaxDecisionActionSize-(1+16+4))})}
	if b, err := wire.EncodeDecision(longest); err != nil || len(b) != wire.MaxFrameSize {
		t.Fatalf("the longest action decision: %d bytes, %v; want MaxFrameSize", len(b), err)
	}
	for _, tt := range []struct {
		name string
		d    wire.Decision
		want error
	}{
		{"a discard", wire.Decision{Sender: "a/1", Outcome: wire.DecisionDiscarded, Content: v.Content, Body: v.Body}, wire.ErrMalformed},
		{"text content", wire.Decision{Sender: "a/1", Outcome: wire.DecisionCommitted, Content: wire.ContentText, Body: []byte("hi")}, wire.ErrMalformed},
		{"a file", wire.Decision{Sender: "a/1", Outcome: wire.DecisionCommitted, Content: wire.ContentFile, Body: v.Body}, wire.ErrMalformed},
		{"another action's body", wire.Decision{Sender: "a/1", Outcome: wire.DecisionCommitted, Content: wire.ContentDelete, Body: decisionActionVectors()[1].v.Body}, wire.ErrMalformed},
		{"no body", wire.Decision{Sender: "a/1", Outcome: wire.DecisionCommitted, Content: wire.ContentReaction}, wire.ErrMalformed},
		{"not an address", wire.Decision{Sender: "a", Outcome: wire.DecisionCommitted, Content: v.Content, Body: v.Body}, wire.ErrMalformed},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := wire.EncodeDecision(tt.d); !errors.Is(err, tt.want) {
				t.Fatalf("EncodeDecision = %v, want %v", err, tt.want)
			}
		})
	}
	// The decoder refuses what the encoder does: a content type that is no
	// action's, an action body that does not decode, a trailing byte.
	at := len(good) - len(v.Body) - 4 - 1 // the content type's offset
	for _, c := range []byte{0, 1, 2, 7, 0xff} {
		bad := append([]byte(nil), good...)
		bad[at] = c
		if _, err := wire.DecodeDecision(bad); !errors.Is(err, wire.ErrMalformed) {
			t.Errorf("DecodeDecision(content type %d) = %v, want ErrMalformed", c, err)
		}
	}
	edit := decisionActionVectors()[1].v
	bad := mustEncode(wire.EncodeDecision, edit)
	bad[len(bad)-len(edit.Body)-4-1] = byte(wire.ContentDelete)
	if _, err := wire.DecodeDecision(bad); !errors.Is(err, wire.ErrMalformed) {
		t.Errorf("DecodeDecision(an edit's body as a delete) = %v, want ErrMalformed", err)
	}
	if _, err := wire.DecodeDecision(append(append([]byte(nil), good...), 0)); !errors.Is(err, wire.ErrMalformed) {
		t.Errorf("DecodeDecision(a trailing byte) = %v, want ErrMalformed", err)
	}
	if _, err := wire.DecodeDecision(good[:len(good)-1]); !errors.Is(err, wire.ErrMalformed) {
		t.Errorf("DecodeDecision(one byte short) = %v, want ErrMalformed", err)
	}
}

// TestSentActionCopyRefuses: a sent action copy carries an action and
// nothing else, within the frame's bound, and kind 14's decoder does not
// take it (nor the reverse).
func TestSentActionCopyRefuses(t *testing.T) {
	longest := wire.SentActionCopy{To: strings.Repeat("a", wire.MaxUserSize) + "/2147483647",
		Action: wire.Action{Content: wire.ContentReply, Text: make([]byte, wire.MaxSentActionBodySize-(1+16+4))}}
	if b, err := wire.EncodeSentActionCopy(longest); err != nil || len(b) != wire.MaxFrameSize {
		t.Fatalf("the longest reply's copy: %d bytes, %v; want MaxFrameSize", len(b), err)
	}
	longest.Action.Text = append(longest.Action.Text, 0)
	if _, err := wire.EncodeSentActionCopy(longest); !errors.Is(err, wire.ErrMessageTooLarge) {
		t.Fatalf("a reply's copy past MaxFrameSize: %v, want ErrMessageTooLarge", err)
	}
	for _, tt := range []struct {
		name string
		s    wire.SentActionCopy
		want error
	}{
		{"text", wire.SentActionCopy{To: "bob/1", Action: wire.Action{Content: wire.ContentText}}, wire.ErrMalformed},
		{"edit number 0", wire.SentActionCopy{To: "bob/1", Action: wire.Action{Content: wire.ContentEdit, Text: []byte("x")}}, wire.ErrMalformed},
		{"not an address", wire.SentActionCopy{To: "bob", Action: wire.Action{Content: wire.ContentDelete}}, wire.ErrMalformed},
		{"text over the limit", wire.SentActionCopy{To: "bob/1", Action: wire.Action{Content: wire.ContentReply, Text: make([]byte, wire.MaxActionTextSize+1)}}, wire.ErrMessageTooLarge},
	} {
		if _, err := wire.EncodeSentActionCopy(tt.s); !errors.Is(err, tt.want) {
			t.Errorf("%s: EncodeSentActionCopy = %v, want %v", tt.name, err, tt.want)
		}
	}
	b := mustEncode(wire.EncodeSentActionCopy, sentActionCopyVectors()[0].v)
	if k, err := wire.PeekFrameKind(b); err != nil || k != wire.FrameSentActionCopy {
		t.Errorf("PeekFrameKind = %d, %v; want %d", k, err, wire.FrameSentActionCopy)
	}
	if _, err := wire.DecodeSentCopy(b); !errors.Is(err, wire.ErrMalformed) {
		t.Errorf("DecodeSentCopy(kind 17) = %v, want ErrMalformed", err)
	}
	if _, err := wire.DecodeSentActionCopy(mustEncode(wire.EncodeSentCopy, sentCopyVectors()[0].v)); !errors.Is(err, wire.ErrMalformed) {
		t.Errorf("DecodeSentActionCopy(kind 14) = %v, want ErrMalformed", err)
	}
	// The content type byte sits after the address: text (1) is no action.
	bad := append([]byte(nil), b...)
	bad[1+1+16+1+len("bob/1")] = byte(wire.ContentText)
	if _, err := wire.DecodeSentActionCopy(bad); !errors.Is(err, wire.ErrMalformed) {
		t.Errorf("DecodeSentActionCopy(content type text) = %v, want ErrMalformed", err)
	}
}

func FuzzDecodeSentActionCopy(f *testing.F) {
	for _, v := range sentActionCopyVectors() {
		b := mustEncode(wire.EncodeSentActionCopy, v.v)
		f.Add(b)            // a frozen vector
		f.Add(b[:len(b)-1]) // one byte short
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		fuzzRoundTrip(t, b, wire.DecodeSentActionCopy, wire.EncodeSentActionCopy)
	})
}
