package store

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/wire"
)

// withTraffic sends three messages to bob and two to carol, receives two
// from bob and one from carol, and commits one of bob's.
func withTraffic(t testing.TB, f *fixture) {
	versions := map[engine.Address]uint64{}
	send := func(peer engine.Address, n byte) {
		p := sendPlan(t, peer, logicalID(n), fmt.Sprintf("to %s %d", peer, n), versions[peer])
		p.At = planAt.Add(time.Duration(n) * time.Second)
		f.apply(t, p)
		versions[peer]++
	}
	recv := func(peer engine.Address, n byte) {
		row := f.stage(t)
		e := deliver(t, logicalID(n), fmt.Sprintf("from %s %d", peer, n))
		e.At = planAt.Add(time.Duration(n) * time.Second)
		f.apply(t, receivePlan(row, peer, versions[peer], e))
		versions[peer]++
	}
	send(bob, 1)
	send(carol, 2)
	send(bob, 3)
	recv(bob, 4)
	send(carol, 5)
	recv(carol, 6)
	send(bob, 7)
	recv(bob, 8)
	body := "from bob/1 4"
	f.apply(t, engine.Finalize{Sender: bob, ID: logicalID(4), Digest: deliver(t, logicalID(4), body).Digest,
		Outcome: engine.OutcomeCommitted, Body: []byte(body), At: planAt.Add(9 * time.Second)})
}

func TestPendingPages(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, false)
	withTraffic(t, f)
	outIDs := func(ms []engine.OutboundMessage) (s []string) {
		for _, m := range ms {
			s = append(s, fmt.Sprintf("%d:%s:%d", m.Seq, m.Recipient, m.ID[0]))
		}
		return s
	}
	tests := []struct {
		q    engine.PageQuery
		want string
	}{
		{engine.PageQuery{}, "1:bob/1:1 2:carol/2:2 3:bob/1:3 4:carol/2:5 5:bob/1:7"},
		{engine.PageQuery{Limit: -1}, "1:bob/1:1 2:carol/2:2 3:bob/1:3 4:carol/2:5 5:bob/1:7"},
		{engine.PageQuery{Limit: 2}, "1:bob/1:1 2:carol/2:2"},
		{engine.PageQuery{After: 2, Limit: 2}, "3:bob/1:3 4:carol/2:5"},
		{engine.PageQuery{After: 5}, ""},
		{engine.PageQuery{Peer: &bob}, "1:bob/1:1 3:bob/1:3 5:bob/1:7"},
		{engine.PageQuery{Peer: &bob, After: 1, Limit: 1}, "3:bob/1:3"},
		{engine.PageQuery{Peer: &self}, ""},
	}
	for _, tt := range tests {
		got, err := f.db.PendingOutbound(ctx, tt.q)
		if err != nil || strings.Join(outIDs(got), " ") != tt.want {
			t.Errorf("PendingOutbound(%+v) = %v, %v; want %s", tt.q, outIDs(got), err, tt.want)
		}
	}
	in, err := f.db.PendingInbound(ctx, engine.PageQuery{})
	if err != nil || len(in) != 2 || in[0].Sender != carol || string(in[0].Body) != "from carol/2 6" || in[1].ID != logicalID(8) {
		t.Errorf("PendingInbound = %+v, %v; want carol's 6 and bob's 8", in, err)
	}
	in, err = f.db.PendingInbound(ctx, engine.PageQuery{Peer: &bob, After: in[0].Seq - 1})
	if err != nil || len(in) != 1 || in[0].ID != logicalID(8) {
		t.Errorf("PendingInbound(bob) = %+v, %v; want bob's 8", in, err)
	}
	for _, c := range []struct {
		peer    *engine.Address
		in, out int
	}{{nil, 2, 5}, {&bob, 1, 3}, {&carol, 1, 2}, {&self, 0, 0}} {
		in, err1 := f.db.CountInbound(ctx, c.peer)
		out, err2 := f.db.CountOutbound(ctx, c.peer)
		if in != c.in || out != c.out || err1 != nil || err2 != nil {
			t.Errorf("counts for %v = %d in, %d out (%v %v); want %d, %d", c.peer, in, out, err1, err2, c.in, c.out)
		}
	}
}

