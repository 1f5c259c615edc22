package relayserver

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/parley-chat/parley/transport"
	"github.com/parley-chat/parley/transport/relaystore/natsstore"
	"github.com/parley-chat/parley/transport/relaystore/natsstore/natstest"
	"github.com/parley-chat/parley/wire"
)

// TestSubmitMultiOnNATS: two relays share one JetStream; a SubmitMulti to
// twelve members through one keeps its payload once in the payload stream
// and a head per mailbox, the members connected to the other relay each
// receive the whole envelope, and once every one took it the streams hold
// nothing.
func TestSubmitMultiOnNATS(t *testing.T) {
	c := natstest.StartCluster(t, 1)
	start := func() *testRelay {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		st, err := natsstore.Open(ctx, c.URLs(), natsstore.Options{})
		if err != nil {
			t.Fatal(err)
		}
		return startStoreRelay(t, "127.0.0.1:0", st, Config{})
	}
	ra, rb := start(), start()
	nc, err := nats.Connect(c.URLs()[0])
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	held := func(stream string) (msgs, bytes uint64) {
		st, err := js.Stream(ctxT(t), stream)
		if err != nil {
			t.Fatal(err)
		}
		info, err := st.Info(ctxT(t))
		if err != nil {
			t.Fatal(err)
		}
		return info.State.Msgs, info.State.Bytes
	}

	alice := newDevice(t, "alice/1")
	var to []*device
	var conns []*transport.Conn
	for i := range 12 {
		d := newDevice(t, fmt.Sprintf("member%02d/1", i))
		to = append(to, d)
		conns = append(conns, dial(t, rb, d))
	}
	raw := dialRaw(t, ra)
	raw.login(alice)
	payload := bytes.Repeat([]byte{0x5a}, 4096)
	raw.send(2, multi(alice, payload, to...))
	res, ok := raw.reply(2).(wire.BatchResults)
	if !ok || len(res.Results) != len(to) {
		t.Fatalf("SubmitMulti: %+v", res)
	}
	for i, r := range res.Results {
		if r.Outcome != wire.SubmitAccepted {
			t.Fatalf("mailbox %d: %+v", i, r)
		}
	}
	if n, _ := held("PARLEY_PAYLOAD"); n != 1 {
		t.Fatalf("%d payloads kept, want 1", n)
	}
	if n, b := held("PARLEY_MAILBOX"); n != 12 || b >= uint64(len(payload)) {
		t.Fatalf("mailboxes hold %d messages of %d bytes, want 12 heads of less than the payload in all", n, b)
	}
	for _, cn := range conns {
		ls := receiveN(t, cn, 1)
		if got := payloads(t, ls); got[0] != string(payload) {
			t.Fatal("a member received another payload")
		}
		if err := cn.Release(ctxT(t), []uint64{ls[0].Row}); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		p, _ := held("PARLEY_PAYLOAD")
		r, _ := held("PARLEY_PAYREF")
		m, _ := held("PARLEY_MAILBOX")
		if p+r+m == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after every member took its envelope: %d payloads, %d records, %d heads; want none", p, r, m)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
