package relayserver

import (
	"bytes"
	"crypto/rand"
	"fmt"
	"testing"
	"time"

	"github.com/parley-chat/parley/transport"
	"github.com/parley-chat/parley/transport/relaystore"
	"github.com/parley-chat/parley/wire"
)

// The multi-mailbox submit (issue 38): one payload for several mailboxes,
// served unless Config.NoSubmitMulti.

// multi returns a SubmitMulti of payload from d to the recipients (in
// order), each with a random envelope ID.
func multi(from *device, payload []byte, to ...*device) wire.SubmitMulti {
	m := wire.SubmitMulti{Type: wire.EnvelopeChain, Sender: from.addr.String(), Payload: payload}
	for _, d := range to {
		mb := wire.Mailbox{Recipient: d.addr.String()}
		rand.Read(mb.EnvelopeID[:])
		m.Mailboxes = append(m.Mailboxes, mb)
	}
	return m
}

// TestSubmitMultiSwitchedOff: a relay with NoSubmitMulti does not announce
// bit 5 and answers kind 29 as a bad request, and the connection goes on.
func TestSubmitMultiSwitchedOff(t *testing.T) {
	r := startRelay(t, Config{NoSubmitMulti: true})
	alice, bob := newDevice(t, "alice/1"), newDevice(t, "bob/1")
	if f := waitFeatures(t, dial(t, r, bob)); f.Has(wire.FeatureSubmitMulti) {
		t.Fatalf("a relay without the switch announces %s", f)
	}
	c := dialRaw(t, r)
	c.login(alice)
	c.send(2, multi(alice, []byte("hi"), bob))
	c.expectError(2, wire.ErrorBadRequest)
	env, err := wire.EncodeEnvelope(envelope(alice, bob, "after"))
	if err != nil {
		t.Fatal(err)
	}
	c.send(3, wire.Submit{Envelope: env})
	if m, ok := c.reply(3).(wire.Accepted); !ok {
		t.Fatalf("a Submit after kind 29: %+v, want accepted", m)
	}
	if got := r.metric(t, "parley_relay_submit_multi_mailboxes_count"); got != 0 {
		t.Errorf("the multi metric counts %v requests on a relay that refuses them", got)
	}
}

// TestSubmitMulti: one SubmitMulti whose mailboxes meet every fate a Submit
// can (stored, silently dropped for a recipient that blocks the sender,
// refused over the sender's share, refused for an unknown recipient), each
// answered in the order sent; each stored recipient is delivered an
// ordinary envelope with its own ID and the shared payload, on the memory
// and the SQLite store alike.
func TestSubmitMulti(t *testing.T) {
	for _, backend := range []string{"memory", "sqlite"} {
		t.Run(backend, func(t *testing.T) {
			cfg := Config{Limits: Limits{Limits: relaystore.Limits{SenderEnvelopes: 1}}}
			var r *testRelay
			if backend == "sqlite" {
				r = startSQLiteRelay(t, t.TempDir(), cfg)
			} else {
				r = startRelay(t, cfg)
			}
			alice, bob, carol, dave, nobody := newDevice(t, "alice/1"), newDevice(t, "bob/1"), newDevice(t, "carol/1"), newDevice(t, "dave/1"), newDevice(t, "nobody/1")
			cb, cc := dial(t, r, bob), dial(t, r, carol)
			dial(t, r, dave)
			if err := cc.BlockSender(ctxT(t), alice.addr, true); err != nil {
				t.Fatal(err)
			}
			if f := waitFeatures(t, cb); !f.Has(wire.FeatureSubmitMulti) {
				t.Fatalf("the relay announces %s, without submit multi", f)
			}
			c := dialRaw(t, r)
			c.login(alice)
			// alice's one envelope in dave's mailbox fills her share there.
			first, err := wire.EncodeEnvelope(envelope(alice, dave, "first"))
			if err != nil {
				t.Fatal(err)
			}
			c.send(2, wire.Submit{Envelope: first})
			if m, ok := c.reply(2).(wire.Accepted); !ok {
				t.Fatalf("the first envelope to dave: %+v", m)
			}

			m := multi(alice, []byte("one payload"), bob, carol, dave, nobody)
			c.send(3, m)
			res, ok := c.reply(3).(wire.BatchResults)
			if !ok || len(res.Results) != 4 {
				t.Fatalf("SubmitMulti: %+v, want 4 results", res)
			}
			want := []wire.SubmitOutcome{wire.SubmitAccepted, wire.SubmitAccepted,
				wire.Refusal(wire.RefuseSenderQuota), wire.Refusal(wire.RefuseUnknownRecipient)}
			for i, got := range res.Results {
				if got.EnvelopeID != m.Mailboxes[i].EnvelopeID || got.Outcome != want[i] {
					t.Errorf("result %d: %x %s, want %x %s", i, got.EnvelopeID, got.Outcome, m.Mailboxes[i].EnvelopeID, want[i])
				}
			}
			ls := receiveN(t, cb, 1)
			env, err := wire.DecodeEnvelope(ls[0].Envelope)
			if err != nil {
				t.Fatal(err)
			}
			if env.Type != wire.EnvelopeChain || env.ID != m.Mailboxes[0].EnvelopeID || env.Sender != "alice/1" || env.Recipient != "bob/1" || !bytes.Equal(env.Payload, m.Payload) {
				t.Errorf("bob was delivered %+v", env)
			}
			expectNothing(t, cc, 0)
			r.waitMetric(t, "parley_relay_submit_multi_mailboxes_count", 1)
			r.waitMetric(t, "parley_relay_submit_multi_mailboxes_sum", 4)
		})
	}
}

