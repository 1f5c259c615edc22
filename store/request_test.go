package store

import (
	"context"
	"database/sql"
	"errors"
	"testing"
	"time"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/wire"
)

// Message requests in the store: the stage (a receive), accept, reject,
// block, sweep and the relay's block mark, each a plan case of the
// failpoint matrix (planCases).

var (
	idAsk   = logicalID(0x41) // carol's first message, a request
	idAgain = logicalID(0x42) // carol's second
)

// requestReceive is carol's message id as a request: with a handshake that
// pins her identity for the first one, joining the request for the next.
func requestReceive(tb testing.TB, row int64, version uint64, id wire.LogicalID, body string, join bool) engine.Receive {
	p := receivePlan(row, carol, version, deliver(tb, id, body))
	p.Request = &engine.RequestStage{Join: join, Preview: "preview of " + body, Bytes: len(body), At: planAt}
	if !join {
		k := identityKey('c')
		one := uint32(3)
		p.Handshake = &engine.Handshake{Pin: &k, ConsumeOneTime: &one}
		p.Request.Preview = "hi \\x1b[2J"
	}
	return p
}

// withRequest stages carol's request: one message, session version 1.
func withRequest(tb testing.TB, f *fixture) {
	f.apply(tb, requestReceive(tb, f.stage(tb), 0, idAsk, "hi PLAINTEXT-MARKER-request", false))
}

func wantRequest(t *testing.T, f *fixture, count int) engine.Request {
	t.Helper()
	r, err := f.db.Request(context.Background(), carol)
	if count == 0 {
		if !errors.Is(err, engine.ErrNotPending) {
			t.Fatalf("Request(carol) = %+v, %v; want none", r, err)
		}
		return r
	}
	if err != nil || r.Count != count || r.Preview != "hi \\x1b[2J" || !r.FirstSeen.Equal(planAt) {
		t.Fatalf("Request(carol) = %+v, %v; want %d messages, the first's preview, first seen at %v", r, err, count, planAt)
	}
	return r
}

