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
	t.Run("decision", func(t *testing.T) { checkVectors(t, decisionFormat, decisionVectors()) })
	t.Run("decision-body", func(t *testing.T) { checkVectors(t, decisionBodyFormat, decisionBodyVectors()) })
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
