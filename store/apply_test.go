package store

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/wire"
)

// planCase is one plan applied to a prepared profile and read back.
type planCase struct {
	name  string
	raw   bool // not bootstrapped
	setup func(t testing.TB, f *fixture)
	plan  func(t testing.TB, f *fixture) engine.Plan
	check func(t *testing.T, f *fixture, r engine.Receipt)
}

// planCases covers every plan kind, and every path of the plans with
// several (a first session or the next version, each frame effect, with and
// without a handshake).
func planCases() []planCase {
	ctx := context.Background()
	return append([]planCase{
		{
			name: "bootstrap", raw: true,
			plan: func(t testing.TB, f *fixture) engine.Plan { return bootstrapPlan() },
			check: func(t *testing.T, f *fixture, r engine.Receipt) {
				prof, err := f.db.Profile(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if prof.Self != self || prof.Relay.URL != "ws://relay.example" || string(prof.Identity) != "identity PLAINTEXT-MARKER-identity" {
					t.Errorf("Profile = %+v, want alice/1, the relay and the identity record", prof)
				}
				if len(prof.SignedPreKeys) != 2 || string(prof.SignedPreKeys[0].Record) != "spk 1" || prof.SignedPreKeys[0].Expires != 200 ||
					prof.SignedPreKeys[1].Kind != engine.PreKeyKEM || string(prof.SignedPreKeys[1].Record) != "kem 2" {
					t.Errorf("SignedPreKeys = %+v, want spk 1 and kem 2", prof.SignedPreKeys)
				}
				if prof.NextPreKeyID != 6 || prof.OneTimeCount != 3 || prof.OneTimePublished != 0 || prof.MarkerWritten != 0 {
					t.Errorf("Profile counters = next %d, one-time %d, published %d, marker %d; want 6, 3, 0, 0",
						prof.NextPreKeyID, prof.OneTimeCount, prof.OneTimePublished, prof.MarkerWritten)
				}
				if r.Marker != 0 {
					t.Errorf("Receipt.Marker = %d, want 0: bootstrap is not visible", r.Marker)
				}
			},
		},
		{
			name: "account-create",
			plan: func(t testing.TB, f *fixture) engine.Plan { return accountPlan(t) },
			check: func(t *testing.T, f *fixture, r engine.Receipt) {
				prof, err := f.db.Profile(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(prof.AccountKey, accountPlan(t).Key) || !bytes.Equal(prof.DeviceList, accountPlan(t).List) {
					t.Errorf("Profile account = %q, %x; want the plan's", prof.AccountKey, prof.DeviceList)
				}
			},
		},
		{
			name:  "account-list-update",
			setup: func(t testing.TB, f *fixture) { f.apply(t, accountPlan(t)) },
			plan: func(t testing.TB, f *fixture) engine.Plan {
				return engine.UpdateDeviceList{From: accountPlan(t).List, List: secondListPlan(t)}
			},
			check: func(t *testing.T, f *fixture, r engine.Receipt) {
				prof, err := f.db.Profile(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(prof.DeviceList, secondListPlan(t)) || !bytes.Equal(prof.AccountKey, accountPlan(t).Key) {
					t.Errorf("Profile account = %q, %x; want the key kept and generation 2", prof.AccountKey, prof.DeviceList)
				}
			},
		},
		{
			name: "block-import",
			plan: func(t testing.TB, f *fixture) engine.Plan {
				return engine.ImportBlock{Peer: bob, At: time.Unix(500, 0)}
			},
			check: func(t *testing.T, f *fixture, r engine.Receipt) {
				blocks, err := f.db.Blocks(ctx)
				if err != nil || len(blocks) != 1 || blocks[0] != bob {
					t.Errorf("Blocks = %v, %v; want bob", blocks, err)
				}
			},
		},
		{
			name: "prekey-publish",
			setup: func(t testing.TB, f *fixture) {
				for i, at := range []int64{100, 5000} {
					row := f.stage(t)
					f.apply(t, engine.CollisionRetire{StagedRow: row, Peer: bob, Retired: engine.RetiredInitiation{ID: initiation(byte(8 + i)), SignedPreKeyID: 1, RetiredAt: at}})
				}
			},
			plan: func(t testing.TB, f *fixture) engine.Plan {
				return engine.PublishPreKeys{
					Add: []engine.PreKeyRecord{
						{Kind: engine.PreKeySigned, ID: 10, Created: 300, Expires: 400, Record: []byte("spk 10")},
						{Kind: engine.PreKeyKEM, ID: 11, Created: 300, Expires: 400, Record: []byte("kem 11")},
						{Kind: engine.PreKeyOneTime, ID: 12, Record: []byte("otk 12")},
						{Kind: engine.PreKeyOneTime, ID: 13, Record: []byte("otk 13")},
					},
					DeleteSigned: []uint32{1}, DeleteKEM: []uint32{2},
					RetiredBefore: time.Unix(1000, 0), NextPreKeyID: 14, PublishedUpTo: 13,
				}
			},
			check: func(t *testing.T, f *fixture, r engine.Receipt) {
				prof, err := f.db.Profile(ctx)
				if err != nil {
					t.Fatal(err)
				}
				var ids []uint32
				for _, k := range prof.SignedPreKeys {
					ids = append(ids, k.ID)
				}
				if !slices.Equal(ids, []uint32{10, 11}) || prof.NextPreKeyID != 14 || prof.OneTimePublished != 13 || prof.OneTimeCount != 5 {
					t.Errorf("Profile = signed %v, next %d, published %d, one-time %d; want [10 11], 14, 13, 5",
						ids, prof.NextPreKeyID, prof.OneTimePublished, prof.OneTimeCount)
				}
				for b, want := range map[byte]bool{8: false, 9: true} {
					if got, err := f.db.Retired(ctx, bob, initiation(b)); err != nil || got != want {
						t.Errorf("Retired(%d) = %v, %v; want %v", b, got, err, want)
					}
				}
				if rec, err := f.db.OneTimePreKey(ctx, 13); err != nil || string(rec) != "otk 13" {
					t.Errorf("OneTimePreKey(13) = %q, %v", rec, err)
				}
			},
		},
		{
			name: "pairwise-send first session",
			plan: func(t testing.TB, f *fixture) engine.Plan { return sendPlan(t, bob, idSent, "hello", 0) },
			check: func(t *testing.T, f *fixture, r engine.Receipt) {
				if r.Seq != 1 || r.Marker != 1 {
					t.Errorf("Receipt = %+v, want Seq 1, Marker 1", r)
				}
				m, err := f.db.Outbound(ctx, bob, idSent)
				if err != nil || m.Seq != 1 || string(m.Body) != "hello" || !bytes.Equal(m.Frame, frameOf(t, idSent, "hello")) || !m.CreatedAt.Equal(planAt) {
					t.Errorf("Outbound = %+v, %v; want seq 1, body hello, created at %v", m, err, planAt)
				}
				wantPeer(t, f, bob, identityKey('b'), 1, "send hello")
				wantHistory(t, f, bob, engine.DirectionOut, "hello", engine.SentPending)
			},
		},
		{
			name:  "pairwise-send on a session",
			setup: withSession,
			plan:  func(t testing.TB, f *fixture) engine.Plan { return sendPlan(t, bob, logicalID(3), "again", 1) },
			check: func(t *testing.T, f *fixture, r engine.Receipt) {
				if r.Seq != 2 || r.Marker != 2 {
					t.Errorf("Receipt = %+v, want Seq 2, Marker 2", r)
				}
				wantPeer(t, f, bob, identityKey('b'), 2, "send again")
				if n, err := f.db.CountOutbound(ctx, &bob); err != nil || n != 2 {
					t.Errorf("CountOutbound(bob) = %d, %v; want 2", n, err)
				}
			},
		},
		{
			name:  "retry",
			setup: withSession,
			plan:  func(t testing.TB, f *fixture) engine.Plan { return retryPlan(bob, idSent, 1) },
			check: func(t *testing.T, f *fixture, r engine.Receipt) {
				if r.Marker != 2 {
					t.Errorf("Receipt = %+v, want Marker 2", r)
				}
				wantPeer(t, f, bob, identityKey('b'), 2, "retry")
				if _, err := f.db.Outbound(ctx, bob, idSent); err != nil {
					t.Errorf("Outbound after a retry = %v, want still pending", err)
				}
			},
		},
		{
			name: "stage",
			plan: func(t testing.TB, f *fixture) engine.Plan {
				return engine.Stage{At: planAt, Envelopes: []engine.StagedInput{{RelayRow: 7, Envelope: []byte("one")}, {RelayRow: 1 << 63, Envelope: []byte("two")}}}
			},
			check: func(t *testing.T, f *fixture, r engine.Receipt) {
				if !slices.Equal(r.Rows, []int64{1, 2}) || r.Marker != 0 {
					t.Errorf("Receipt = %+v, want Rows [1 2], no marker", r)
				}
				got, err := f.db.Staged(ctx, 0, 10)
				if err != nil || len(got) != 2 || string(got[0].Envelope) != "one" || got[0].RelayRow != 7 ||
					string(got[1].Envelope) != "two" || got[1].RelayRow != 1<<63 || got[1].Row != 2 || !got[1].ReceivedAt.Equal(planAt) {
					t.Errorf("Staged = %+v, %v", got, err)
				}
			},
		},
		{
			name:  "handshake-receive first contact",
			setup: func(t testing.TB, f *fixture) { f.stage(t) },
			plan: func(t testing.TB, f *fixture) engine.Plan {
				k, otk := identityKey('c'), uint32(3)
				p := receivePlan(1, carol, 0, deliver(t, idRecv, "first words"))
				p.Handshake = &engine.Handshake{Pin: &k, ConsumeOneTime: &otk}
				return p
			},
			check: func(t *testing.T, f *fixture, r engine.Receipt) {
				if r.Seq != 1 || r.Marker != 1 || r.Cleared {
					t.Errorf("Receipt = %+v, want Seq 1, Marker 1", r)
				}
				m, err := f.db.Inbound(ctx, carol, idRecv)
				if err != nil || string(m.Body) != "first words" || m.Digest != sha256.Sum256([]byte("first words")) || !m.ReceivedAt.Equal(planAt) {
					t.Errorf("Inbound = %+v, %v", m, err)
				}
				if _, err := f.db.OneTimePreKey(ctx, 3); !errors.Is(err, engine.ErrUnknownPreKey) {
					t.Errorf("OneTimePreKey(3) after its use = %v, want ErrUnknownPreKey", err)
				}
				wantPeer(t, f, carol, identityKey('c'), 1, "receive")
				wantStaged(t, f, 0)
			},
		},
		{
			name:  "handshake-receive replacing a session",
			setup: func(t testing.TB, f *fixture) { withSession(t, f); f.stage(t) },
			plan: func(t testing.TB, f *fixture) engine.Plan {
				p := receivePlan(1, bob, 1, deliver(t, idRecv, "replaced"))
				p.Handshake = &engine.Handshake{Retire: &engine.RetiredInitiation{ID: initiation(7), SignedPreKeyID: 1, RetiredAt: 500}}
				return p
			},
			check: func(t *testing.T, f *fixture, r engine.Receipt) {
				if ok, err := f.db.Retired(ctx, bob, initiation(7)); !ok || err != nil {
					t.Errorf("Retired = %v, %v; want true", ok, err)
				}
				wantPeer(t, f, bob, identityKey('b'), 2, "receive")
			},
		},
		{
			name:  "pairwise-receive",
			setup: func(t testing.TB, f *fixture) { withSession(t, f); f.stage(t) },
			plan:  func(t testing.TB, f *fixture) engine.Plan { return receivePlan(1, bob, 1, deliver(t, idRecv, "reply")) },
			check: func(t *testing.T, f *fixture, r engine.Receipt) {
				if r.Seq != 1 || r.Marker != 2 {
					t.Errorf("Receipt = %+v, want Seq 1, Marker 2", r)
				}
				if got, err := f.db.PendingInbound(ctx, engine.PageQuery{}); err != nil || len(got) != 1 || string(got[0].Body) != "reply" {
					t.Errorf("PendingInbound = %+v, %v", got, err)
				}
				wantPeer(t, f, bob, identityKey('b'), 2, "receive")
			},
		},
		{
			name:  "receive-commit",
			setup: func(t testing.TB, f *fixture) { withSession(t, f); f.stage(t) },
			plan: func(t testing.TB, f *fixture) engine.Plan {
				p := receivePlan(1, bob, 1, engine.CommitEffect{ID: idRecv, Digest: sha256.Sum256([]byte("reply")),
					Arrived: planAt, At: planAt.Add(time.Second), Body: []byte("reply")})
				p.Ack = ackOut(bob)
				return p
			},
			check: func(t *testing.T, f *fixture, r engine.Receipt) {
				// Two visible transitions, the delivery and its commit.
				if r.Marker != 3 {
					t.Errorf("Receipt = %+v, want Marker 3", r)
				}
				if got, err := f.db.PendingInbound(ctx, engine.PageQuery{}); err != nil || len(got) != 0 {
					t.Errorf("PendingInbound = %+v, %v; want nothing pending", got, err)
				}
				fr, err := f.db.Finalized(ctx, bob, idRecv)
				if err != nil || fr.Outcome != engine.OutcomeCommitted || fr.Digest != sha256.Sum256([]byte("reply")) || !fr.At.Equal(planAt.Add(time.Second)) {
					t.Errorf("Finalized = %+v, %v; want committed at the plan's At", fr, err)
				}
				// The history entry is at the arrival.
				wantHistory(t, f, bob, engine.DirectionIn, "reply", 0)
				if got, err := f.db.Staged(ctx, 0, 10); err != nil || len(got) != 0 {
					t.Errorf("Staged = %+v, %v; want the row consumed", got, err)
				}
				wantPeer(t, f, bob, identityKey('b'), 2, "receive")
			},
		},
		{
			name:  "ack-receive",
			setup: func(t testing.TB, f *fixture) { withSession(t, f); f.stage(t) },
			plan: func(t testing.TB, f *fixture) engine.Plan {
				return receivePlan(1, bob, 1, engine.AckEffect{ID: idSent})
			},
			check: func(t *testing.T, f *fixture, r engine.Receipt) {
				if !r.Cleared || r.Seq != 0 {
					t.Errorf("Receipt = %+v, want Cleared", r)
				}
				if _, err := f.db.Outbound(ctx, bob, idSent); !errors.Is(err, engine.ErrNotPending) {
					t.Errorf("Outbound after its ACK = %v, want ErrNotPending", err)
				}
				wantHistory(t, f, bob, engine.DirectionOut, "hello PLAINTEXT-MARKER-sent", engine.SentAcknowledged)
			},
		},
		{
			name:  "ack-receive of nothing pending",
			setup: func(t testing.TB, f *fixture) { withSession(t, f); f.stage(t) },
			plan: func(t testing.TB, f *fixture) engine.Plan {
				return receivePlan(1, bob, 1, engine.AckEffect{ID: logicalID(9)})
			},
			check: func(t *testing.T, f *fixture, r engine.Receipt) {
				if r.Cleared {
					t.Errorf("Receipt = %+v, want not Cleared", r)
				}
				if n, _ := f.db.CountOutbound(ctx, nil); n != 1 {
					t.Errorf("CountOutbound = %d, want 1", n)
				}
				wantPeer(t, f, bob, identityKey('b'), 2, "receive")
			},
		},
		{
			name:  "repeat-receive with an ACK",
			setup: func(t testing.TB, f *fixture) { withCommitted(t, f); f.stage(t) },
			plan: func(t testing.TB, f *fixture) engine.Plan {
				p := receivePlan(2, bob, 3, engine.RepeatEffect{})
				p.Ack = ackOut(bob)
				return p
			},
			check: func(t *testing.T, f *fixture, r engine.Receipt) {
				if r.Seq != 0 || r.Marker != 4 {
					t.Errorf("Receipt = %+v, want Marker 4", r)
				}
				wantPeer(t, f, bob, identityKey('b'), 4, "receive")
				wantStaged(t, f, 0)
			},
		},
		{
			name:  "collision-retire",
			setup: func(t testing.TB, f *fixture) { f.stage(t) },
			plan: func(t testing.TB, f *fixture) engine.Plan {
				return engine.CollisionRetire{StagedRow: 1, Peer: bob, Retired: engine.RetiredInitiation{ID: initiation(5), SignedPreKeyID: 1, RetiredAt: 100}}
			},
			check: func(t *testing.T, f *fixture, r engine.Receipt) {
				if r.Marker != 1 {
					t.Errorf("Receipt = %+v, want Marker 1", r)
				}
				if ok, err := f.db.Retired(ctx, bob, initiation(5)); !ok || err != nil {
					t.Errorf("Retired = %v, %v; want true", ok, err)
				}
				wantStaged(t, f, 0)
			},
		},
		{
			name:  "quarantine",
			setup: func(t testing.TB, f *fixture) { f.stage(t) },
			plan: func(t testing.TB, f *fixture) engine.Plan {
				return engine.DropStaged{StagedRow: 1, Reason: "malformed_frame", At: planAt}
			},
			check: func(t *testing.T, f *fixture, r engine.Receipt) {
				if r.Marker != 1 {
					t.Errorf("Receipt = %+v, want Marker 1", r)
				}
				wantStaged(t, f, 0)
				var reason string
				var at, received int64
				var sealed []byte
				err := f.db.sql.QueryRowContext(ctx, "SELECT reason, quarantined_at, received_at, sealed FROM quarantine WHERE row = 1").Scan(&reason, &at, &received, &sealed)
				if err != nil || reason != "malformed_frame" || at != planAt.UnixNano() || received != planAt.UnixNano() {
					t.Fatalf("quarantine row = %q %d %d, %v", reason, at, received, err)
				}
				if env, err := f.db.seal.open(kindStaged, stagedKey(1), sealed); err != nil || string(env) != "envelope" {
					t.Errorf("quarantined record opens as %q, %v; want the inbox record verbatim", env, err)
				}
			},
		},
		{
			name:  "commit",
			setup: withInbound,
			plan:  func(t testing.TB, f *fixture) engine.Plan { return commitPlan(t, 2) },
			check: func(t *testing.T, f *fixture, r engine.Receipt) {
				if r.Marker != 3 {
					t.Errorf("Receipt = %+v, want Marker 3", r)
				}
				if _, err := f.db.Inbound(ctx, bob, idRecv); !errors.Is(err, engine.ErrNotPending) {
					t.Errorf("Inbound after commit = %v, want ErrNotPending", err)
				}
				fr, err := f.db.Finalized(ctx, bob, idRecv)
				if err != nil || fr.Outcome != engine.OutcomeCommitted || fr.Digest != sha256.Sum256([]byte("hi PLAINTEXT-MARKER-received")) || !fr.At.Equal(planAt) {
					t.Errorf("Finalized = %+v, %v", fr, err)
				}
				wantHistory(t, f, bob, engine.DirectionIn, "hi PLAINTEXT-MARKER-received", 0)
				wantPeer(t, f, bob, identityKey('b'), 3, "ack")
			},
		},
		{
			name:  "discard",
			setup: withInbound,
			plan: func(t testing.TB, f *fixture) engine.Plan {
				return engine.Finalize{Sender: bob, ID: idRecv, Digest: sha256.Sum256([]byte("hi PLAINTEXT-MARKER-received")),
					Outcome: engine.OutcomeDiscarded, Reason: engine.DiscardPolicy, At: planAt}
			},
			check: func(t *testing.T, f *fixture, r engine.Receipt) {
				fr, err := f.db.Finalized(ctx, bob, idRecv)
				if err != nil || fr.Outcome != engine.OutcomeDiscarded || fr.Reason != engine.DiscardPolicy {
					t.Errorf("Finalized = %+v, %v; want discarded by policy", fr, err)
				}
				h, _ := f.db.History(ctx, bob, 0, 10)
				if len(h) != 1 || h[0].Direction != engine.DirectionOut {
					t.Errorf("History = %+v, want only the sent message", h)
				}
				wantPeer(t, f, bob, identityKey('b'), 2, "receive")
			},
		},
		{
			name:  "need-chain-ask",
			setup: withCommitted,
			plan: func(t testing.TB, f *fixture) engine.Plan {
				return engine.NeedChainAsk{Peer: bob, Chain: wire.ChainID{7}, Position: 3, Session: sessionWrite(bob, 3, "need chain"), Request: *ackOut(bob)}
			},
			check: func(t *testing.T, f *fixture, r engine.Receipt) {
				if r.Marker != 0 {
					t.Errorf("Receipt = %+v, want no marker: nothing visible changed", r)
				}
				wantPeer(t, f, bob, identityKey('b'), 4, "need chain")
			},
		},
		{
			name:  "chain-ack",
			setup: withCommitted,
			plan: func(t testing.TB, f *fixture) engine.Plan {
				return engine.ChainAck{Peer: bob, Group: wire.GroupID{1}, IDs: []wire.LogicalID{idRecv}, Session: sessionWrite(bob, 3, "chain ack"), Ack: *ackOut(bob)}
			},
			check: func(t *testing.T, f *fixture, r engine.Receipt) {
				if r.Marker != 0 {
					t.Errorf("Receipt = %+v, want no marker: nothing visible changed", r)
				}
				wantPeer(t, f, bob, identityKey('b'), 4, "chain ack")
			},
		},
		{
			name:  "ack-again",
			setup: withCommitted,
			plan: func(t testing.TB, f *fixture) engine.Plan {
				return engine.AckAgain{Sender: bob, ID: idRecv, Outcome: engine.OutcomeCommitted, Session: sessionWrite(bob, 3, "ack again"),
					Ack: *ackOut(bob), At: planAt}
			},
			check: func(t *testing.T, f *fixture, r engine.Receipt) {
				if r.Marker != 0 {
					t.Errorf("Receipt = %+v, want no marker: nothing visible changed", r)
				}
				fr, err := f.db.Finalized(ctx, bob, idRecv)
				if err != nil || fr.Outcome != engine.OutcomeCommitted || !fr.At.Equal(planAt) {
					t.Errorf("Finalized = %+v, %v; want the commit as it was", fr, err)
				}
				wantHistory(t, f, bob, engine.DirectionIn, "hi PLAINTEXT-MARKER-received", 0)
				wantPeer(t, f, bob, identityKey('b'), 4, "ack again")
			},
		},
		{
			name:  "abandon",
			setup: withSession,
			plan: func(t testing.TB, f *fixture) engine.Plan {
				return engine.Abandon{Recipient: bob, ID: idSent, At: planAt}
			},
			check: func(t *testing.T, f *fixture, r engine.Receipt) {
				if r.Marker != 2 {
					t.Errorf("Receipt = %+v, want Marker 2", r)
				}
				if _, err := f.db.Outbound(ctx, bob, idSent); !errors.Is(err, engine.ErrNotPending) {
					t.Errorf("Outbound after abandon = %v, want ErrNotPending", err)
				}
				wantHistory(t, f, bob, engine.DirectionOut, "hello PLAINTEXT-MARKER-sent", engine.SentAbandoned)
			},
		},
		{
			name:  "mark-taken",
			setup: withSession,
			plan: func(t testing.TB, f *fixture) engine.Plan {
				return engine.MarkTaken{Peer: bob, ID: idSent, N: 1, At: planAt}
			},
			check: func(t *testing.T, f *fixture, r engine.Receipt) {
				got, err := f.db.Attempts(ctx, bob, idSent)
				if err != nil || len(got) != 1 || !got[0].TakenAt.Equal(planAt) {
					t.Errorf("attempts %+v, %v; want one, taken at %v", got, err, planAt)
				}
			},
		},
		{
			name:  "identity-change",
			setup: withInbound,
			plan: func(t testing.TB, f *fixture) engine.Plan {
				return engine.AcceptIdentity{Peer: bob, Identity: identityKey('x'), SessionVersion: 2, At: planAt,
					Retire: &engine.RetiredInitiation{ID: initiation(7), SignedPreKeyID: 1, RetiredAt: planAt.Unix()}, Replaces: initiation(7)}
			},
			check: func(t *testing.T, f *fixture, r engine.Receipt) {
				ps, err := f.db.Peer(ctx, bob)
				if err != nil || ps.Pinned == nil || *ps.Pinned != identityKey('x') || ps.Session != nil || ps.SessionVersion != 0 {
					t.Errorf("Peer = %+v, %v; want the new identity and no session", ps, err)
				}
				if ok, err := f.db.Retired(ctx, bob, initiation(7)); !ok || err != nil {
					t.Errorf("Retired(the removed session's initiation) = %v, %v; want true", ok, err)
				}
				if ps.Replaces != initiation(7) {
					t.Errorf("Peer.Replaces = %x, want the removed session's initiation", ps.Replaces[:4])
				}
				in, _ := f.db.CountInbound(ctx, nil)
				out, _ := f.db.CountOutbound(ctx, nil)
				if in != 1 || out != 1 {
					t.Errorf("pending after an identity change: %d in, %d out; want both kept", in, out)
				}
			},
		},
		{
			name: "identity-change without a session",
			plan: func(t testing.TB, f *fixture) engine.Plan {
				return engine.AcceptIdentity{Peer: carol, Identity: identityKey('y'), At: planAt}
			},
			check: func(t *testing.T, f *fixture, r engine.Receipt) { wantPeer(t, f, carol, identityKey('y'), 0, "") },
		},
		{
			name:  "prune",
			setup: withCommitted,
			plan:  func(t testing.TB, f *fixture) engine.Plan { return engine.Prune{Before: planAt.Add(time.Nanosecond)} },
			check: func(t *testing.T, f *fixture, r engine.Receipt) {
				if r.Pruned != 1 || r.Marker != 0 {
					t.Errorf("Receipt = %+v, want Pruned 1", r)
				}
				if _, err := f.db.Finalized(ctx, bob, idRecv); !errors.Is(err, engine.ErrNotPending) {
					t.Errorf("Finalized after prune = %v, want ErrNotPending", err)
				}
			},
		},
		{
			name:  "presented",
			setup: withInbound,
			plan:  func(t testing.TB, f *fixture) engine.Plan { return engine.MarkPresented{Seq: 2} },
			check: func(t *testing.T, f *fixture, r engine.Receipt) {
				prof, err := f.db.Profile(ctx)
				if err != nil || prof.MarkerWritten != 2 || prof.MarkerPresented != 2 {
					t.Errorf("Profile markers = %d written, %d presented, %v; want 2, 2", prof.MarkerWritten, prof.MarkerPresented, err)
				}
			},
		},
	}, append(append(append(requestPlanCases(), uploadPlanCases()...), archivePlanCases()...), linkPlanCases()...)...)
}

func wantPeer(t *testing.T, f *fixture, peer engine.Address, key engine.IdentityKey, version uint64, tag string) {
	t.Helper()
	ps, err := f.db.Peer(context.Background(), peer)
	if err != nil {
		t.Fatalf("Peer(%s) = %v", peer, err)
	}
	if ps.Pinned == nil || *ps.Pinned != key {
		t.Errorf("Peer(%s).Pinned = %v, want %x", peer, ps.Pinned, key.SigningKey[:4])
	}
	if ps.SessionVersion != version || (version == 0) != (ps.Session == nil) || !strings.HasSuffix(string(ps.Session), tag) {
		t.Errorf("Peer(%s) session = version %d %q, want version %d ending in %q", peer, ps.SessionVersion, ps.Session, version, tag)
	}
}

func wantHistory(t *testing.T, f *fixture, peer engine.Address, dir engine.Direction, body string, state engine.SentState) {
	t.Helper()
	h, err := f.db.History(context.Background(), peer, 0, 100)
	if err != nil {
		t.Fatalf("History(%s) = %v", peer, err)
	}
	for _, e := range h {
		if e.Direction == dir && string(e.Body) == body {
			if e.State != state || !e.At.Equal(planAt) {
				t.Errorf("history entry %q = state %d at %v, want state %d at %v", body, e.State, e.At, state, planAt)
			}
			return
		}
	}
	t.Errorf("History(%s) = %+v, want a %s entry %q", peer, h, dir, body)
}

func wantStaged(t *testing.T, f *fixture, n int) {
	t.Helper()
	got, err := f.db.Staged(context.Background(), 0, 100)
	if err != nil || len(got) != n {
		t.Errorf("Staged = %d rows, %v; want %d", len(got), err, n)
	}
}

// prepare makes the profile of a case, ready for its plan.
func (c planCase) prepare(t testing.TB) (*fixture, engine.Plan) {
	t.Helper()
	f := newFixture(t, c.raw)
	if c.setup != nil {
		c.setup(t, f)
	}
	return f, c.plan(t, f)
}

func TestApplyPlans(t *testing.T) {
	for _, c := range planCases() {
		t.Run(c.name, func(t *testing.T) {
			f, p := c.prepare(t)
			r := f.apply(t, p)
			c.check(t, f, r)
			// The state survives a reopen.
			mustClose(t, f.db)
			f.db = mustOpen(t, f.dir)
			c.check(t, f, r)
		})
	}
}

// TestApplyKinds checks that the cases cover every plan kind.
func TestApplyKinds(t *testing.T) {
	want := []string{"bootstrap", "prekey-publish", "pairwise-send", "retry", "stage", "handshake-receive", "ack-receive",
		"repeat-receive", "pairwise-receive", "receive-commit", "collision-retire", "quarantine", "commit", "discard", "ack-again", "abandon",
		"mark-taken", "chain-ack", "identity-change", "prune", "presented"}
	got := map[string]bool{}
	for _, c := range planCases() {
		_, p := c.prepare(t)
		got[p.Kind()] = true
	}
	for _, k := range want {
		if !got[k] {
			t.Errorf("no case applies a %s plan", k)
		}
	}
}

// missCase is a plan that the durable state or the plan itself refuses.
type missCase struct {
	name  string
	raw   bool
	setup func(t testing.TB, f *fixture)
	plan  func(t testing.TB) engine.Plan
	want  error
	// early: refused before the transaction, without a failpoint.
	early bool
}

func missCases() []missCase {
	sendWith := func(mod func(*engine.Send)) func(t testing.TB) engine.Plan {
		return func(t testing.TB) engine.Plan {
			p := sendPlan(t, bob, idSent, "hello", 0)
			mod(&p)
			return p
		}
	}
	commitWith := func(mod func(*engine.Finalize)) func(t testing.TB) engine.Plan {
		return func(t testing.TB) engine.Plan {
			p := commitPlan(t, 2)
			mod(&p)
			return p
		}
	}
	stageRow := func(t testing.TB, f *fixture) { withSession(t, f); f.stage(t) }
	return []missCase{
		// The durable state is not the one the plan expects.
		{name: "bootstrap twice", plan: func(t testing.TB) engine.Plan { return bootstrapPlan() }, want: engine.ErrProfileExists},
		{name: "publish an existing prekey", plan: func(t testing.TB) engine.Plan {
			return engine.PublishPreKeys{Add: []engine.PreKeyRecord{{Kind: engine.PreKeyOneTime, ID: 5, Record: []byte("again")}}}
		}, want: engine.ErrConflict},
		{name: "delete an unknown signed prekey", plan: func(t testing.TB) engine.Plan { return engine.PublishPreKeys{DeleteSigned: []uint32{2}} }, want: engine.ErrConflict},
		{name: "next prekey ID going back", plan: func(t testing.TB) engine.Plan { return engine.PublishPreKeys{NextPreKeyID: 6} }, want: engine.ErrConflict},
		{name: "send a message twice", setup: withSession, plan: func(t testing.TB) engine.Plan { return sendPlan(t, bob, idSent, "hello", 1) }, want: engine.ErrConflict},
		{name: "first session when there is one", setup: withSession, plan: func(t testing.TB) engine.Plan { return sendPlan(t, bob, logicalID(3), "x", 0) }, want: engine.ErrConflict},
		{name: "first session without a pin", plan: sendWith(func(p *engine.Send) { p.Pin = nil }), want: engine.ErrConflict},
		{name: "stale session version", setup: withInbound, plan: func(t testing.TB) engine.Plan { return sendPlan(t, bob, logicalID(3), "x", 1) }, want: engine.ErrConflict},
		{name: "session version from the future", setup: withSession, plan: func(t testing.TB) engine.Plan { return sendPlan(t, bob, logicalID(3), "x", 5) }, want: engine.ErrConflict},
		{name: "pin a pinned peer with another identity", setup: withSession, plan: func(t testing.TB) engine.Plan {
			// The same identity again is kept (a group state or an
			// archive pinned it first: TestPinAgainKept).
			p := sendPlan(t, bob, logicalID(3), "x", 1)
			k := identityKey('z')
			p.Pin = &k
			return p
		}, want: engine.ErrConflict},
		{name: "retry of nothing pending", setup: withSession, plan: func(t testing.TB) engine.Plan { return retryPlan(bob, logicalID(9), 1) }, want: engine.ErrNotPending},
		{name: "receive a processed row", setup: withSession, plan: func(t testing.TB) engine.Plan {
			return receivePlan(1, bob, 1, deliver(t, idRecv, "x"))
		}, want: engine.ErrConflict},
		{name: "receive a message already pending", setup: func(t testing.TB, f *fixture) { withInbound(t, f); f.stage(t) }, plan: func(t testing.TB) engine.Plan {
			return receivePlan(2, bob, 2, deliver(t, idRecv, "again"))
		}, want: engine.ErrConflict},
		{name: "consume an unknown one-time prekey", setup: func(t testing.TB, f *fixture) { f.stage(t) }, plan: func(t testing.TB) engine.Plan {
			k, otk := identityKey('c'), uint32(99)
			p := receivePlan(1, carol, 0, deliver(t, idRecv, "x"))
			p.Handshake = &engine.Handshake{Pin: &k, ConsumeOneTime: &otk}
			return p
		}, want: engine.ErrConflict},
		{name: "retire a retired initiation", setup: func(t testing.TB, f *fixture) {
			stageRow(t, f)
			f.apply(t, engine.CollisionRetire{StagedRow: 1, Peer: bob, Retired: engine.RetiredInitiation{ID: initiation(7)}})
			f.stage(t)
		}, plan: func(t testing.TB) engine.Plan {
			p := receivePlan(2, bob, 1, engine.RepeatEffect{})
			p.Handshake = &engine.Handshake{Retire: &engine.RetiredInitiation{ID: initiation(7)}}
			return p
		}, want: engine.ErrConflict},
		{name: "collision-retire of a processed row", plan: func(t testing.TB) engine.Plan {
			return engine.CollisionRetire{StagedRow: 1, Peer: bob, Retired: engine.RetiredInitiation{ID: initiation(1)}}
		}, want: engine.ErrConflict},
		{name: "quarantine a processed row", plan: func(t testing.TB) engine.Plan {
			return engine.DropStaged{StagedRow: 3, Reason: "x", At: planAt}
		}, want: engine.ErrConflict},
		{name: "finalize nothing pending", setup: withSession, plan: commitWith(func(*engine.Finalize) {}), want: engine.ErrNotPending},
		{name: "finalize twice", setup: withCommitted, plan: commitWith(func(p *engine.Finalize) { s := sessionWrite(bob, 3, "ack"); p.Session = &s }), want: engine.ErrNotPending},
		{name: "finalize another digest", setup: withInbound, plan: commitWith(func(p *engine.Finalize) { p.Digest[0] ^= 1 }), want: engine.ErrConflict},
		{name: "cumulative ack of nothing finalized", setup: withCommitted, plan: func(t testing.TB) engine.Plan {
			return engine.ChainAck{Peer: bob, IDs: []wire.LogicalID{idRecv, logicalID(0xee)}, Session: sessionWrite(bob, 3, "ack"), Ack: *ackOut(bob)}
		}, want: engine.ErrNotPending},
		{name: "cumulative ack with a stale session", setup: withCommitted, plan: func(t testing.TB) engine.Plan {
			return engine.ChainAck{Peer: bob, IDs: []wire.LogicalID{idRecv}, Session: sessionWrite(bob, 2, "ack"), Ack: *ackOut(bob)}
		}, want: engine.ErrConflict},
		{name: "ack again of nothing finalized", setup: withInbound, plan: func(t testing.TB) engine.Plan {
			return engine.AckAgain{Sender: bob, ID: idRecv, Outcome: engine.OutcomeCommitted, Session: sessionWrite(bob, 2, "ack"), Ack: *ackOut(bob), At: planAt}
		}, want: engine.ErrNotPending},
		{name: "ack again of another outcome", setup: withCommitted, plan: func(t testing.TB) engine.Plan {
			return engine.AckAgain{Sender: bob, ID: idRecv, Outcome: engine.OutcomeDiscarded, Session: sessionWrite(bob, 3, "ack"), Ack: *ackOut(bob), At: planAt}
		}, want: engine.ErrNotPending},
		{name: "ack again with a stale session", setup: withCommitted, plan: func(t testing.TB) engine.Plan {
			return engine.AckAgain{Sender: bob, ID: idRecv, Outcome: engine.OutcomeCommitted, Session: sessionWrite(bob, 2, "ack"), Ack: *ackOut(bob), At: planAt}
		}, want: engine.ErrConflict},
		{name: "abandon nothing pending", setup: withSession, plan: func(t testing.TB) engine.Plan { return engine.Abandon{Recipient: bob, ID: idRecv} }, want: engine.ErrNotPending},
		{name: "accept identity with a stale session", setup: withInbound, plan: func(t testing.TB) engine.Plan {
			return engine.AcceptIdentity{Peer: bob, Identity: identityKey('x'), SessionVersion: 1, At: planAt, Retire: &engine.RetiredInitiation{ID: initiation(7)}}
		}, want: engine.ErrConflict},
		{name: "accept identity missing a session", setup: withSession, plan: func(t testing.TB) engine.Plan {
			return engine.AcceptIdentity{Peer: bob, Identity: identityKey('x'), At: planAt}
		}, want: engine.ErrConflict},
		{name: "presented beyond written", setup: withSession, plan: func(t testing.TB) engine.Plan { return engine.MarkPresented{Seq: 2} }, want: engine.ErrConflict},
		{name: "stage past the quota", setup: func(t testing.TB, f *fixture) {
			in := make([]engine.StagedInput, StagingQuota-1)
			for i := range in {
				in[i] = engine.StagedInput{RelayRow: uint64(i), Envelope: []byte{1}}
			}
			f.apply(t, engine.Stage{Envelopes: in, At: planAt})
		}, plan: func(t testing.TB) engine.Plan {
			return engine.Stage{Envelopes: []engine.StagedInput{{Envelope: []byte{1}}, {Envelope: []byte{2}}}, At: planAt}
		}, want: engine.ErrStagingFull},

		// The plan does not hold together: refused before the transaction.
		{name: "nil plan", plan: func(t testing.TB) engine.Plan { return nil }, want: engine.ErrConflict, early: true},
		{name: "pointer plan", plan: func(t testing.TB) engine.Plan { return &engine.Prune{Before: planAt} }, want: engine.ErrConflict, early: true},
		{name: "envelope of another message", plan: sendWith(func(p *engine.Send) { p.Out.Owner = logicalID(9) }), want: engine.ErrConflict, early: true},
		{name: "message sent as an ACK", plan: sendWith(func(p *engine.Send) { p.Out.IsAck = true }), want: engine.ErrConflict, early: true},
		{name: "envelope to another peer", plan: sendWith(func(p *engine.Send) { p.Out.Envelope.Recipient = "carol/2" }), want: engine.ErrConflict, early: true},
		{name: "session of another peer", plan: sendWith(func(p *engine.Send) { p.Session.Peer = carol }), want: engine.ErrConflict, early: true},
		{name: "session without a record", plan: sendWith(func(p *engine.Send) { p.Session.Record = nil }), want: engine.ErrConflict, early: true},
		{name: "frame of another message", plan: sendWith(func(p *engine.Send) { p.Frame = frameOf(nil, logicalID(9), "hello") }), want: engine.ErrConflict, early: true},
		{name: "frame with another body", plan: sendWith(func(p *engine.Send) { p.Body = []byte("other") }), want: engine.ErrConflict, early: true},
		{name: "malformed frame", plan: sendWith(func(p *engine.Send) { p.Frame = []byte{9} }), want: engine.ErrConflict, early: true},
		{name: "send without a time", plan: sendWith(func(p *engine.Send) { p.At = time.Time{} }), want: engine.ErrConflict, early: true},
		{name: "invalid address", plan: sendWith(func(p *engine.Send) {
			p.Recipient = engine.Address{User: "Bob", Device: 1}
			p.Session.Peer = p.Recipient
		}), want: engine.ErrInvalidAddress, early: true},
		{name: "zero address", plan: func(t testing.TB) engine.Plan { return engine.Abandon{ID: idSent} }, want: engine.ErrInvalidAddress, early: true},
		{name: "retry sent as another message", plan: func(t testing.TB) engine.Plan {
			p := retryPlan(bob, idSent, 1)
			p.Out.Owner = logicalID(3)
			return p
		}, want: engine.ErrConflict, early: true},
		{name: "ACK with a delivery", plan: func(t testing.TB) engine.Plan {
			p := receivePlan(1, bob, 1, deliver(t, idRecv, "x"))
			p.Ack = ackOut(bob)
			return p
		}, want: engine.ErrConflict, early: true},
		{name: "ACK envelope owned by a message", plan: func(t testing.TB) engine.Plan {
			p := receivePlan(1, bob, 1, engine.RepeatEffect{})
			p.Ack = &engine.Outgoing{Envelope: envelopeTo(bob), IsAck: true, Owner: idSent}
			return p
		}, want: engine.ErrConflict, early: true},
		{name: "receive without an effect", plan: func(t testing.TB) engine.Plan { return receivePlan(1, bob, 1, nil) }, want: engine.ErrConflict, early: true},
		{name: "receive without an inbox row", plan: func(t testing.TB) engine.Plan { return receivePlan(0, bob, 1, engine.RepeatEffect{}) }, want: engine.ErrConflict, early: true},
		{name: "ACK without its session step", plan: commitWith(func(p *engine.Finalize) { p.Session = nil }), want: engine.ErrConflict, early: true},
		{name: "session step without its ACK", plan: commitWith(func(p *engine.Finalize) { p.Ack = nil }), want: engine.ErrConflict, early: true},
		{name: "commit with a discard reason", plan: commitWith(func(p *engine.Finalize) { p.Reason = engine.DiscardOther }), want: engine.ErrConflict, early: true},
		{name: "discard without a reason", plan: commitWith(func(p *engine.Finalize) { p.Outcome, p.Body = engine.OutcomeDiscarded, nil }), want: engine.ErrConflict, early: true},
		{name: "cumulative ack of IDs out of order", plan: func(t testing.TB) engine.Plan {
			return engine.ChainAck{Peer: bob, IDs: []wire.LogicalID{logicalID(2), logicalID(1)}, Session: sessionWrite(bob, 3, "ack"), Ack: *ackOut(bob)}
		}, want: engine.ErrConflict, early: true},
		{name: "cumulative ack of no ID", plan: func(t testing.TB) engine.Plan {
			return engine.ChainAck{Peer: bob, Session: sessionWrite(bob, 3, "ack"), Ack: *ackOut(bob)}
		}, want: engine.ErrConflict, early: true},
		{name: "cumulative ack received naming no ID", plan: func(t testing.TB) engine.Plan {
			return receivePlan(1, bob, 1, engine.ChainAcksEffect{})
		}, want: engine.ErrConflict, early: true},
		{name: "ack again without an ACK", plan: func(t testing.TB) engine.Plan {
			return engine.AckAgain{Sender: bob, ID: idRecv, Outcome: engine.OutcomeCommitted, Session: sessionWrite(bob, 3, "ack"), At: planAt}
		}, want: engine.ErrConflict, early: true},
		{name: "accept identity keeping the old initiation", plan: func(t testing.TB) engine.Plan {
			return engine.AcceptIdentity{Peer: bob, Identity: identityKey('x'), SessionVersion: 2, At: planAt}
		}, want: engine.ErrConflict, early: true},
		{name: "quarantine without a reason", plan: func(t testing.TB) engine.Plan { return engine.DropStaged{StagedRow: 1, At: planAt} }, want: engine.ErrConflict, early: true},
		{name: "stage more than the quota", plan: func(t testing.TB) engine.Plan {
			return engine.Stage{Envelopes: make([]engine.StagedInput, StagingQuota+1), At: planAt}
		}, want: engine.ErrStagingFull, early: true},
		{name: "second account", setup: func(t testing.TB, f *fixture) { f.apply(t, accountPlan(t)) },
			plan: func(t testing.TB) engine.Plan { p := accountPlan(t); p.Key = nil; return p }, want: engine.ErrConflict},
		{name: "account with a malformed list", plan: func(t testing.TB) engine.Plan {
			p := accountPlan(t)
			p.List = p.List[:len(p.List)-1]
			return p
		}, want: engine.ErrConflict, early: true},
		{name: "new prekey at the next ID", plan: func(t testing.TB) engine.Plan {
			return engine.PublishPreKeys{Add: []engine.PreKeyRecord{{Kind: engine.PreKeyOneTime, ID: 20, Record: []byte{1}}}, NextPreKeyID: 20}
		}, want: engine.ErrConflict, early: true},
		{name: "prekey of no kind", plan: func(t testing.TB) engine.Plan {
			return engine.PublishPreKeys{Add: []engine.PreKeyRecord{{ID: 20, Record: []byte{1}}}}
		}, want: engine.ErrConflict, early: true},
	}
}

func TestApplyRefused(t *testing.T) {
	ctx := context.Background()
	for _, c := range missCases() {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t, c.raw)
			if c.setup != nil {
				c.setup(t, f)
			}
			p := c.plan(t)
			before := f.state(t)
			var points []string
			f.hook = func(p string) error { points = append(points, p); return nil }
			_, err := f.db.Apply(ctx, p)
			f.hook = nil
			if !errors.Is(err, c.want) {
				t.Fatalf("Apply = %v, want %v", err, c.want)
			}
			if after := f.state(t); after != before {
				t.Errorf("a refused plan changed the database")
			}
			if c.early && len(points) > 0 {
				t.Errorf("an invalid plan reached failpoints %v, want it refused before the transaction", points)
			}
			if !c.early && !slices.ContainsFunc(points, func(p string) bool { return strings.HasSuffix(p, "/before-begin") }) {
				t.Errorf("failpoints %v: the plan was refused before the transaction, want the durable state to refuse it", points)
			}
			// The same plan in a batch: the batch names it.
			_, err = f.db.ApplyBatch(ctx, []engine.Plan{engine.MarkPresented{}, p})
			var be *engine.BatchError
			if !errors.As(err, &be) || be.Index != 1 || !errors.Is(err, c.want) {
				t.Errorf("ApplyBatch = %v, want a BatchError at index 1 matching %v", err, c.want)
			}
			if after := f.state(t); after != before {
				t.Errorf("a refused batch changed the database")
			}
			if s := err.Error(); !strings.HasPrefix(s, "store: ") || strings.Contains(s, "sqlite3") {
				t.Errorf("error %q does not come from store", s)
			}
		})
	}
}