// pendingFrom counts carol's pending messages: listed (deliveries) and all.
func pendingFrom(t *testing.T, f *fixture) (listed, all int) {
	t.Helper()
	ctx := context.Background()
	ms, err := f.db.PendingInbound(ctx, engine.PageQuery{Peer: &carol, Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	n, err := f.db.CountInbound(ctx, &carol)
	if err != nil {
		t.Fatal(err)
	}
	return len(ms), n
}

// conversationWith is peer's pending count in the conversations (-1 when
// it is not one) and the count of every pending delivery.
func conversationWith(t *testing.T, f *fixture, peer engine.Address) (in, total int) {
	t.Helper()
	ctx := context.Background()
	convs, err := f.db.Conversations(ctx)
	if err != nil {
		t.Fatal(err)
	}
	in = -1
	for _, c := range convs {
		if c.Peer == peer {
			in = c.PendingIn
		}
	}
	if total, err = f.db.CountInbound(ctx, nil); err != nil {
		t.Fatal(err)
	}
	return in, total
}

func hasSession(t *testing.T, f *fixture, peer engine.Address) bool {
	t.Helper()
	var one int
	err := f.db.sql.QueryRow("SELECT 1 FROM session WHERE peer = ?", peer.String()).Scan(&one)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		t.Fatal(err)
	}
	return err == nil
}

func requestPlanCases() []planCase {
	ctx := context.Background()
	return []planCase{
		{
			name: "request-stage opens",
			plan: func(t testing.TB, f *fixture) engine.Plan {
				return requestReceive(t, f.stage(t), 0, idAsk, "hi PLAINTEXT-MARKER-request", false)
			},
			check: func(t *testing.T, f *fixture, r engine.Receipt) {
				wantRequest(t, f, 1)
				if listed, all := pendingFrom(t, f); listed != 0 || all != 1 {
					t.Errorf("carol's pending: %d listed of %d, want 0 of 1 (a request is no delivery)", listed, all)
				}
				if in, total := conversationWith(t, f, carol); in >= 0 || total != 0 {
					t.Errorf("a request is a conversation (pending in %d) and counts %d in the inbox; want neither", in, total)
				}
				if _, err := f.db.OneTimePreKey(ctx, 3); !errors.Is(err, engine.ErrUnknownPreKey) {
					t.Errorf("one-time prekey 3 after the stage: %v, want consumed", err)
				}
				if ok, err := f.db.Accepted(ctx, carol); ok || err != nil {
					t.Errorf("Accepted(carol) = %v, %v; want false", ok, err)
				}
			},
		},
		{
			name:  "request-stage joins",
			setup: withRequest,
			plan: func(t testing.TB, f *fixture) engine.Plan {
				return requestReceive(t, f.stage(t), 1, idAgain, "again", true)
			},
			check: func(t *testing.T, f *fixture, r engine.Receipt) {
				if got := wantRequest(t, f, 2); got.Bytes != int64(len("hi PLAINTEXT-MARKER-request")+len("again")) {
					t.Errorf("request of %d bytes", got.Bytes)
				}
				if n, b, err := f.db.RequestTotals(ctx); n != 1 || b == 0 || err != nil {
					t.Errorf("RequestTotals = %d, %d, %v", n, b, err)
				}
			},
		},
		{
			name:  "request-accept",
			setup: withRequest,
			plan: func(t testing.TB, f *fixture) engine.Plan {
				return engine.AcceptRequest{Peer: carol, Count: 1, At: planAt}
			},
			check: func(t *testing.T, f *fixture, r engine.Receipt) {
				wantRequest(t, f, 0)
				if listed, all := pendingFrom(t, f); listed != 1 || all != 1 {
					t.Errorf("carol's pending: %d listed of %d, want 1 of 1", listed, all)
				}
				if in, total := conversationWith(t, f, carol); in != 1 || total != 1 {
					t.Errorf("after the accept: conversation pending in %d, inbox %d; want 1 and 1", in, total)
				}
				if ok, err := f.db.Accepted(ctx, carol); !ok || err != nil {
					t.Errorf("Accepted(carol) = %v, %v; want true", ok, err)
				}
				if !hasSession(t, f, carol) {
					t.Error("the accepted request's session is gone")
				}
			},
		},
		{
			name: "request-accept before a request",
			plan: func(t testing.TB, f *fixture) engine.Plan { return engine.AcceptRequest{Peer: carol, At: planAt} },
			check: func(t *testing.T, f *fixture, r engine.Receipt) {
				if ok, err := f.db.Accepted(ctx, carol); !ok || err != nil {
					t.Errorf("Accepted(carol) = %v, %v; want true", ok, err)
				}
			},
		},
		{
			name:  "request-reject",
			setup: withRequest,
			plan:  func(t testing.TB, f *fixture) engine.Plan { return engine.RejectRequest{Peer: carol, At: planAt} },
			check: func(t *testing.T, f *fixture, r engine.Receipt) {
				wantRejected(t, f, false)
			},
		},
		{
			name:  "request-block",
			setup: withRequest,
			plan: func(t testing.TB, f *fixture) engine.Plan {
				return engine.RejectRequest{Peer: carol, Block: true, At: planAt}
			},
			check: func(t *testing.T, f *fixture, r engine.Receipt) {
				wantRejected(t, f, true)
				if untold, err := f.db.BlocksUntold(ctx); len(untold) != 1 || untold[0] != (engine.BlockChange{Peer: carol, Blocked: true}) || err != nil {
					t.Errorf("BlocksUntold = %v, %v; want carol's block", untold, err)
				}
			},
		},
		{
			name: "block-told",
			setup: func(t testing.TB, f *fixture) {
				withRequest(t, f)
				f.apply(t, engine.RejectRequest{Peer: carol, Block: true, At: planAt})
			},
			plan: func(t testing.TB, f *fixture) engine.Plan { return engine.MarkBlockTold{Peer: carol, Blocked: true} },
			check: func(t *testing.T, f *fixture, r engine.Receipt) {
				if untold, err := f.db.BlocksUntold(ctx); len(untold) != 0 || err != nil {
					t.Errorf("BlocksUntold = %v, %v; want none", untold, err)
				}
				if ok, _ := f.db.Blocked(ctx, carol); !ok {
					t.Error("carol is no longer blocked")
				}
			},
		},
		{
			name:  "unblock before the relay heard",
			setup: withBlock,
			plan:  func(t testing.TB, f *fixture) engine.Plan { return engine.Unblock{Peer: carol, At: planAt} },
			check: func(t *testing.T, f *fixture, r engine.Receipt) {
				wantBlock(t, f, false)
			},
		},
		{
			name: "unblock after the relay heard",
			setup: func(t testing.TB, f *fixture) {
				withBlock(t, f)
				f.apply(t, engine.MarkBlockTold{Peer: carol, Blocked: true})
			},
			plan: func(t testing.TB, f *fixture) engine.Plan { return engine.Unblock{Peer: carol, At: planAt} },
			check: func(t *testing.T, f *fixture, r engine.Receipt) {
				wantBlock(t, f, false, engine.BlockChange{Peer: carol})
			},
		},
		{
			name: "block-told of an unblock",
			setup: func(t testing.TB, f *fixture) {
				withBlock(t, f)
				f.apply(t, engine.MarkBlockTold{Peer: carol, Blocked: true})
				f.apply(t, engine.Unblock{Peer: carol, At: planAt})
			},
			plan: func(t testing.TB, f *fixture) engine.Plan { return engine.MarkBlockTold{Peer: carol} },
			check: func(t *testing.T, f *fixture, r engine.Receipt) {
				wantBlock(t, f, false)
			},
		},
		{
			name:  "request-sweep",
			setup: withRequest,
			plan: func(t testing.TB, f *fixture) engine.Plan {
				return engine.SweepRequests{Before: planAt.Add(time.Nanosecond)}
			},
			check: func(t *testing.T, f *fixture, r engine.Receipt) {
				if r.Pruned != 1 {
					t.Errorf("Receipt.Pruned = %d, want 1", r.Pruned)
				}
				wantRejected(t, f, false)
			},
		},
	}
}

// withBlock stages carol's request and blocks her.
func withBlock(tb testing.TB, f *fixture) {
	withRequest(tb, f)
	f.apply(tb, engine.RejectRequest{Peer: carol, Block: true, At: planAt})
}

// wantBlock checks whether carol is blocked and what the relay must hear.
func wantBlock(t *testing.T, f *fixture, blocked bool, untold ...engine.BlockChange) {
	t.Helper()
	ctx := context.Background()
	if ok, err := f.db.Blocked(ctx, carol); ok != blocked || err != nil {
		t.Errorf("Blocked(carol) = %v, %v; want %v", ok, err, blocked)
	}
	got, err := f.db.BlocksUntold(ctx)
	if err != nil || len(got) != len(untold) || (len(got) == 1 && got[0] != untold[0]) {
		t.Errorf("BlocksUntold = %v, %v; want %v", got, err, untold)
	}
	if all, err := f.db.Blocks(ctx); err != nil || len(all) != map[bool]int{true: 1}[blocked] {
		t.Errorf("Blocks = %v, %v", all, err)
	}
}

// wantRejected checks that carol's request is gone with its message and
// session, the one-time prekey still consumed and bob untouched.
func wantRejected(t *testing.T, f *fixture, blocked bool) {
	t.Helper()
	ctx := context.Background()
	wantRequest(t, f, 0)
	if _, all := pendingFrom(t, f); all != 0 {
		t.Errorf("carol's request left %d pending messages", all)
	}
	if hasSession(t, f, carol) {
		t.Error("carol's request left its session")
	}
	if _, err := f.db.OneTimePreKey(ctx, 3); !errors.Is(err, engine.ErrUnknownPreKey) {
		t.Errorf("one-time prekey 3: %v, want still consumed", err)
	}
	if ok, err := f.db.Blocked(ctx, carol); ok != blocked || err != nil {
		t.Errorf("Blocked(carol) = %v, %v; want %v", ok, err, blocked)
	}
}

// TestRequestRefusals: an accept of a request that grew since it was read
// is refused and changes nothing; so is a reject without a request.
func TestRequestRefusals(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, false)
	withRequest(t, f)
	f.apply(t, requestReceive(t, f.stage(t), 1, idAgain, "again", true))
	before := f.state(t)
	if _, err := f.db.Apply(ctx, engine.AcceptRequest{Peer: carol, Count: 1, At: planAt}); !errors.Is(err, engine.ErrConflict) {
		t.Errorf("accept of a stale count: %v, want ErrConflict", err)
	}
	if _, err := f.db.Apply(ctx, engine.AcceptRequest{Peer: carol, At: planAt}); !errors.Is(err, engine.ErrConflict) {
		t.Errorf("accept before a request, with one open: %v, want ErrConflict", err)
	}
	if _, err := f.db.Apply(ctx, engine.RejectRequest{Peer: bob, At: planAt}); !errors.Is(err, engine.ErrNotPending) {
		t.Errorf("reject without a request: %v, want ErrNotPending", err)
	}
	if _, err := f.db.Apply(ctx, engine.Unblock{Peer: bob, At: planAt}); !errors.Is(err, engine.ErrNotPending) {
		t.Errorf("unblock of a peer not blocked: %v, want ErrNotPending", err)
	}
	if _, err := f.db.Apply(ctx, engine.MarkBlockTold{Peer: bob, Blocked: true}); !errors.Is(err, engine.ErrNotPending) {
		t.Errorf("block told of a peer not blocked: %v, want ErrNotPending", err)
	}
	if f.state(t) != before {
		t.Error("a refused plan changed the database")
	}
}

