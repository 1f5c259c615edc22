package engine_test

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/store"
	"github.com/parley-chat/parley/wire"
)

// chainSignature counts a profile's sender chain rows (own chains, their
// announcements, received chains), read from its database file.
func chainSignature(profile string) (string, error) {
	db, err := sql.Open("sqlite", "file:"+filepath.Join(profile, "parley.db")+"?mode=ro")
	if err != nil {
		return "", err
	}
	defer db.Close()
	var own, members, received int
	err = db.QueryRow("SELECT (SELECT count(*) FROM own_chain), (SELECT count(*) FROM chain_member), (SELECT count(*) FROM received_chain)").
		Scan(&own, &members, &received)
	return fmt.Sprintf("own %d members %d received %d", own, members, received), err
}

// loseChains deletes the chains announced to a profile ("losechains"), as
// a device restored from an old copy has lost them.
func loseChains(profile string) error {
	db, err := sql.Open("sqlite", "file:"+filepath.Join(profile, "parley.db"))
	if err != nil {
		return err
	}
	if _, err := db.Exec("DELETE FROM received_chain"); err != nil {
		db.Close()
		return err
	}
	return db.Close()
}

// The group scenarios of the failpoint matrix: a group's creation (the
// roster-change plan), a group send (one plan, every lane), the roster's
// receive and a group message's receive, each on three devices.
// PARLEY_FP_GROUPS=0 leaves them out.

// groupOp runs the group operations of fpWorld.do: "groupcreate:NAME:A,B"
// ("groupstore:NAME:A,B" stores the creation only),
// "groupsend:NAME:BODY" and "groupenqueue:NAME:BODY" (stored only: the
// "pump" op hands its lanes off) and "groupremove:NAME:ADDR" (a removal, or
// with the device's own address its leaving; stored only, as
// "groupenqueue"), "groupadmin:NAME:ADDR" (names a member admin; stored
// only). It reports false for any other op.
func groupOp(ctx context.Context, c *engine.Client, name, arg string) (bool, error) {
	switch name {
	case "groupcreate", "groupstore":
		gname, list, _ := strings.Cut(arg, ":")
		var members []engine.Address
		for _, m := range strings.Split(list, ",") {
			members = append(members, engine.MustParseAddress(m))
		}
		if name == "groupstore" {
			return true, c.StoreGroupCreation(ctx, gname, members)
		}
		_, _, err := c.CreateGroup(ctx, gname, members)
		return true, err
	case "groupsend":
		gname, body, _ := strings.Cut(arg, ":")
		g, err := groupNamed(ctx, c, gname)
		if err != nil {
			return true, err
		}
		_, err = c.SendGroup(ctx, g.ID, []byte(body))
		return true, err
	case "groupremove":
		gname, who, _ := strings.Cut(arg, ":")
		g, err := groupNamed(ctx, c, gname)
		if err != nil {
			return true, err
		}
		return true, c.StoreRosterChange(ctx, g.ID, []wire.RosterChange{{Op: wire.RosterRemove, Address: who}})
	case "groupadmin":
		gname, who, _ := strings.Cut(arg, ":")
		g, err := groupNamed(ctx, c, gname)
		if err != nil {
			return true, err
		}
		return true, c.StoreRosterChange(ctx, g.ID, []wire.RosterChange{{Op: wire.RosterAdmin, Address: who}})
	case "groupenqueue":
		gname, body, _ := strings.Cut(arg, ":")
		g, err := groupNamed(ctx, c, gname)
		if err != nil {
			return true, err
		}
		_, err = c.EnqueueGroup(ctx, g.ID, []byte(body))
		return true, err
	}
	return false, nil
}

func groupNamed(ctx context.Context, c *engine.Client, name string) (engine.GroupInfo, error) {
	all, err := c.Groups(ctx)
	if err != nil {
		return engine.GroupInfo{}, err
	}
	for _, g := range all {
		if g.Name == name {
			return g, nil
		}
	}
	return engine.GroupInfo{}, fmt.Errorf("no group %q: %w", name, engine.ErrUnknownGroup)
}

// groupSignature summarizes a device's groups: per group, its generation,
// changes, members, and each history entry with its lanes' states.
func groupSignature(ctx context.Context, st *store.DB) ([]string, error) {
	all, err := st.Groups(ctx)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, g := range all {
		h, err := st.GroupHistory(ctx, g.ID, 0, 1000)
		if err != nil {
			return nil, err
		}
		parts := []string{fmt.Sprintf("%s gen %d changes %d members %d", g.Name, g.Roster.Generation, len(g.Changes), len(g.Roster.Members))}
		for _, e := range h {
			var lanes []string
			for _, l := range e.Lanes {
				lanes = append(lanes, l.Recipient.String()+"="+l.State.String())
			}
			sort.Strings(lanes)
			parts = append(parts, fmt.Sprintf("%s:%s %v", e.Sender, e.Body, lanes))
		}
		out = append(out, strings.Join(parts, "; "))
	}
	return out, nil
}