func TestApplyBatch(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, false)
	withSession(t, f)
	row := f.stage(t)
	plans := []engine.Plan{
		sendPlan(t, bob, logicalID(3), "two", 1),
		sendPlan(t, bob, logicalID(4), "three", 2),
		receivePlan(row, bob, 3, engine.AckEffect{ID: idSent}),
		engine.Stage{Envelopes: []engine.StagedInput{{RelayRow: 1, Envelope: []byte("e")}}, At: planAt},
	}
	var points []string
	f.hook = func(p string) error { points = append(points, p); return nil }
	rs, err := f.db.ApplyBatch(ctx, plans)
	f.hook = nil
	if err != nil {
		t.Fatalf("ApplyBatch = %v", err)
	}
	want := []engine.Receipt{{Seq: 2, Marker: 2}, {Seq: 3, Marker: 3}, {Cleared: true, Marker: 4}, {Rows: []int64{2}}}
	for i := range want {
		if rs[i].Seq != want[i].Seq || rs[i].Marker != want[i].Marker || rs[i].Cleared != want[i].Cleared || !slices.Equal(rs[i].Rows, want[i].Rows) {
			t.Errorf("receipt %d = %+v, want %+v", i, rs[i], want[i])
		}
	}
	wantPeer(t, f, bob, identityKey('b'), 4, "receive")
	var begins, persists []string
	for _, p := range points {
		if strings.HasSuffix(p, "/before-begin") {
			begins = append(begins, p)
		}
		if strings.HasSuffix(p, "-persist") {
			persists = append(persists, p)
		}
	}
	if !slices.Equal(begins, []string{"pairwise-send/before-begin"}) ||
		!slices.Equal(persists, []string{"pairwise-send/before-persist", "pairwise-send/after-persist"}) {
		t.Errorf("batch transaction points = %v %v, want them once with the first plan's kind", begins, persists)
	}
	if !slices.Contains(points, "ack-receive/stmt-outbound-delete-after") || !slices.Contains(points, "stage/stmt-inbox-insert-before") {
		t.Errorf("batch points %v miss the statements of later plans", points)
	}

	// All or nothing: the third plan fails, the first two are not applied.
	before := f.state(t)
	plans = []engine.Plan{
		sendPlan(t, bob, logicalID(5), "four", 4),
		engine.Abandon{Recipient: bob, ID: logicalID(3), At: planAt},
		engine.Abandon{Recipient: bob, ID: logicalID(3), At: planAt},
	}
	_, err = f.db.ApplyBatch(ctx, plans)
	var be *engine.BatchError
	if !errors.As(err, &be) || be.Index != 2 || !errors.Is(err, engine.ErrNotPending) {
		t.Fatalf("ApplyBatch = %v, want BatchError at 2 matching ErrNotPending", err)
	}
	if f.state(t) != before {
		t.Error("a failed batch left changes behind")
	}
	if rs, err := f.db.ApplyBatch(ctx, nil); rs != nil || err != nil {
		t.Errorf("ApplyBatch(nil) = %v, %v; want nothing", rs, err)
	}
}