func TestHistoryPages(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, false)
	withTraffic(t, f)
	h, err := f.db.History(ctx, bob, 0, 0)
	var got []string
	for _, e := range h {
		got = append(got, fmt.Sprintf("%s:%s", e.Direction, e.Body))
	}
	if want := "in:from bob/1 4 out:to bob/1 7 out:to bob/1 3 out:to bob/1 1"; err != nil || strings.Join(got, " ") != want {
		t.Fatalf("History(bob) = %v, %v; want %s", got, err, want)
	}
	page, err := f.db.History(ctx, bob, h[1].Seq, 1)
	if err != nil || len(page) != 1 || page[0].Seq != h[2].Seq {
		t.Errorf("History(bob, before %d, 1) = %+v, %v; want entry %d", h[1].Seq, page, err, h[2].Seq)
	}
	if h, err := f.db.History(ctx, self, 0, 10); err != nil || len(h) != 0 {
		t.Errorf("History(self) = %+v, %v; want nothing", h, err)
	}
}

func TestConversations(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, false)
	if cs, err := f.db.Conversations(ctx); err != nil || len(cs) != 0 {
		t.Fatalf("Conversations of a new profile = %+v, %v", cs, err)
	}
	withTraffic(t, f)
	// A pinned peer without messages is no conversation.
	f.apply(t, engine.AcceptIdentity{Peer: engine.MustParseAddress("dave/1"), Identity: identityKey('d'), At: planAt})
	cs, err := f.db.Conversations(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := []engine.Conversation{
		{Peer: bob, PendingIn: 1, PendingOut: 3, LastAt: planAt.Add(9 * time.Second)},
		{Peer: carol, PendingIn: 1, PendingOut: 2, LastAt: planAt.Add(6 * time.Second)},
	}
	if fmt.Sprint(cs) != fmt.Sprint(want) {
		t.Errorf("Conversations = %+v, want %+v", cs, want)
	}
}

func TestProfileReads(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, true)
	if _, err := f.db.Profile(ctx); !errors.Is(err, engine.ErrNoProfile) {
		t.Errorf("Profile before bootstrap = %v, want ErrNoProfile", err)
	}
	f.apply(t, bootstrapPlan())
	recs, err := f.db.OneTimePreKeys(ctx, 3, 1)
	if err != nil || len(recs) != 1 || recs[0].ID != 4 || string(recs[0].Record) != "otk 4" || recs[0].Kind != engine.PreKeyOneTime {
		t.Errorf("OneTimePreKeys(3, 1) = %+v, %v; want otk 4", recs, err)
	}
	if recs, err := f.db.OneTimePreKeys(ctx, 0, 0); err != nil || len(recs) != 3 {
		t.Errorf("OneTimePreKeys(0, 0) = %d, %v; want all 3", len(recs), err)
	}
	if _, err := f.db.OneTimePreKey(ctx, 9); !errors.Is(err, engine.ErrUnknownPreKey) {
		t.Errorf("OneTimePreKey(9) = %v, want ErrUnknownPreKey", err)
	}
	if ps, err := f.db.Peer(ctx, bob); err != nil || ps.Pinned != nil || ps.Session != nil || ps.SessionVersion != 0 {
		t.Errorf("Peer of a stranger = %+v, %v; want zero", ps, err)
	}
	if ok, err := f.db.Retired(ctx, bob, initiation(1)); ok || err != nil {
		t.Errorf("Retired of nothing = %v, %v", ok, err)
	}
	for name, read := range map[string]func() error{
		"Outbound":  func() error { _, err := f.db.Outbound(ctx, bob, idSent); return err },
		"Inbound":   func() error { _, err := f.db.Inbound(ctx, bob, idSent); return err },
		"Finalized": func() error { _, err := f.db.Finalized(ctx, bob, idSent); return err },
	} {
		if err := read(); !errors.Is(err, engine.ErrNotPending) {
			t.Errorf("%s of nothing = %v, want ErrNotPending", name, err)
		}
	}
}

