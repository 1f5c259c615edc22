package relayserver

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/parley-chat/parley/transport"
	"github.com/parley-chat/parley/transport/relaystore"
	"github.com/parley-chat/parley/transport/relaystore/natsstore"
	"github.com/parley-chat/parley/transport/relaystore/natsstore/natstest"
	"github.com/parley-chat/parley/wire"
)

// The room a mailbox keeps for the peers its owner talks to (peers.go):
// fresh addresses are free, so a flood of them from one IP, or from eight,
// must leave alice, whom bob has written to, able to deliver.

// roomLimits: a small mailbox, so that a flood fills it fast; no token
// buckets, so that only the quotas refuse.
var roomLimits = Limits{Limits: relaystore.Limits{MailboxEnvelopes: 200}, MessageRate: -1, ByteRate: -1}

// roomBackend starts a relay on one store with roomLimits.
type roomBackend struct {
	name  string
	start func(t *testing.T) *testRelay
}

var (
	roomMemory = roomBackend{"memory", func(t *testing.T) *testRelay { return startRelay(t, Config{Limits: roomLimits}) }}
	roomSQLite = roomBackend{"sqlite", func(t *testing.T) *testRelay {
		return startSQLiteRelay(t, t.TempDir(), Config{Limits: roomLimits})
	}}
	roomNATS = roomBackend{"nats", func(t *testing.T) *testRelay {
		c := natstest.StartCluster(t, 1)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		st, err := natsstore.Open(ctx, c.URLs(), natsstore.Options{Limits: roomLimits.StoreLimits()})
		if err != nil {
			t.Fatal(err)
		}
		return startStoreRelay(t, "127.0.0.1:0", st, Config{Limits: roomLimits})
	}}
)

// flood has each of perIP fresh addresses on each of ips submit to bob
// until the relay refuses it, and returns how many envelopes each IP got
// stored and the reasons it was refused for.
func flood(t *testing.T, r *testRelay, bob *device, ips []string, perIP int) (stored map[string]int, reasons map[wire.RefuseReason]int) {
	t.Helper()
	stored, reasons = map[string]int{}, map[wire.RefuseReason]int{}
	for i, ip := range ips {
		for j := range perIP {
			d := newDevice(t, fmt.Sprintf("sybil%d-%d/1", i, j))
			c := mustDialFrom(t, r, d, ip)
			for k := 0; ; k++ {
				err := c.Submit(ctxT(t), envelope(d, bob, "junk"))
				var re *transport.RefusedError
				if errors.As(err, &re) {
					reasons[re.Reason]++
					break
				}
				if err != nil {
					t.Fatalf("%s from %s: %v", d.addr, ip, err)
				}
				if k > roomLimits.MailboxEnvelopes {
					t.Fatalf("%s from %s stored more than the mailbox holds", d.addr, ip)
				}
				stored[ip]++
			}
			c.Close()
		}
	}
	return stored, reasons
}