// TestStageRowsNeverReused: a row number is sealed into its record, so a
// number is never handed out twice, even after its row was consumed or
// quarantined.
func TestStageRowsNeverReused(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, false)
	var got []int64
	for i := 0; i < 3; i++ {
		row := f.stage(t)
		got = append(got, row)
		if i == 0 {
			f.apply(t, engine.DropStaged{StagedRow: row, Reason: "x", At: planAt})
		} else {
			f.apply(t, engine.CollisionRetire{StagedRow: row, Peer: bob, Retired: engine.RetiredInitiation{ID: initiation(byte(i))}})
		}
	}
	mustClose(t, f.db)
	f.db = mustOpen(t, f.dir)
	r, err := f.db.Apply(ctx, engine.Stage{Envelopes: []engine.StagedInput{{Envelope: []byte("x")}}, At: planAt})
	if err != nil {
		t.Fatal(err)
	}
	got = append(got, r.Rows...)
	if !slices.Equal(got, []int64{1, 2, 3, 4}) {
		t.Errorf("rows = %v, want 1 2 3 4", got)
	}
	staged, err := f.db.Staged(ctx, 0, 0)
	if err != nil || len(staged) != 1 || string(staged[0].Envelope) != "x" {
		t.Errorf("Staged = %+v, %v", staged, err)
	}
}