// TestReadsAfterClose: every method fails with ErrClosed once the store is
// closed.
func TestReadsAfterClose(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, false)
	mustClose(t, f.db)
	db := f.db
	calls := map[string]func() error{
		"Apply":          func() error { _, err := db.Apply(ctx, engine.MarkPresented{}); return err },
		"ApplyBatch":     func() error { _, err := db.ApplyBatch(ctx, []engine.Plan{engine.MarkPresented{}}); return err },
		"Profile":        func() error { _, err := db.Profile(ctx); return err },
		"Peer":           func() error { _, err := db.Peer(ctx, bob); return err },
		"Retired":        func() error { _, err := db.Retired(ctx, bob, engine.InitiationID{}); return err },
		"OneTimePreKey":  func() error { _, err := db.OneTimePreKey(ctx, 3); return err },
		"OneTimePreKeys": func() error { _, err := db.OneTimePreKeys(ctx, 0, 1); return err },
		"Outbound":       func() error { _, err := db.Outbound(ctx, bob, wire.LogicalID{}); return err },
		"Inbound":        func() error { _, err := db.Inbound(ctx, bob, wire.LogicalID{}); return err },
		"Finalized":      func() error { _, err := db.Finalized(ctx, bob, wire.LogicalID{}); return err },
		"PendingOutbound": func() error {
			_, err := db.PendingOutbound(ctx, engine.PageQuery{})
			return err
		},
		"PendingInbound": func() error { _, err := db.PendingInbound(ctx, engine.PageQuery{}); return err },
		"CountOutbound":  func() error { _, err := db.CountOutbound(ctx, nil); return err },
		"CountInbound":   func() error { _, err := db.CountInbound(ctx, nil); return err },
		"History":        func() error { _, err := db.History(ctx, bob, 0, 1); return err },
		"Conversations":  func() error { _, err := db.Conversations(ctx); return err },
		"ConversationsByPerson": func() error {
			_, err := db.ConversationsByPerson(ctx)
			return err
		},
		"Staged": func() error { _, err := db.Staged(ctx, 0, 1); return err },
	}
	for name, call := range calls {
		if err := call(); !errors.Is(err, engine.ErrClosed) {
			t.Errorf("%s after Close = %v, want ErrClosed", name, err)
		}
	}
}

