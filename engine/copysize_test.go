package engine_test

import (
	"bytes"
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/wire"
)

// TestCopyTooLargeIsRefusedBeforeStoring: bob has two devices, so what
// bob/1 sends alice goes to bob/2 as a sent copy, which carries the
// conversation's address besides. A reply, an edit or a text that fits a
// message to alice but not its copy is refused with ErrCopyTooLarge (also
// wire.ErrMessageTooLarge), naming the limit, and nothing is stored: no
// lane, no history entry, no edit applied. At the limit each goes, and
// bob/2 gets its copy. Before the fix the refusal named no limit and
// failed a batch of sends whole.
func TestCopyTooLargeIsRefusedBeforeStoring(t *testing.T) {
	oneGoroutine(t)
	w, alice, bob, bob2 := twoDeviceBob(t)
	question := alice.enqueue(bob, "lunch?")
	own := bob.enqueue(alice, "from the phone")
	settle(t, 8, alice, bob, bob2)
	hist := func() int {
		h, err := bob.c.History(w.ctx, alice.addr, 0, 1000)
		if err != nil {
			t.Fatal(err)
		}
		return len(h)
	}
	out, entries := bob.pendingOut(), hist()
	long := bytes.Repeat([]byte("x"), wire.MaxSentActionTextSize+1)
	refused := func(what string, err error, limit int) {
		t.Helper()
		if !errors.Is(err, engine.ErrCopyTooLarge) || !errors.Is(err, wire.ErrMessageTooLarge) || !strings.Contains(err.Error(), strconv.Itoa(limit)) {
			t.Fatalf("%s: %v; want %v naming %d", what, err, engine.ErrCopyTooLarge, limit)
		}
		if engine.ErrorName(err) != "copy_too_large" {
			t.Errorf("%s: named %q, want copy_too_large", what, engine.ErrorName(err))
		}
		if n, m := bob.pendingOut(), hist(); n != out || m != entries {
			t.Fatalf("%s: bob/1 holds %d lanes and %d entries, want %d and %d (nothing stored)", what, n, m, out, entries)
		}
	}
	_, err := bob.c.Act(w.ctx, engine.ActionRequest{Peer: alice.addr, Content: wire.ContentReply, Target: question, Text: long})
	refused("reply", err, wire.MaxSentActionTextSize)
	_, err = bob.c.Act(w.ctx, engine.ActionRequest{Peer: alice.addr, Content: wire.ContentEdit, Target: own, Text: long})
	refused("edit", err, wire.MaxSentActionTextSize)
	if e := bob.entry(alice, own); string(e.Body) != "from the phone" || e.Edits != 0 {
		t.Fatalf("bob/1's message after the refused edit: %q, %d edits", e.Body, e.Edits)
	}
	res, err := bob.c.Enqueue(w.ctx, []engine.SendRequest{{Peer: alice.addr, Body: bytes.Repeat([]byte("y"), wire.MaxSentCopyBodySize+1)}})
	if err != nil {
		t.Fatalf("a send batch with a text too large for its copy: %v; want the request refused alone", err)
	}
	refused("text", res[0].Err, wire.MaxSentCopyBodySize)

	bob.act(alice, engine.ActionRequest{Content: wire.ContentReply, Target: question, Text: long[:wire.MaxSentActionTextSize]})
	bob.act(alice, engine.ActionRequest{Content: wire.ContentEdit, Target: own, Text: long[:wire.MaxSentActionTextSize]})
	if n := count(bob2.sync(), engine.ResultSentCopy); n != 2 {
		t.Fatalf("bob/2 got %d sent copies, want the reply's and the edit's at the limit", n)
	}
}

// TestCopyTooLargeAcceptsNoRequest: carol's message to bob/1 (in request
// mode, with a sibling) is an open request; a text to her too large for
// its copy to bob/2 is refused (ErrCopyTooLarge) and leaves the request
// open, as a send refused before anything is stored should. Before the
// fix the request was accepted first, then the text refused.
func TestCopyTooLargeAcceptsNoRequest(t *testing.T) {
	oneGoroutine(t)
	w, _, bob, _ := twoDeviceBob(t)
	carol := w.device("carol/1")
	bob.withRequests(nil)
	carol.send(bob, "hello")
	bob.sync()
	if reqs, err := bob.c.Requests(w.ctx); len(reqs) != 1 || err != nil {
		t.Fatalf("bob/1's requests: %+v, %v; want carol's", reqs, err)
	}
	res, err := bob.c.Enqueue(w.ctx, []engine.SendRequest{{Peer: carol.addr, Body: bytes.Repeat([]byte("y"), wire.MaxSentCopyBodySize+1)}})
	if err != nil || !errors.Is(res[0].Err, engine.ErrCopyTooLarge) {
		t.Fatalf("a text too large for its copy: %+v, %v; want it refused with %v", res, err, engine.ErrCopyTooLarge)
	}
	if reqs, err := bob.c.Requests(w.ctx); len(reqs) != 1 || err != nil {
		t.Fatalf("bob/1's requests after the refused send: %+v, %v; want carol's still open", reqs, err)
	}
}