// TestDiskFullDuringPlan: a plan that runs out of space fails with
// ErrStorageFull and leaves nothing behind; the store works on afterwards.
func TestDiskFullDuringPlan(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, false)
	withSession(t, f)
	var pages int
	if err := f.db.sql.QueryRowContext(ctx, "PRAGMA page_count").Scan(&pages); err != nil {
		t.Fatal(err)
	}
	// max_page_count belongs to the connection; the store has only one.
	if _, err := f.db.sql.ExecContext(ctx, fmt.Sprintf("PRAGMA max_page_count = %d", pages+2)); err != nil {
		t.Fatal(err)
	}
	before := f.state(t)
	big := strings.Repeat("x", 60000)
	p := sendPlan(t, bob, logicalID(3), big, 1)
	if _, err := f.db.Apply(ctx, p); !errors.Is(err, engine.ErrStorageFull) {
		t.Fatalf("Apply with a full disk = %v, want ErrStorageFull", err)
	}
	if f.state(t) != before {
		t.Error("a plan that ran out of space left changes behind")
	}
	if _, err := f.db.ApplyBatch(ctx, []engine.Plan{engine.MarkPresented{}, p}); !errors.Is(err, engine.ErrStorageFull) {
		t.Fatalf("ApplyBatch with a full disk = %v, want ErrStorageFull", err)
	}
	if f.state(t) != before {
		t.Error("a batch that ran out of space left changes behind")
	}
	if _, err := f.db.sql.ExecContext(ctx, "PRAGMA max_page_count = 1073741823"); err != nil {
		t.Fatal(err)
	}
	f.apply(t, p)
	if m, err := f.db.Outbound(ctx, bob, logicalID(3)); err != nil || string(m.Body) != big {
		t.Errorf("Outbound after space was freed = %v", err)
	}
}