// checkGroupHistories wants each device's history of group "g" to hold
// exactly the scenario's messages, once each.
func (sc fpScenario) checkGroupHistories(w fpWorld) error {
	if sc.wantGroup == nil {
		return nil
	}
	ctx := context.Background()
	for _, d := range sc.devices {
		st, err := store.Open(ctx, w.profile(d), passphrase, store.Options{})
		if err != nil {
			return err
		}
		all, err := st.Groups(ctx)
		var got []string
		for _, g := range all {
			h, herr := st.GroupHistory(ctx, g.ID, 0, 1000)
			if herr != nil {
				err = herr
			}
			for _, e := range h {
				got = append(got, e.Sender.String()+":"+string(e.Body))
			}
			want := len(sc.devices)
			if sc.groupMembers > 0 {
				want = sc.groupMembers
			}
			if len(g.Roster.Members) != want {
				err = fmt.Errorf("%s sees %d members, want %d", d, len(g.Roster.Members), want)
			}
			if sc.groupGeneration > 0 && g.Roster.Generation != sc.groupGeneration {
				err = fmt.Errorf("%s holds generation %d, want %d", d, g.Roster.Generation, sc.groupGeneration)
			}
		}
		st.Close()
		if err != nil {
			return err
		}
		if want := sc.wantGroup[d]; !reflect.DeepEqual(got, want) && !(len(got) == 0 && len(want) == 0) {
			return fmt.Errorf("%s's group history is %q, want %q exactly once", d, got, want)
		}
		if len(all) != 1 {
			return fmt.Errorf("%s keeps %d groups, want 1", d, len(all))
		}
	}
	return nil
}

func groupScenarios() []fpScenario {
	if os.Getenv("PARLEY_FP_GROUPS") == "0" {
		return nil
	}
	abc := []string{"alice/1", "bob/1", "carol/1"}
	create := fpStep{"alice/1", "groupcreate:g:bob/1,carol/1"}
	created := []fpStep{create, {"bob/1", "sync"}, {"carol/1", "sync"}, {"alice/1", "sync"}}
	none := map[string][]string{}
	hi := map[string][]string{"alice/1": {"alice/1:hi"}, "bob/1": {"alice/1:hi"}, "carol/1": {"alice/1:hi"}}
	enqueued := append(append([]fpStep(nil), created...), fpStep{"alice/1", "groupenqueue:g:hi"})
	// Each target is one plan: a group's creation and a group send store
	// their lanes pending (CreateGroup and SendGroup then run the pump's
	// pass, one transaction per member: "pumppeer" here, whose scenarios
	// follow each; the other lane is left to convergence).
	return []fpScenario{
		{name: "group create", devices: abc, target: fpStep{"alice/1", "groupstore:g:bob/1,carol/1"}, wantGroup: none},
		{name: "group create pump", devices: abc, setup: []fpStep{{"alice/1", "groupstore:g:bob/1,carol/1"}}, target: fpStep{"alice/1", "pumppeer:bob/1"}, wantGroup: none},
		{name: "roster receive", devices: abc, setup: []fpStep{create, {"bob/1", "stage"}}, target: fpStep{"bob/1", "process"}, wantGroup: none},
		{name: "group send", devices: abc, setup: created, target: fpStep{"alice/1", "groupsend:g:hi"}, wantGroup: hi, composite: true},
		{name: "store-first group send", devices: abc, setup: created, target: fpStep{"alice/1", "groupenqueue:g:hi"}, wantGroup: hi},
		{name: "group pump", devices: abc, setup: enqueued, target: fpStep{"alice/1", "pumppeer:carol/1"}, wantGroup: hi},
		{name: "group receive", devices: abc, setup: append(append([]fpStep(nil), created...), fpStep{"alice/1", "groupsend:g:hi"}, fpStep{"bob/1", "stage"}),
			target: fpStep{"bob/1", "process"}, wantGroup: hi},
		// A group from a device bob has not accepted waits in its request;
		// accepting alice applies the creation and acknowledges it.
		{name: "group request accept", devices: abc, setup: []fpStep{{"bob/1", "requests"}, create, {"bob/1", "sync"}, {"carol/1", "sync"}},
			target: fpStep{"bob/1", "acceptall"}, wantGroup: none},
	}
}

