package engine_test

import (
	"errors"
	"testing"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/wire"
)

// TestDecidePeerDeviceList: each rule of DecidePeerDeviceList, in its
// order, with what a device holding a list does with one a relay serves.
func TestDecidePeerDeviceList(t *testing.T) {
	k := newDeviceKit(t)
	g1 := k.next(nil, k.entry(1))
	g2 := k.next(&g1, k.entry(1), k.entry(2))
	g3 := k.next(&g2, k.entry(1), revoked(k.entry(2)), k.entry(3))
	other := newDeviceKit(t)
	other.account, _ = engine.NewAccountKey(other.rng) // another account key for the same user
	foreign := other.next(nil, other.entry(1))
	forged := g2
	forged.Entries = append([]wire.DeviceEntry(nil), g2.Entries...)
	forged.Entries[1].Number = 9 // breaks the entry's countersignature
	// A generation ahead that dropped device 2: signed, but not a successor.
	dropped := k.next(&g2, k.entry(1), k.entry(3))
	dropped.Generation, dropped.Parent = 4, [32]byte{1}
	dropped, _ = k.account.SignDeviceList(dropped)
	wrongUser := g1
	wrongUser.User = "mallory"

	for _, tt := range []struct {
		name string
		held *wire.DeviceList
		got  wire.DeviceList
		take bool
		err  error
	}{
		{"another user's list", nil, wrongUser, false, engine.ErrDeviceListInvalid},
		{"a broken countersignature", nil, forged, false, engine.ErrDeviceListInvalid},
		{"first sight pins generation 1", nil, g1, true, nil},
		{"first sight pins a later generation", nil, g3, true, nil},
		{"another account key", &g1, foreign, false, engine.ErrPeerAccountChanged},
		{"the same list", &g2, g2, false, nil},
		{"an older list", &g3, g2, false, nil},
		{"the successor", &g1, g2, true, nil},
		{"generations ahead, keeping every device", &g1, g3, true, nil},
		{"generations ahead, dropping a device", &g2, dropped, false, engine.ErrDeviceListInvalid},
		{"a successor with a bad parent", &g2, func() wire.DeviceList { l := g3; l.Parent = [32]byte{7}; l, _ = k.account.SignDeviceList(l); return l }(), false, engine.ErrDeviceListStale},
	} {
		t.Run(tt.name, func(t *testing.T) {
			take, err := engine.DecidePeerDeviceList("alice", tt.held, tt.got)
			if take != tt.take || !errors.Is(err, tt.err) || (tt.err == nil) != (err == nil) {
				t.Fatalf("DecidePeerDeviceList = %v, %v; want %v, %v", take, err, tt.take, tt.err)
			}
		})
	}
}

// TestActiveAddresses: the active devices of a list, by number; revoked
// ones are not sent to.
func TestActiveAddresses(t *testing.T) {
	k := newDeviceKit(t)
	l := k.next(nil, k.entry(1), revoked(k.entry(2)), k.entry(3))
	got := engine.ActiveAddresses(l)
	if len(got) != 2 || got[0].String() != "alice/1" || got[1].String() != "alice/3" {
		t.Fatalf("ActiveAddresses = %v, want alice/1 and alice/3", got)
	}
}

// TestDecisionRules: commit beats discard, and what a decision heard does
// to the copy held here, by table.
func TestDecisionRules(t *testing.T) {
	c, d := engine.OutcomeCommitted, engine.OutcomeDiscarded
	for _, tt := range []struct{ a, b, want engine.Outcome }{{c, c, c}, {c, d, c}, {d, c, c}, {d, d, d}} {
		if got := engine.MergeDecision(tt.a, tt.b); got != tt.want {
			t.Errorf("MergeDecision(%v, %v) = %v, want %v", tt.a, tt.b, got, tt.want)
		}
	}
	for _, tt := range []struct {
		name    string
		seen    engine.SeenMessage
		outcome engine.Outcome
		want    engine.DecisionVerdict
	}{
		{"not here yet", engine.SeenMessage{}, c, engine.DecisionKeep},
		{"pending", engine.SeenMessage{Pending: true}, d, engine.DecisionKeep},
		{"committed both", engine.SeenMessage{Finalized: true, Outcome: c}, c, engine.DecisionSettled},
		{"discarded both", engine.SeenMessage{Finalized: true, Outcome: d}, d, engine.DecisionSettled},
		{"committed here, discarded there", engine.SeenMessage{Finalized: true, Outcome: c}, d, engine.DecisionSettled},
		{"discarded here, committed there", engine.SeenMessage{Finalized: true, Outcome: d}, c, engine.DecisionOverruled},
	} {
		if got := engine.DecideHeardDecision(tt.seen, tt.outcome); got != tt.want {
			t.Errorf("%s: DecideHeardDecision = %v, want %v", tt.name, got, tt.want)
		}
	}
}