// TestMarker: every visible transition raises the written marker by one;
// MarkPresented only ever raises the presented one.
func TestMarker(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, false)
	withInbound(t, f) // send + receive: 2
	for _, seq := range []uint64{1, 2, 1, 0} {
		f.apply(t, engine.MarkPresented{Seq: seq})
	}
	prof, err := f.db.Profile(ctx)
	if err != nil || prof.MarkerWritten != 2 || prof.MarkerPresented != 2 {
		t.Errorf("markers = %d, %d, %v; want 2, 2", prof.MarkerWritten, prof.MarkerPresented, err)
	}
	r := f.apply(t, engine.Abandon{Recipient: bob, ID: idSent})
	if r.Marker != 3 {
		t.Errorf("Abandon marker = %d, want 3", r.Marker)
	}
}

// TestOutboundBodyFromFrame: the body read back is the frame's, byte for
// byte, including an empty one.
func TestOutboundBodyFromFrame(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, false)
	p := sendPlan(t, bob, idSent, "", 0)
	f.apply(t, p)
	m, err := f.db.Outbound(ctx, bob, idSent)
	if err != nil || len(m.Body) != 0 {
		t.Fatalf("Outbound = %+v, %v; want an empty body", m, err)
	}
	fr, _ := wire.DecodeFrame(m.Frame)
	if fr.ID != idSent {
		t.Errorf("frame ID = %x, want %x", fr.ID, idSent)
	}
}