// TestQueryPlans holds every page query to an index: no full scan of a
// table, no sort of a whole table. Conversations may scan the peer table
// (one row per contact) and sort the conversations. Counts without a peer
// count a whole table by nature and are left out.
func TestQueryPlans(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, false)
	withTraffic(t, f)
	// No ANALYZE: the store never runs it, so the planner works from the
	// schema alone, as it does in a real profile.
	queries := []struct {
		q     string
		args  []any
		allow []string
	}{
		{sqlPendingOutbound, []any{0, 10}, nil},
		{sqlPendingOutboundPeer, []any{"bob/1", 0, 10}, nil},
		// The pending messages are read in send order, each checked by
		// key for an attempt: the scan is of what is pending, which the
		// caps bound.
		{sqlUnsentOutbound, []any{0, 10}, []string{"SCAN o"}},
		{sqlUnsentOutboundPeer, []any{"bob/1", 0, 10}, nil},
		{sqlPendingInbound, []any{0, 10}, nil},
		{sqlPendingInboundPeer, []any{"bob/1", 0, 10}, nil},
		// A person's pages: one range of the address index, the person's
		// pending messages sorted (the caps bound them).
		{sqlPendingInboundPerson, []any{"bob/", "bob0", 0, 10}, []string{"USE TEMP B-TREE FOR ORDER BY"}},
		{sqlPendingInboundPersonAll, []any{"bob/", "bob0", 0, 10}, []string{"USE TEMP B-TREE FOR ORDER BY"}},
		{sqlPendingOutboundPerson, []any{"bob/", "bob0", 0, 10}, []string{"USE TEMP B-TREE FOR ORDER BY"}},
		{sqlUnsentOutboundPerson, []any{"bob/", "bob0", 0, 10}, []string{"USE TEMP B-TREE FOR ORDER BY"}},
		{sqlHistory, []any{"bob/1", 1 << 62, 100, 10}, nil},
		{sqlHistoryAt, []any{100, "bob/1"}, nil},
		{sqlPeerAccount, []any{"bob"}, nil},
		{sqlConversation, []any{"bob"}, nil},
		{sqlPersonLane, []any{"bob/1", idSent[:]}, nil},
		{sqlPersonLanes, []any{"bob/1", idSent[:]}, nil},
		{sqlPersonLanesOpen, []any{"bob/1", idSent[:]}, nil},
		// The decisions a catch-up reads: a range of finalized_at, each
		// record's decision lanes by person_lane_decided (the sort is of
		// the ties on one nanosecond).
		{sqlMadeDecisions, []any{100, 2, 3, "alice/", 10, 0, int64(math.MaxInt64)}, []string{"USE TEMP B-TREE FOR LAST 2 TERMS OF ORDER BY"}},
		{sqlMadeDecision, []any{"bob/1", idSent[:], int64(math.MaxInt64)}, nil},
		// A group delete's clearing of the action bodies it took out of
		// history: by the record's key, and by finalized_action_target.
		{sqlGroupForgetDeletedAction, []any{idSent[:], "bob/1", idSent[:]}, nil},
		{sqlGroupForgetDeletedActions, []any{idSent[:], idSent[:], 4, 5}, nil},
		{sqlToldOf, []any{"bob/1", idSent[:], "alice/2"}, nil},
		// The kept action decisions waiting for one target (0028, 0030):
		// by kept_decision_target and kept_decision_group_target, the sort
		// of those few rows.
		{sqlKeptActions, []any{"bob/1", idSent[:], 10}, []string{"USE TEMP B-TREE FOR ORDER BY"}},
		{sqlKeptGroupActions, []any{idSent[:], idSent[:], 10}, []string{"USE TEMP B-TREE FOR ORDER BY"}},
		// A delete forgets the kept actions on its target, by the same
		// indexes; a discard keeps a kept commit with its action by key.
		{sqlForgetKeptOfDeleted, []any{"bob/1", idSent[:]}, nil},
		{sqlGroupForgetKeptOfDeleted, []any{idSent[:], idSent[:], "bob/1", 4}, nil},
		{sqlKeepWithDiscard, []any{"bob/1", idSent[:], 4, idSent[:], []byte{1}, nil}, nil},
		{sqlForgetPlainDecision, []any{"bob/1", idSent[:]}, nil},
		// A reaction's target among a group's records, by group and ID
		// (finalized_group_id, 0031).
		{sqlGroupRecordSenders, []any{idSent[:], idSent[:], 10}, nil},
		{sqlStaged, []any{0, 10}, nil},
		{sqlOneTimePreKeys, []any{0, 10}, nil},
		{sqlCountOutboundPeer, []any{"bob/1"}, nil},
		{sqlCountInboundPeer, []any{"bob/1"}, nil},
		{sqlOutbound, []any{"bob/1", idSent[:]}, nil},
		{sqlInbound, []any{"bob/1", idSent[:]}, nil},
		{sqlFinalized, []any{"bob/1", idSent[:]}, nil},
		{sqlFinalizedAs, []any{"bob/1", idSent[:], 1}, nil},
		{sqlPeer, []any{"bob/1"}, nil},
		// The peers, and the recipients of pending messages (a held first
		// message's peer is not pinned yet): both through covering indexes.
		{sqlConversations, nil, []string{"SCAN p", "USE TEMP B-TREE FOR ORDER BY",
			"SCAN peer USING COVERING INDEX", "SCAN outbound USING COVERING INDEX outbound_recipient_seq"}},
		// The same, with a lookup of the person's list by its key, per row.
		{sqlConversationsByPerson, nil, []string{"SCAN p", "SCAN c", "USE TEMP B-TREE FOR ORDER BY",
			"SCAN peer USING COVERING INDEX", "SCAN outbound USING COVERING INDEX outbound_recipient_seq"}},
		// Statements of the transitions.
		{sqlSetSentState, []any{2, "bob/1", idSent[:]}, nil},
		{sqlDeleteOutbound, []any{"bob/1", idSent[:]}, nil},
		{sqlDeleteInbound, []any{"bob/1", idSent[:], []byte{1}}, nil},
		{sqlLastStagedRow, nil, []string{"SCAN sqlite_sequence"}}, // a row per AUTOINCREMENT table
		{sqlPruneFinalized, []any{0}, nil},
		{sqlPruneRetired, []any{0}, nil},
		{sqlQuarantine, []any{0, "x", 1}, nil},
		// Adoption (migration 0024): a removed device's sent copies,
		// ordered newest first among that device's records of the week.
		{sqlSentCopiesFrom, []any{"alice/2", 0, 10}, []string{"USE TEMP B-TREE FOR ORDER BY"}},
		{sqlAdoptHistory, []any{1, "bob/1", idSent[:], 4}, nil},
		{sqlCopyStanding, []any{"bob/1", idSent[:], 4, 1}, nil},
	}
	for _, qq := range queries {
		rows, err := f.db.sql.QueryContext(ctx, "EXPLAIN QUERY PLAN "+qq.q, qq.args...)
		if err != nil {
			t.Fatalf("EXPLAIN QUERY PLAN %s: %v", qq.q, err)
		}
		var plan []string
		for rows.Next() {
			var id, parent, unused int
			var detail string
			if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
				t.Fatal(err)
			}
			plan = append(plan, detail)
		}
		rows.Close()
		if testing.Verbose() {
			t.Logf("%.60q: %q", qq.q, plan)
		}
	lines:
		for _, d := range plan {
			for _, a := range qq.allow {
				if strings.HasPrefix(d, a) {
					continue lines
				}
			}
			if (strings.HasPrefix(d, "SCAN ") && !strings.HasPrefix(d, "SCAN CONSTANT ROW")) || strings.Contains(d, "TEMP B-TREE") {
				t.Errorf("%s\n  plan %q: want an index, not %q", qq.q, plan, d)
			}
		}
	}
}