// TestFloodLeavesRoomForAcceptedPeers: bob writes to alice (the relay
// records that bob accepts her); then fresh addresses, (a) ten from one
// IP and (b) three from each of eight IPs, submit to bob until refused.
// The strangers hold at most half of bob's mailbox and one IP at most a
// quarter of that, and alice still delivers; in (a) carol, a stranger
// from another IP, does too. Before the room for strangers, the flood
// filled the mailbox and alice was refused "mailbox full".
func TestFloodLeavesRoomForAcceptedPeers(t *testing.T) {
	eight := []string{"127.0.0.2", "127.0.0.3", "127.0.0.4", "127.0.0.5", "127.0.0.6", "127.0.0.7", "127.0.0.8", "127.0.0.9"}
	lim := roomLimits.StoreLimits()
	scenarios := []struct {
		name  string
		ips   []string
		perIP int
	}{
		{"one IP", eight[:1], 10},
		{"eight IPs", eight, 3},
	}
	for _, be := range []roomBackend{roomMemory, roomSQLite, roomNATS} {
		for _, sc := range scenarios {
			if be.name == "nats" && sc.name != "eight IPs" {
				continue // one scenario on NATS: a cluster costs seconds
			}
			t.Run(be.name+"/"+sc.name, func(t *testing.T) {
				r := be.start(t)
				alice, bob, carol := newDevice(t, "alice/1"), newDevice(t, "bob/1"), newDevice(t, "carol/1")
				ca := mustDialFrom(t, r, alice, "127.0.0.1")
				cb := mustDialFrom(t, r, bob, "127.0.0.1")
				mustSubmit(t, cb, envelope(bob, alice, "hello alice")) // bob accepts alice
				cb.Close()

				stored, reasons := flood(t, r, bob, sc.ips, sc.perIP)
				all, others := 0, 0
				for ip, n := range stored {
					if n > lim.StrangerIPEnvelopes {
						t.Errorf("strangers from %s stored %d envelopes in bob's mailbox, over their IP's share %d", ip, n, lim.StrangerIPEnvelopes)
					}
					all += n
				}
				if all > lim.StrangerEnvelopes {
					t.Errorf("strangers stored %d envelopes, over the room %d", all, lim.StrangerEnvelopes)
				}
				if reasons[wire.RefuseMailboxFull]+reasons[wire.RefuseSenderQuota] != len(sc.ips)*sc.perIP {
					t.Errorf("refusals %v, want each of the %d sybils refused for the mailbox or a share", reasons, len(sc.ips)*sc.perIP)
				}
				if len(sc.ips) == 1 {
					if got := r.metric(t, `parley_relay_limited_total{limit="stranger_ip_share"}`); got != float64(sc.perIP) {
						t.Errorf("stranger_ip_share = %v, want %d (each sybil refused once)", got, sc.perIP)
					}
					cc := mustDialFrom(t, r, carol, "127.0.0.1")
					mustSubmit(t, cc, envelope(carol, bob, "a stranger from elsewhere"))
					others++
				} else if got := r.metric(t, `parley_relay_limited_total{limit="stranger_room"}`); got < 1 {
					t.Errorf("stranger_room = %v, want the room to have refused", got)
				}
				const fromAlice = 20
				for i := range fromAlice {
					mustSubmit(t, ca, envelope(alice, bob, fmt.Sprint("from alice ", i)))
				}
				cb = mustDialFrom(t, r, bob, "127.0.0.1")
				got := 0
				for _, p := range payloads(t, receiveN(t, cb, all+others+fromAlice)) {
					if strings.HasPrefix(p, "from alice ") {
						got++
					}
				}
				if got != fromAlice {
					t.Fatalf("bob received %d of alice's %d envelopes", got, fromAlice)
				}
			})
		}
	}
}