// TestSubmitMultiRefusals: a SubmitMulti in another sender's name is
// refused for every mailbox; one whose copies would pass maxMultiCopyBytes
// is refused as too large for every mailbox and stores nothing; the
// connection goes on.
func TestSubmitMultiRefusals(t *testing.T) {
	r := startRelay(t, Config{})
	alice, mallory := newDevice(t, "alice/1"), newDevice(t, "mallory/1")
	var to []*device
	for _, a := range []string{"bob/1", "carol/1", "dave/1", "erin/1", "frank/1"} {
		to = append(to, newDevice(t, a))
	}
	cb := dial(t, r, to[0])
	for _, d := range to[1:] {
		dial(t, r, d)
	}
	c := dialRaw(t, r)
	c.login(mallory)
	per := maxMultiCopyBytes / len(to) // the largest payload within the bound
	for req, tt := range []struct {
		m    wire.SubmitMulti
		want wire.RefuseReason
	}{
		{multi(alice, []byte("in alice's name"), to...), wire.RefuseWrongSender},
		{multi(mallory, make([]byte, per+1), to...), wire.RefuseTooLarge},
	} {
		c.send(uint32(req+2), tt.m)
		res, ok := c.reply(uint32(req + 2)).(wire.BatchResults)
		if !ok || len(res.Results) != len(to) {
			t.Fatalf("request %d: %+v, want %d results", req, res, len(to))
		}
		for i, got := range res.Results {
			if got.EnvelopeID != tt.m.Mailboxes[i].EnvelopeID || got.Outcome != wire.Refusal(tt.want) {
				t.Errorf("request %d result %d: %s, want refused (%s)", req, i, got.Outcome, tt.want)
			}
		}
	}
	c.send(9, multi(mallory, make([]byte, per), to...))
	res, _ := c.reply(9).(wire.BatchResults)
	if len(res.Results) != len(to) {
		t.Fatalf("a SubmitMulti at the copy bound: %+v", res)
	}
	for i, got := range res.Results {
		if got.Outcome != wire.SubmitAccepted {
			t.Errorf("at the copy bound, result %d: %s, want accepted", i, got.Outcome)
		}
	}
	if got := payloads(t, receiveN(t, cb, 1)); len(got) != 1 || len(got[0]) != per {
		t.Fatalf("bob received %d envelopes, want only the one at the bound", len(got))
	}
}