// Within a batch, a later plan's session write is checked against the
// version the earlier plans left, even though only the last one is written.
func TestApplyBatchSessionVersions(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, false)
	withSession(t, f)
	before := f.state(t)
	_, err := f.db.ApplyBatch(ctx, []engine.Plan{
		sendPlan(t, bob, logicalID(3), "two", 1),
		sendPlan(t, bob, logicalID(4), "three", 1), // prepared from the same version
	})
	var be *engine.BatchError
	if !errors.As(err, &be) || be.Index != 1 || !errors.Is(err, engine.ErrConflict) {
		t.Fatalf("ApplyBatch = %v, want a conflict of plan 1", err)
	}
	if f.state(t) != before {
		t.Fatal("a refused batch changed the database")
	}
}

// secondListPlan is a well-formed generation 2 after accountPlan's list.
func secondListPlan(t testing.TB) []byte {
	t.Helper()
	l := wire.DeviceList{User: "alice", Generation: 2, Parent: [32]byte{1}, Entries: []wire.DeviceEntry{
		{Number: 1, Linked: 100, State: wire.DeviceActive}, {Number: 2, Linked: 200, State: wire.DeviceActive}}}
	enc, err := wire.EncodeDeviceList(l)
	if err != nil {
		t.Fatal(err)
	}
	return enc
}

// accountPlan stores an account whose key record is a plaintext marker and
// whose list is well formed (the store does not check signatures).
func accountPlan(t testing.TB) engine.CreateAccount {
	t.Helper()
	l := wire.DeviceList{User: "alice", Generation: 1, Entries: []wire.DeviceEntry{{Number: 1, Linked: 100, State: wire.DeviceActive}}}
	enc, err := wire.EncodeDeviceList(l)
	if err != nil {
		t.Fatal(err)
	}
	return engine.CreateAccount{Key: []byte("PLAINTEXT-MARKER-account-key-32b"), List: enc}
}