// insertFixtureV11 is fixture 10 with a request from carol/3, a block of
// dave/4 the relay has not heard of, and bob/7 accepted.
func insertFixtureV11(t *testing.T, db *sql.DB, s *sealer) {
	t.Helper()
	insertFixtureV10(t, db, s)
	for _, q := range []struct {
		q    string
		args []any
	}{
		{"INSERT INTO request VALUES ('carol/3', 10, 20, 2, 7, ?)", []any{s.seal(kindRequestPreview, []byte("carol/3"), []byte("hello"))}},
		{"INSERT INTO blocked VALUES ('dave/4', 30, 1, 0)", nil},
		// What the migration writes for a conversation older than requests.
		{"INSERT INTO accepted_peer VALUES (?, 0)", []any{fixturePeer}},
	} {
		if _, err := db.Exec(q.q, q.args...); err != nil {
			t.Fatal(err)
		}
	}
}

func checkFixtureV11(t *testing.T, db *DB) {
	t.Helper()
	checkFixtureV10(t, db)
	ctx := context.Background()
	r, err := db.Request(ctx, engine.MustParseAddress("carol/3"))
	if err != nil || r.Count != 2 || r.Bytes != 7 || r.Preview != "hello" || !r.FirstSeen.Equal(nsTime(10)) {
		t.Fatalf("request %+v, %v", r, err)
	}
	if untold, err := db.BlocksUntold(ctx); err != nil || len(untold) != 1 || untold[0].Peer.String() != "dave/4" || !untold[0].Blocked {
		t.Fatalf("blocks untold %v, %v", untold, err)
	}
	// A conversation older than requests stays accepted.
	if ok, err := db.Accepted(ctx, engine.MustParseAddress(fixturePeer)); !ok || err != nil {
		t.Fatalf("Accepted(%s) = %v, %v; want true", fixturePeer, ok, err)
	}
}

// TestMigrateAcceptsConversations: a profile at version 10 with a
// conversation migrates to requests with that peer accepted, and a peer it
// never heard from not.
func TestMigrateAcceptsConversations(t *testing.T) {
	dir := t.TempDir()
	s, raw := profileAt(t, dir, 10)
	insertFixtureV10(t, raw, s)
	raw.Close()
	db := mustOpen(t, dir)
	ctx := context.Background()
	if ok, err := db.Accepted(ctx, engine.MustParseAddress(fixturePeer)); !ok || err != nil {
		t.Errorf("Accepted(%s) after the migration = %v, %v; want true", fixturePeer, ok, err)
	}
	if ok, err := db.Accepted(ctx, engine.MustParseAddress("zed/9")); ok || err != nil {
		t.Errorf("Accepted(zed/9) = %v, %v; want false", ok, err)
	}
}