// TestSeen: one lookup tells a message never received, pending (with its
// digest) and finalized (with its outcome and digest) apart.
func TestSeen(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, false)
	digest := sha256.Sum256([]byte("hi PLAINTEXT-MARKER-received"))
	if s, err := f.db.Seen(ctx, bob, idRecv); err != nil || s.Pending || s.Finalized {
		t.Fatalf("Seen before delivery = %+v, %v; want nothing", s, err)
	}
	withInbound(t, f)
	if s, err := f.db.Seen(ctx, bob, idRecv); err != nil || !s.Pending || s.Finalized || s.Digest != digest {
		t.Fatalf("Seen pending = %+v, %v; want pending with the digest", s, err)
	}
	if s, err := f.db.Seen(ctx, carol, idRecv); err != nil || s.Pending || s.Finalized {
		t.Fatalf("Seen of another sender = %+v, %v; want nothing", s, err)
	}
	f.apply(t, commitPlan(t, 2))
	s, err := f.db.Seen(ctx, bob, idRecv)
	if err != nil || s.Pending || !s.Finalized || s.Outcome != engine.OutcomeCommitted || s.Digest != digest {
		t.Fatalf("Seen committed = %+v, %v; want finalized, committed, with the digest", s, err)
	}
}

// TestReceiveWritesNoIDIndex: the receiver's deduplication by person reads
// each device's record by its primary key, so no index on the logical ID
// alone is kept on inbound or finalized: receiving, finalizing and pruning
// write no more B-trees than the primary key and the indexes below.
func TestReceiveWritesNoIDIndex(t *testing.T) {
	db := MustOpenDB(t)
	rows, err := db.sql.QueryContext(context.Background(),
		"SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name IN ('inbound', 'finalized') AND sql IS NOT NULL ORDER BY name")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var names []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			t.Fatal(err)
		}
		names = append(names, n)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		if n == "inbound_id" || n == "finalized_id" {
			t.Errorf("index %s on the logical ID alone is kept (indexes: %v)", n, names)
		}
	}
}

// TestSentCopiesFromReportsABadRow: a sent copy whose body cannot be
// opened is reported in its record, not as the read's error, so that the
// adoption skips it and the revoking list is stored all the same.
func TestSentCopiesFromReportsABadRow(t *testing.T) {
	db := MustOpenDB(t)
	ctx := context.Background()
	id := wire.LogicalID{0x42}
	if _, err := db.sql.ExecContext(ctx, "INSERT INTO finalized (sender, id, outcome, reason, at, sealed_digest) VALUES ('alice/2', ?, 1, 0, 24, ?)", id[:], []byte("not sealed")); err != nil {
		t.Fatal(err)
	}
	if _, err := db.sql.ExecContext(ctx, "INSERT INTO history (peer, direction, id, at, state, sealed_body, sent_by) VALUES ('carol/3', 2, ?, 24, 4, ?, 'alice/2')", id[:], []byte("not sealed")); err != nil {
		t.Fatal(err)
	}
	copies, err := db.SentCopiesFrom(ctx, engine.MustParseAddress("alice/2"), time.Unix(0, 0), 10)
	if err != nil || len(copies) != 1 || copies[0].Err == nil {
		t.Fatalf("sent copies with an unsealable body: %+v, %v; want one record carrying the error", copies, err)
	}
}