// chainScenarios are the sender chain's plans in the failpoint matrix, in a
// group of four (the smallest that uses a chain): a group send that
// announces the chain (every lane pairwise, an announcement lane per
// member), a group send by the chain (the chain advanced in the plan that
// stores the lanes, its envelopes handed off after the commit) and a chain
// message's receive (the received chain advanced with the delivery), a
// page of two chain messages acknowledged by one cumulative ACK and that
// ACK's receive at the sender (both lanes ended in one transaction). The
// announcement's receive is not a target of its own: it reaches its member
// with the message it was stored beside, and a target of two rows is not
// one transition. PARLEY_FP_CHAINS=0 (or PARLEY_FP_GROUPS=0) leaves them
// out.
func chainScenarios() []fpScenario {
	if os.Getenv("PARLEY_FP_GROUPS") == "0" || os.Getenv("PARLEY_FP_CHAINS") == "0" {
		return nil
	}
	abcd := []string{"alice/1", "bob/1", "carol/1", "dave/1"}
	created := []fpStep{{"alice/1", "groupcreate:g:bob/1,carol/1,dave/1"}, {"bob/1", "sync"}, {"carol/1", "sync"}, {"dave/1", "sync"}, {"alice/1", "sync"}}
	history := func(bodies ...string) map[string][]string {
		out := map[string][]string{}
		for _, d := range abcd {
			for _, b := range bodies {
				out[d] = append(out[d], "alice/1:"+b)
			}
		}
		return out
	}
	acked := append(append([]fpStep(nil), created...), fpStep{"alice/1", "groupsend:g:one"}, fpStep{"bob/1", "sync"}, fpStep{"carol/1", "sync"}, fpStep{"dave/1", "sync"},
		fpStep{"alice/1", "sync"})
	chained := append(append([]fpStep(nil), acked...), fpStep{"alice/1", "groupsend:g:two"}, fpStep{"bob/1", "stage"})
	// Bob commits the first message before the two that he commits on
	// arrival, so that his history keeps the send order, and alice takes
	// its ACK, so that the cumulative ACK is alone in her page.
	twoChained := append(append([]fpStep(nil), acked...), fpStep{"bob/1", "commitall"}, fpStep{"alice/1", "sync"}, fpStep{"alice/1", "groupsend:g:two"}, fpStep{"alice/1", "groupsend:g:three"},
		fpStep{"bob/1", "stage"})
	lost := append(append([]fpStep(nil), acked...), fpStep{"bob/1", "commitall"}, fpStep{"alice/1", "sync"}, fpStep{"bob/1", "losechains"},
		fpStep{"alice/1", "groupsend:g:two"},
		fpStep{"bob/1", "stage"})
	// Dave sends once (his own chain, announced) and every member holds
	// alice's and his.
	daveSent := append(append([]fpStep(nil), acked...), fpStep{"bob/1", "commitall"}, fpStep{"carol/1", "commitall"}, fpStep{"dave/1", "commitall"},
		fpStep{"alice/1", "sync"}, fpStep{"dave/1", "groupsend:g:two"}, fpStep{"alice/1", "sync"}, fpStep{"bob/1", "sync"},
		fpStep{"carol/1", "sync"}, fpStep{"dave/1", "sync"})
	leftHistory := map[string][]string{}
	for _, d := range abcd {
		leftHistory[d] = []string{"alice/1:one", "dave/1:two"}
	}
	return []fpScenario{
		{name: "chain announce send", devices: abcd, setup: created, target: fpStep{"alice/1", "groupenqueue:g:one"}, wantGroup: history("one")},
		{name: "chain send", devices: abcd, setup: acked, target: fpStep{"alice/1", "groupenqueue:g:two"}, wantGroup: history("one", "two")},
		{name: "chain receive", devices: abcd, setup: chained, target: fpStep{"bob/1", "process"}, wantGroup: history("one", "two")},
		// A page of two chain messages committed on arrival: one
		// cumulative ACK (the chain-ack plan) in the page's transaction.
		{name: "chain cumulative ack", devices: abcd, setup: twoChained, target: fpStep{"bob/1", "processcommit"},
			wantGroup: history("one", "two", "three")},
		// The sender ends both lanes from that one ACK
		// (chain-acks-receive).
		{name: "chain cumulative ack receive", devices: abcd,
			setup:     append(append([]fpStep(nil), twoChained...), fpStep{"bob/1", "processcommit"}, fpStep{"alice/1", "stage"}),
			target:    fpStep{"alice/1", "process"},
			wantGroup: history("one", "two", "three")},
		// Bob lost the chain he acknowledged: his page holds the chain
		// message and asks alice for the chain (need-chain-ask).
		{name: "need-chain ask", devices: abcd, setup: lost, target: fpStep{"bob/1", "process"}, wantGroup: history("one", "two")},
		// Alice answers with a fresh announcement lane (need-chain-receive).
		{name: "need-chain answer", devices: abcd,
			setup:     append(append([]fpStep(nil), lost...), fpStep{"bob/1", "process"}, fpStep{"alice/1", "stage"}),
			target:    fpStep{"alice/1", "process"},
			wantGroup: history("one", "two")},
		// Dave leaves: his chains of the group go in the roster change's
		// transaction.
		{name: "chain leave", devices: abcd, setup: daveSent, target: fpStep{"dave/1", "groupremove:g:dave/1"}, wantGroup: leftHistory,
			groupMembers: 3},
		// Alice removes dave: his chains go when he records the removal.
		{name: "chain removed receive", devices: abcd,
			setup: append(append([]fpStep(nil), daveSent...), fpStep{"alice/1", "groupremove:g:dave/1"}, fpStep{"alice/1", "pump"},
				fpStep{"dave/1", "stage"}),
			target:    fpStep{"dave/1", "process"},
			wantGroup: leftHistory, groupMembers: 3},
	}
}