// TestClientSubmitMulti: the client's SubmitMulti reaches every mailbox
// through kind 29 on a relay that serves it and through envelopes on one
// that does not, with one result per mailbox either way; a payload past
// the relay's copy bound falls back to envelopes.
func TestClientSubmitMulti(t *testing.T) {
	for _, on := range []bool{true, false} {
		t.Run(fmt.Sprint("feature ", on), func(t *testing.T) {
			r := startRelay(t, Config{NoSubmitMulti: !on})
			alice, bob, carol, nobody := newDevice(t, "alice/1"), newDevice(t, "bob/1"), newDevice(t, "carol/1"), newDevice(t, "nobody/1")
			ca, cb, cc := dial(t, r, alice), dial(t, r, bob), dial(t, r, carol)
			if f := waitFeatures(t, ca); f.Has(wire.FeatureSubmitMulti) != on {
				t.Fatalf("features %s", f)
			}
			errs := ca.SubmitMulti(ctxT(t), multi(alice, []byte("to all"), bob, carol, nobody))
			if len(errs) != 3 || errs[0] != nil || errs[1] != nil {
				t.Fatalf("SubmitMulti: %v", errs)
			}
			wantRefused(t, "to an unregistered recipient", errs[2], wire.RefuseUnknownRecipient)
			for _, c := range []*transport.Conn{cb, cc} {
				if got := payloads(t, receiveN(t, c, 1)); got[0] != "to all" {
					t.Fatalf("received %q", got)
				}
			}
			to := []*device{bob, carol}
			for _, a := range []string{"dave/1", "erin/1", "frank/1"} {
				d := newDevice(t, a)
				dial(t, r, d)
				to = append(to, d)
			}
			big := make([]byte, maxMultiCopyBytes/len(to)+1)
			for i, err := range ca.SubmitMulti(ctxT(t), multi(alice, big, to...)) {
				if err != nil {
					t.Fatalf("SubmitMulti past the copy bound, mailbox %d: %v, want the envelopes sent one by one", i, err)
				}
			}
			want := 0.0
			if on {
				want = 2
			}
			if got := r.metric(t, "parley_relay_submit_multi_mailboxes_count"); got != want {
				t.Errorf("%v SubmitMultis counted, want %v", got, want)
			}
		})
	}
}

// TestSubmitMultiStoresPayloadOnce: a SubmitMulti to a group of twelve
// mailboxes on the SQLite store keeps its payload once and a head of a few
// dozen bytes per mailbox, while each mailbox is charged (and delivered)
// the whole envelope; once every recipient took its envelope, nothing is
// kept.
func TestSubmitMultiStoresPayloadOnce(t *testing.T) {
	r := startSQLiteRelay(t, t.TempDir(), Config{})
	alice := newDevice(t, "alice/1")
	var to []*device
	var conns []*transport.Conn
	for i := range 12 {
		d := newDevice(t, fmt.Sprintf("member%02d/1", i)) // in address order, as a SubmitMulti wants
		to = append(to, d)
		conns = append(conns, dial(t, r, d))
	}
	c := dialRaw(t, r)
	c.login(alice)
	payload := bytes.Repeat([]byte{0x5a}, 4096)
	m := multi(alice, payload, to...)
	c.send(2, m)
	res, ok := c.reply(2).(wire.BatchResults)
	if !ok || len(res.Results) != len(to) {
		t.Fatalf("SubmitMulti: %+v", res)
	}
	st, err := r.store.Stats(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	var whole int64
	for i := range m.Mailboxes {
		b, _ := wire.EncodeEnvelope(m.Envelope(i))
		whole += int64(len(b))
	}
	perMailbox := float64(st.Stored-int64(len(payload))) / float64(len(to))
	if st.Bytes != whole || st.Stored < int64(len(payload)) || perMailbox > 64 {
		t.Fatalf("Stats %+v: want %d bytes charged and the payload (%d) once with at most 64 bytes per mailbox (%.1f)", st, whole, len(payload), perMailbox)
	}
	t.Logf("%d mailboxes, payload %d bytes: %d bytes kept (%.1f per mailbox over the payload), %d charged", len(to), len(payload), st.Stored, perMailbox, st.Bytes)
	for _, cn := range conns {
		ls := receiveN(t, cn, 1)
		if got := payloads(t, ls); got[0] != string(payload) {
			t.Fatal("a member received another payload")
		}
		if err := cn.Release(ctxT(t), []uint64{ls[0].Row}); err != nil {
			t.Fatal(err)
		}
	}
	// The members' acknowledgements reach the store after their receive.
	deadline := time.Now().Add(10 * time.Second)
	for {
		st, err := r.store.Stats(ctxT(t))
		if err != nil {
			t.Fatal(err)
		}
		if st.Stored == 0 && st.Bytes == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after every member took its envelope: %+v, want nothing kept", st)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