// TestBlockSender: once bob blocks mallory, mallory's envelopes to bob are
// answered Accepted and never delivered (counted as blocked); others still
// reach bob; after the unblock mallory's reach him again. The block list
// is bounded: past it the relay refuses with an error.
func TestBlockSender(t *testing.T) {
	lim := roomLimits
	lim.BlockedSenders = 2
	for _, be := range []roomBackend{
		{"memory", func(t *testing.T) *testRelay { return startRelay(t, Config{Limits: lim}) }},
		{"sqlite", func(t *testing.T) *testRelay { return startSQLiteRelay(t, t.TempDir(), Config{Limits: lim}) }},
	} {
		t.Run(be.name, func(t *testing.T) {
			r := be.start(t)
			alice, bob, mallory := newDevice(t, "alice/1"), newDevice(t, "bob/1"), newDevice(t, "mallory/1")
			ca, cb, cm := dial(t, r, alice), dial(t, r, bob), dial(t, r, mallory)
			if err := cb.BlockSender(ctxT(t), mallory.addr, true); err != nil {
				t.Fatalf("BlockSender: %v", err)
			}
			// The features come before any reply: known by now.
			if f, ok := cb.RelayFeatures(); !ok || !f.Has(wire.FeatureSenderBlock) {
				t.Fatalf("relay features %v (%v), want sender block announced", f, ok)
			}
			if err := cm.Submit(ctxT(t), envelope(mallory, bob, "from mallory, blocked")); err != nil {
				t.Fatalf("a blocked sender's submit: %v, want Accepted like any other", err)
			}
			mustSubmit(t, ca, envelope(alice, bob, "from alice"))
			// FIFO: had mallory's envelope been stored, it would come first.
			if got := payloads(t, receiveN(t, cb, 1)); got[0] != "from alice" {
				t.Fatalf("bob received %q, want only alice's", got)
			}
			if got := r.metric(t, "parley_relay_envelopes_blocked_total"); got != 1 {
				t.Fatalf("blocked envelopes = %v, want 1", got)
			}
			if err := cb.BlockSender(ctxT(t), mallory.addr, false); err != nil {
				t.Fatalf("unblock: %v", err)
			}
			mustSubmit(t, cm, envelope(mallory, bob, "from mallory, unblocked"))
			if got := payloads(t, receiveN(t, cb, 1)); got[0] != "from mallory, unblocked" {
				t.Fatalf("bob received %q after the unblock, want mallory's", got)
			}
			for _, s := range []string{"x/1", "y/1"} {
				if err := cb.BlockSender(ctxT(t), newDevice(t, s).addr, true); err != nil {
					t.Fatalf("block %s: %v", s, err)
				}
			}
			var se *transport.ServerError
			if err := cb.BlockSender(ctxT(t), mallory.addr, true); !errors.As(err, &se) || !strings.Contains(se.Message, "block list full") {
				t.Fatalf("a third block over a list of 2: %v, want the relay's error: block list full", err)
			}
			if got := r.metric(t, `parley_relay_limited_total{limit="block_list"}`); got != 1 {
				t.Fatalf("block_list = %v, want 1", got)
			}
		})
	}
}

// TestStrangerShareByForwardedPrefix: behind a trusted proxy, the IP a
// stranger's envelope is charged to is the forwarded client, an IPv6 one
// by its /64, as every per-IP limit: eight fresh addresses from eight
// addresses of one /64 share one IP's part of bob's stranger room, and a
// stranger from another /64 through the same proxy still delivers.
func TestStrangerShareByForwardedPrefix(t *testing.T) {
	r := startRelay(t, Config{TrustedProxies: []netip.Prefix{netip.MustParsePrefix("127.0.0.2/32")}, Limits: roomLimits})
	lim := roomLimits.StoreLimits()
	bob := newDevice(t, "bob/1")
	mustDialFrom(t, r, bob, "127.0.0.1").Close()
	viaProxy := func(d *device, forwarded string) *raw {
		ws, resp, err := from("127.0.0.2").Dial(r.url+wire.WebSocketPath, http.Header{"X-Forwarded-For": {forwarded}})
		if resp != nil && resp.Body != nil {
			resp.Body.Close()
		}
		if err != nil {
			t.Fatalf("dial as %s for %s: %v", d.addr, forwarded, err)
		}
		t.Cleanup(func() { ws.Close() })
		c := &raw{tb: t, ws: ws}
		c.login(d)
		return c
	}
	// submit sends one envelope and says whether it was accepted.
	submit := func(c *raw, d *device, req uint32) bool {
		b, _ := wire.EncodeEnvelope(envelope(d, bob, "junk"))
		c.send(req, wire.Submit{Envelope: b})
		switch m := c.reply(req).(type) {
		case wire.Accepted:
			return true
		case wire.Refused:
			return false
		default:
			t.Fatalf("submit: %v", m)
			return false
		}
	}
	stored := 0
	for i := range 8 {
		d := newDevice(t, fmt.Sprintf("sybil%d/1", i))
		c := viaProxy(d, fmt.Sprintf("2001:db8:1:2::%x", i+1))
		for req := uint32(1); submit(c, d, req); req++ {
			stored++
		}
		c.ws.Close()
	}
	if stored != lim.StrangerIPEnvelopes {
		t.Fatalf("one /64 stored %d envelopes in bob's mailbox, want its share %d", stored, lim.StrangerIPEnvelopes)
	}
	carol := newDevice(t, "carol/1")
	if !submit(viaProxy(carol, "2001:db8:9::1"), carol, 1) {
		t.Fatal("a stranger from another /64 was refused")
	}
}
