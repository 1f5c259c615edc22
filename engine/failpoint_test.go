package engine_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/engine/enginetest"
	"github.com/parley-chat/parley/engine/session"
	"github.com/parley-chat/parley/store"
)

// The failpoint matrix: every named point of every transition (before and
// after each cryptographic step, each statement, the commit, the memory swap,
// the hand-off and the event), triggered once as an error and once as a hard
// process exit. After a reopen the state must be exactly the state before the
// transition (then running the transition again completes it) or exactly the
// state after it (then replays are absorbed); either way the devices then
// converge with every message in its recipient's history exactly once.

const childExit = 77

var cheapKDF = store.KDFParams{Time: 1, MemoryKiB: 8, Threads: 1}

// fpWorld is a set of profiles and a file-backed relay under one directory,
// shared by the test and the child processes it kills.
type fpWorld struct {
	root string
}

func (w fpWorld) profile(addr string) string {
	return filepath.Join(w.root, strings.ReplaceAll(addr, "/", "_"))
}
func (w fpWorld) netFile() string { return filepath.Join(w.root, "relay.json") }

// create makes a fresh profile for addr and publishes its prekeys.
func (w fpWorld) create(addr string) error {
	ctx := context.Background()
	dir := w.profile(addr)
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	st, err := store.Create(ctx, dir, passphrase, store.Options{KDF: cheapKDF})
	if err != nil {
		return err
	}
	if _, err := engine.CreateProfile(ctx, st, engine.MustParseAddress(addr), "file://", nil, realNow()); err != nil {
		st.Close()
		return err
	}
	st.Close()
	return w.do(addr, "maintain", nil)
}

// do runs one operation of one device, with fp as the failpoint hook of the
// store and the engine.
func (w fpWorld) do(addr, op string, fp engine.Failpoint) (err error) {
	ctx := context.Background()
	self := engine.MustParseAddress(addr)
	if op == "losechains" {
		return loseChains(w.profile(addr))
	}
	st, err := store.Open(ctx, w.profile(addr), passphrase, store.Options{Failpoint: fp})
	if err != nil {
		return err
	}
	ep, err := enginetest.OpenFileEndpoint(w.netFile(), self)
	if err != nil {
		st.Close()
		return err
	}
	c, err := engine.Open(ctx, engine.Config{Store: st, Relay: ep, Failpoint: fp, Requests: w.requestMode(addr)})
	if err != nil {
		st.Close()
		return err
	}
	defer func() {
		if cerr := c.Close(); err == nil {
			err = cerr
		}
	}()
	// Several ops joined by ";" run in one opening, as one process that
	// does one after the other would (converge's rounds: opening a
	// profile and the network is most of an op's cost).
	for _, one := range strings.Split(op, ";") {
		if err := w.run(ctx, addr, st, c, ep, one); err != nil {
			return err
		}
	}
	return nil
}

// run is one op of do on an open device.
func (w fpWorld) run(ctx context.Context, addr string, st *store.DB, c *engine.Client, ep *enginetest.FileEndpoint, op string) error {
	self := engine.MustParseAddress(addr)
	name, arg, _ := strings.Cut(op, ":")
	if ok, err := groupOp(ctx, c, name, arg); ok {
		return err
	} else if ok, err := requestOp(ctx, w, addr, c, name, arg); ok {
		return err
	} else if ok, err := actionOp(ctx, c, name, arg); ok {
		return err
	} else if ok, err := personOp(ctx, w, st, c, ep, name, arg); ok {
		return err
	} else if ok, err := archiveOp(ctx, w, st, c, name); ok {
		return err
	}
	peerArg, body, _ := strings.Cut(arg, ":")
	var peer engine.Address
	if peerArg != "" {
		peer = engine.MustParseAddress(peerArg)
	}
	switch name {
	case "maintain":
		return c.RefreshPreKeys(ctx)
	case "draft":
		return c.SaveDraft(ctx, peer, body)
	case "enqueue":
		res, err := c.Enqueue(ctx, []engine.SendRequest{{Peer: peer, Body: []byte(body), ClearDraft: true}})
		if err != nil {
			return err
		}
		return res[0].Err
	case "pump":
		_, err := c.Pump(ctx)
		return err
	case "pumppeer":
		return c.PumpPeer(ctx, peer)
	case "send":
		_, err := c.Send(ctx, peer, []byte(body))
		var notSent *engine.MessageNotSentError
		if errors.As(err, &notSent) {
			return nil // stored and pending: what a setup with the relay down wants
		}
		return err
	case "stage", "sync":
		leased, err := ep.Receive(ctx)
		if err != nil {
			return err
		}
		if _, err := c.Stage(ctx, leased); err != nil {
			return err
		}
		rows := make([]uint64, len(leased))
		for i, l := range leased {
			rows[i] = l.Row
		}
		if err := ep.Release(ctx, rows); err != nil {
			return err
		}
		if name == "stage" {
			return nil
		}
		_, err = c.ProcessStaged(ctx)
		return err
	case "process":
		_, err := c.ProcessStaged(ctx)
		return err
	case "processcommit":
		_, err := c.ProcessStagedCommitting(ctx)
		return err
	case "commitall", "discardall":
		msgs, err := c.PendingInbound(ctx, engine.PageQuery{Limit: 100})
		if err != nil {
			return err
		}
		for _, m := range msgs {
			if name == "commitall" {
				_, err = c.Commit(ctx, m.Sender, m.ID)
			} else {
				_, err = c.Discard(ctx, m.Sender, m.ID, engine.DiscardOther)
			}
			if err != nil {
				return err
			}
		}
		return nil
	case "commitagain":
		// A person commits again what is committed from peer: the ACK
		// goes again (ack-again), nothing else changes.
		h, err := c.History(ctx, peer, 0, 100)
		if err != nil {
			return err
		}
		for _, e := range h {
			if e.Direction != engine.DirectionIn {
				continue
			}
			res, err := c.FinalizeBatch(ctx, []engine.FinalizeRequest{{Sender: peer, ID: e.ID, Outcome: engine.OutcomeCommitted}})
			if err != nil {
				return err
			}
			if res[0].Err != nil {
				return res[0].Err
			}
		}
		return nil
	case "retry":
		_, err := c.Retry(ctx, peer)
		return err
	case "abandonall":
		msgs, err := c.PendingOutbound(ctx, engine.PageQuery{Limit: 100, Peer: &peer})
		if err != nil {
			return err
		}
		for _, m := range msgs {
			if err := c.Abandon(ctx, peer, m.ID); err != nil {
				return err
			}
		}
		return nil
	case "trust":
		k, err := c.RelayIdentity(ctx, peer)
		if err != nil {
			return err
		}
		_, err = c.AcceptIdentity(ctx, peer, k.Fingerprint())
		return err
	case "prune":
		_, err := c.Prune(ctx, -1)
		return err
	case "present":
		return c.MarkPresented(ctx)
	case "clearquarantine":
		_, err := c.ClearQuarantine(ctx, 0)
		return err
	case "down", "up":
		ep.Network().SetDown(self, name == "down")
		return ep.Save()
	case "corrupt":
		ep.Network().Inject(peer, []byte("not an envelope"))
		return ep.Save()
	case "tamper":
		ep.Network().TamperLast(peer)
		return ep.Save()
	}
	return fmt.Errorf("unknown op %q", op)
}

// signature is what a device's durable state looks like, in counts.
type signature struct {
	PendingOut, PendingIn, HistoryIn, HistoryOut, Acked, Abandoned int
	Staged, Quarantine                                             int
	Sessions                                                       []uint64
	Pinned                                                         int
	OneTime, Signed                                                int
	Published                                                      uint32
	MarkerPresented                                                uint64
	Groups                                                         []string // groupSignature
	Requests                                                       []string // requestSignature
	Chains                                                         string   // chainSignature
	Drafts                                                         []string // "peer=text", sorted
	Actions                                                        []string // what actions did to entries
	PeerLists                                                      []string // "user:generation" of the device lists held
}

func (w fpWorld) signature(addr string, peers []string) (signature, error) {
	ctx := context.Background()
	st, err := store.Open(ctx, w.profile(addr), passphrase, store.Options{})
	if err != nil {
		return signature{}, err
	}
	defer st.Close()
	var s signature
	if s.PendingOut, err = st.CountOutbound(ctx, nil); err != nil {
		return s, err
	}
	if s.PendingIn, err = st.CountInbound(ctx, nil); err != nil {
		return s, err
	}
	for _, p := range peers {
		if p == addr {
			continue
		}
		pa := engine.MustParseAddress(p)
		h, err := st.History(ctx, pa, 0, 1000)
		if err != nil {
			return s, err
		}
		for _, e := range h {
			if e.Edits > 0 || e.Deleted || e.ReplyTo != nil || len(e.Reactions) > 0 {
				s.Actions = append(s.Actions, fmt.Sprintf("%s %d %t %t %v", e.Body, e.Edits, e.Deleted, e.ReplyTo != nil, e.Reactions))
			}
			switch {
			case e.Direction == engine.DirectionIn:
				s.HistoryIn++
			case e.State == engine.SentAcknowledged:
				s.Acked++
			case e.State == engine.SentAbandoned:
				s.Abandoned++
			default:
				s.HistoryOut++
			}
		}
		ps, err := st.Peer(ctx, pa)
		if err != nil {
			return s, err
		}
		s.Sessions = append(s.Sessions, ps.SessionVersion)
		if ps.Pinned != nil {
			s.Pinned++
		}
	}
	staged, err := st.Staged(ctx, 0, 1000)
	if err != nil {
		return s, err
	}
	s.Staged = len(staged)
	prof, err := st.Profile(ctx)
	if err != nil {
		return s, err
	}
	s.OneTime, s.Signed, s.Published, s.MarkerPresented = prof.OneTimeCount, len(prof.SignedPreKeys), prof.OneTimePublished, prof.MarkerPresented
	if s.Groups, err = groupSignature(ctx, st); err != nil {
		return s, err
	}
	drafts, err := st.Drafts(ctx)
	if err != nil {
		return s, err
	}
	for p, text := range drafts {
		s.Drafts = append(s.Drafts, p.String()+"="+text)
	}
	sort.Strings(s.Drafts)
	users, err := st.PeerAccountUsers(ctx, 100)
	if err != nil {
		return s, err
	}
	for _, u := range users {
		a, _, err := st.PeerAccount(ctx, u)
		if err != nil {
			return s, err
		}
		s.PeerLists = append(s.PeerLists, fmt.Sprintf("%s:%d", u, a.List.Generation))
	}
	if s.Requests, err = requestSignature(ctx, st); err != nil {
		return s, err
	}
	s.Chains, err = chainSignature(w.profile(addr))
	return s, err
}

type fpStep struct{ dev, op string }

// fpScenario leads to one target transition and says what the conversation
// must hold once the devices converged.
type fpScenario struct {
	name    string
	devices []string
	setup   []fpStep
	target  fpStep
	// want[recipient][sender] is the recipient's committed history from sender.
	want map[string]map[string][]string
	// wantGroup[device] is the device's group history ("sender:body"),
	// for the group scenarios (group_failpoint_test.go).
	wantGroup map[string][]string
	// groupMembers, when set, is how many members group "g" has once
	// converged (a scenario that removes one); all the devices otherwise.
	groupMembers int
	// noRetry is set when the scenario abandons its message: convergence
	// then must not resend it.
	noRetry bool
	// composite is set when the target runs more than one plan (SendGroup:
	// the store, then the pump's pass per member). The crash windows
	// (group_crash_test.go) kill it; the matrix leaves it out, since a
	// failure between its plans leaves a state between before and after,
	// and covers each of its plans as a scenario of its own.
	composite bool
	// heal runs before convergence (for example bringing a device's link
	// back up after a target that needs it down).
	heal []fpStep
	// valid, when set, rejects a prepared world (for example a collision
	// whose random initiation IDs make the other side win); prepare then
	// starts over.
	valid func(w fpWorld) bool
}

// bobWins reports whether bob's own pending initiation has the smaller ID,
// so that bob keeps it when alice's arrives.
func bobWins(w fpWorld) bool {
	ctx := context.Background()
	ids := map[string]engine.InitiationID{}
	for _, pair := range [][2]string{{"alice/1", "bob/1"}, {"bob/1", "alice/1"}} {
		st, err := store.Open(ctx, w.profile(pair[0]), passphrase, store.Options{})
		if err != nil {
			return false
		}
		ps, err := st.Peer(ctx, engine.MustParseAddress(pair[1]))
		st.Close()
		if err != nil || ps.Session == nil {
			return false
		}
		s, err := session.UnmarshalSession(ps.Session)
		if err != nil {
			return false
		}
		ids[pair[0]] = s.ID
	}
	return ids["bob/1"].Compare(ids["alice/1"]) < 0
}

// established is the setup of a session that has carried one message, "hello",
// from alice to bob and its ACK back.
func established() []fpStep {
	return []fpStep{{"alice/1", "send:bob/1:hello"}, {"bob/1", "sync"}, {"bob/1", "commitall"}, {"alice/1", "sync"}}
}

func fpScenarios() []fpScenario {
	ab := []string{"alice/1", "bob/1"}
	hello := map[string]map[string][]string{"bob/1": {"alice/1": {"hello"}}}
	two := map[string]map[string][]string{"bob/1": {"alice/1": {"hello", "again"}}}
	return append([]fpScenario{
		{name: "first send", devices: ab, target: fpStep{"alice/1", "send:bob/1:hello"}, want: hello},
		{name: "send on a session", devices: ab, setup: []fpStep{{"alice/1", "send:bob/1:hello"}, {"bob/1", "sync"}, {"bob/1", "commitall"}, {"alice/1", "sync"}},
			target: fpStep{"alice/1", "send:bob/1:again"}, want: two},
		{name: "stage", devices: ab, setup: []fpStep{{"alice/1", "send:bob/1:hello"}}, target: fpStep{"bob/1", "stage"}, want: hello},
		// The store-first send: the message and the draft's end in one
		// transaction, then the pump's encryption and hand-off.
		{name: "store-first send", devices: ab, setup: []fpStep{{"alice/1", "draft:bob/1:hello"}}, target: fpStep{"alice/1", "enqueue:bob/1:hello"}, want: hello},
		{name: "pump", devices: ab, setup: []fpStep{{"alice/1", "enqueue:bob/1:hello"}, {"alice/1", "enqueue:bob/1:again"}}, target: fpStep{"alice/1", "pump"}, want: two},
		{name: "pump on a session", devices: ab, setup: append(established(), fpStep{"alice/1", "enqueue:bob/1:again"}), target: fpStep{"alice/1", "pump"}, want: two},
		{name: "handshake receive", devices: ab, setup: []fpStep{{"alice/1", "send:bob/1:hello"}, {"bob/1", "stage"}}, target: fpStep{"bob/1", "process"}, want: hello},
		{name: "pairwise receive", devices: ab, setup: []fpStep{{"alice/1", "send:bob/1:hello"}, {"bob/1", "sync"}, {"alice/1", "send:bob/1:again"}, {"bob/1", "stage"}},
			target: fpStep{"bob/1", "process"}, want: two},
		{name: "receive and commit", devices: ab, setup: append(established(), fpStep{"alice/1", "send:bob/1:again"}, fpStep{"bob/1", "stage"}),
			target: fpStep{"bob/1", "processcommit"}, want: two},
		{name: "first receive and commit", devices: ab, setup: []fpStep{{"alice/1", "send:bob/1:hello"}, {"bob/1", "stage"}},
			target: fpStep{"bob/1", "processcommit"}, want: hello},
		{name: "commit", devices: ab, setup: []fpStep{{"alice/1", "send:bob/1:hello"}, {"bob/1", "sync"}}, target: fpStep{"bob/1", "commitall"}, want: hello},
		{name: "commit again", devices: ab, setup: []fpStep{{"alice/1", "send:bob/1:hello"}, {"bob/1", "sync"}, {"bob/1", "commitall"}},
			target: fpStep{"bob/1", "commitagain:alice/1"}, want: hello},
		{name: "discard", devices: ab, setup: []fpStep{{"alice/1", "send:bob/1:hello"}, {"bob/1", "sync"}}, target: fpStep{"bob/1", "discardall"},
			want: map[string]map[string][]string{}},
		{name: "ack receive", devices: ab, setup: []fpStep{{"alice/1", "send:bob/1:hello"}, {"bob/1", "sync"}, {"bob/1", "commitall"}, {"alice/1", "stage"}},
			target: fpStep{"alice/1", "process"}, want: hello},
		{name: "repeat receive", devices: ab, setup: []fpStep{{"alice/1", "send:bob/1:hello"}, {"bob/1", "sync"}, {"bob/1", "commitall"}, {"alice/1", "retry:bob/1"}, {"bob/1", "stage"}},
			target: fpStep{"bob/1", "process"}, want: hello},
		{name: "retry", devices: ab, setup: append(established(), fpStep{"alice/1", "down"}, fpStep{"alice/1", "send:bob/1:again"}, fpStep{"alice/1", "up"}),
			target: fpStep{"alice/1", "retry:bob/1"}, want: two},
		{name: "receive on a new chain", devices: ab, setup: append(established(), fpStep{"alice/1", "send:bob/1:again"}, fpStep{"bob/1", "stage"}),
			target: fpStep{"bob/1", "process"}, want: two},
		{name: "held first send", devices: ab, setup: []fpStep{{"alice/1", "down"}}, target: fpStep{"alice/1", "send:bob/1:hello"},
			heal: []fpStep{{"alice/1", "up"}}, want: hello},
		{name: "retry of a held send", devices: ab, setup: []fpStep{{"alice/1", "down"}, {"alice/1", "send:bob/1:hello"}, {"alice/1", "up"}},
			target: fpStep{"alice/1", "retry:bob/1"}, want: hello},
		{name: "abandon", devices: ab, setup: append(established(), fpStep{"alice/1", "down"}, fpStep{"alice/1", "send:bob/1:again"}, fpStep{"alice/1", "up"}),
			target: fpStep{"alice/1", "abandonall:bob/1"}, want: hello, noRetry: true},
		{name: "collision", devices: ab, setup: []fpStep{{"alice/1", "send:bob/1:hello"}, {"bob/1", "send:alice/1:hi"}, {"alice/1", "stage"}, {"bob/1", "stage"}},
			target: fpStep{"bob/1", "process"}, want: map[string]map[string][]string{"bob/1": {"alice/1": {"hello"}}, "alice/1": {"bob/1": {"hi"}}}, valid: bobWins},
		{name: "quarantine", devices: ab, setup: []fpStep{{"alice/1", "corrupt:bob/1"}, {"bob/1", "stage"}}, target: fpStep{"bob/1", "process"},
			want: map[string]map[string][]string{}},
		{name: "quarantine clear", devices: ab, setup: []fpStep{{"alice/1", "corrupt:bob/1"}, {"bob/1", "sync"}}, target: fpStep{"bob/1", "clearquarantine"},
			want: map[string]map[string][]string{}},
		{name: "identity change", devices: ab, setup: []fpStep{{"alice/1", "send:bob/1:hello"}, {"bob/1", "sync"}, {"bob/1", "commitall"}, {"alice/1", "sync"}}, target: fpStep{"alice/1", "trust:bob/1"}, want: hello},
		{name: "prune", devices: ab, setup: []fpStep{{"alice/1", "send:bob/1:hello"}, {"bob/1", "sync"}, {"bob/1", "commitall"}, {"alice/1", "sync"}}, target: fpStep{"bob/1", "prune"}, want: hello},
		{name: "recovery request", devices: ab, setup: append(established(), fpStep{"alice/1", "send:bob/1:again"}, fpStep{"alice/1", "tamper:bob/1"}, fpStep{"bob/1", "stage"}),
			target: fpStep{"bob/1", "process"}, want: two},
		{name: "session reset", devices: ab, setup: append(established(), fpStep{"alice/1", "send:bob/1:again"}, fpStep{"alice/1", "tamper:bob/1"}, fpStep{"bob/1", "sync"}, fpStep{"alice/1", "stage"}),
			target: fpStep{"alice/1", "process"}, want: two},
		{name: "prekey publish", devices: ab, setup: []fpStep{{"alice/1", "send:bob/1:hello"}}, target: fpStep{"bob/1", "maintain"}, want: hello},
		{name: "presented", devices: ab, setup: []fpStep{{"alice/1", "send:bob/1:hello"}}, target: fpStep{"alice/1", "present"}, want: hello},
	}, append(append(append(append(append(append(groupScenarios(), chainScenarios()...), requestScenarios()...), actionScenarios()...), groupActionScenarios()...), archiveScenarios()...), personScenarios()...)...)
}

// clone copies the world into dir, keeping every file's mode (the store
// refuses a profile others could write to), and returns the copy.
func (w fpWorld) clone(t *testing.T, dir string) fpWorld {
	t.Helper()
	err := filepath.WalkDir(w.root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(w.root, p)
		if err != nil {
			return err
		}
		dst := filepath.Join(dir, rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		if d.IsDir() {
			if err := os.MkdirAll(dst, info.Mode().Perm()); err != nil {
				return err
			}
			return os.Chmod(dst, info.Mode().Perm())
		}
		if !info.Mode().IsRegular() {
			return fmt.Errorf("%s: not a regular file", p)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(dst, b, info.Mode().Perm())
	})
	if err != nil {
		t.Fatalf("copy the world: %v", err)
	}
	return fpWorld{root: dir}
}

// prepare builds the scenario's world up to its target.
func (sc fpScenario) prepare(t *testing.T, root string) fpWorld {
	t.Helper()
	for attempt := 0; attempt < 20; attempt++ {
		w := sc.prepareOnce(t, filepath.Join(root, fmt.Sprint(attempt)))
		if sc.valid == nil || sc.valid(w) {
			return w
		}
	}
	t.Fatalf("%s: no valid world in 20 attempts", sc.name)
	return fpWorld{}
}

func (sc fpScenario) prepareOnce(t *testing.T, root string) fpWorld {
	t.Helper()
	w := fpWorld{root: root}
	for _, d := range sc.devices {
		if err := w.create(d); err != nil {
			t.Fatalf("create %s: %v", d, err)
		}
	}
	for _, s := range sc.setup {
		if err := w.do(s.dev, s.op, nil); err != nil {
			t.Fatalf("setup %s %s: %v", s.dev, s.op, err)
		}
	}
	return w
}

func (sc fpScenario) signatures(t *testing.T, w fpWorld) map[string]signature {
	t.Helper()
	out := map[string]signature{}
	for _, d := range sc.devices {
		s, err := w.signature(d, sc.devices)
		if err != nil {
			t.Fatalf("signature of %s: %v", d, err)
		}
		out[d] = s
	}
	return out
}

// converge runs sync, commit and retry rounds until nothing is pending on
// any device and the relay holds nothing, then checks the histories.
func (sc fpScenario) converge(t *testing.T, w fpWorld) error {
	for _, s := range sc.heal {
		if err := w.do(s.dev, s.op, nil); err != nil {
			return fmt.Errorf("heal %s %s: %w", s.dev, s.op, err)
		}
	}
	for round := 0; round < 6; round++ {
		for _, d := range sc.devices {
			if err := w.do(d, "sync;commitall", nil); err != nil {
				return fmt.Errorf("round %d: %s sync;commitall: %w", round, d, err)
			}
		}
		for _, d := range sc.devices {
			if err := w.do(d, "sync", nil); err != nil {
				return err
			}
		}
		pending := 0
		for _, d := range sc.devices {
			s, err := w.signature(d, sc.devices)
			if err != nil {
				return err
			}
			pending += s.PendingOut + s.PendingIn + s.Staged
		}
		if pending == 0 {
			if err := w.allBlocksTold(sc.devices); err != nil {
				return err
			}
			if err := sc.checkHistories(w); err != nil {
				return err
			}
			return sc.checkGroupHistories(w)
		}
		if !sc.noRetry {
			for _, d := range sc.devices {
				var retries []string
				for _, p := range sc.devices {
					if p != d {
						retries = append(retries, "retry:"+p)
					}
				}
				if len(retries) > 0 {
					if err := w.do(d, strings.Join(retries, ";"), nil); err != nil {
						return err
					}
				}
			}
		}
	}
	return errors.New("no convergence after 6 rounds")
}

// allBlocksTold runs maintenance on every device and checks that the relay
// then heard of every block and unblock.
func (w fpWorld) allBlocksTold(devices []string) error {
	ctx := context.Background()
	for _, d := range devices {
		if err := w.do(d, "maintain", nil); err != nil {
			return fmt.Errorf("maintain %s: %w", d, err)
		}
		st, err := store.Open(ctx, w.profile(d), passphrase, store.Options{})
		if err != nil {
			return err
		}
		untold, err := st.BlocksUntold(ctx)
		st.Close()
		if err != nil {
			return err
		}
		if len(untold) > 0 {
			return fmt.Errorf("%s: the relay never heard of %d block changes", d, len(untold))
		}
	}
	return nil
}

func (sc fpScenario) checkHistories(w fpWorld) error {
	ctx := context.Background()
	for _, r := range sc.devices {
		st, err := store.Open(ctx, w.profile(r), passphrase, store.Options{})
		if err != nil {
			return err
		}
		for _, s := range sc.devices {
			if s == r {
				continue
			}
			h, err := st.History(ctx, engine.MustParseAddress(s), 0, 1000)
			if err != nil {
				st.Close()
				return err
			}
			var got []string
			for i := len(h) - 1; i >= 0; i-- {
				if h[i].Direction == engine.DirectionIn {
					got = append(got, string(h[i].Body))
				}
			}
			if want := sc.want[r][s]; !reflect.DeepEqual(got, want) && !(len(got) == 0 && len(want) == 0) {
				st.Close()
				return fmt.Errorf("%s's history from %s is %q, want %q exactly once", r, s, got, want)
			}
		}
		st.Close()
	}
	return nil
}

// TestFailpointChild is the child process of the hard-exit half: it runs one
// operation and exits with childExit at the named point.
func TestFailpointChild(t *testing.T) {
	root := os.Getenv("PARLEY_FP_ROOT")
	if root == "" {
		t.Skip("only runs as a child of TestFailpointMatrix")
	}
	point := os.Getenv("PARLEY_FP_POINT")
	hook := func(p string) error {
		if p == point {
			os.Exit(childExit)
		}
		return nil
	}
	if err := (fpWorld{root: root}).do(os.Getenv("PARLEY_FP_DEV"), os.Getenv("PARLEY_FP_OP"), hook); err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		os.Exit(1)
	}
}

func TestFailpointMatrix(t *testing.T) {
	if testing.Short() {
		t.Skip("the failpoint matrix is long")
	}
	var mu sync.Mutex
	total := &matrixResult{points: map[string]bool{}, kinds: map[string]bool{}}
	allPoints := os.Getenv("PARLEY_FAILPOINTS") == "all"
	record := func(point, violation string) {
		mu.Lock()
		defer mu.Unlock()
		total.points[point] = true
		// A plan kind counts once the store applied it (its statements
		// have points); engine-only prefixes such as "receive" do not.
		if kind, rest, ok := strings.Cut(point, "/"); ok && strings.HasPrefix(rest, "stmt-") {
			total.kinds[kind] = true
		}
		if violation != "" {
			total.violations = append(total.violations, violation)
		}
	}
	for _, sc := range fpScenarios() {
		if sc.composite {
			continue
		}
		t.Run(sc.name, func(t *testing.T) {
			t.Parallel()
			// The world is prepared once and copied for the clean run and
			// for every point: a copy is the same state as a new
			// preparation (the world is its directory) and costs a few
			// file copies instead of profiles, prekeys and the setup steps.
			tmpl := sc.prepare(t, t.TempDir())
			// A clean run names the points the target passes and the state
			// before and after it.
			w := tmpl.clone(t, t.TempDir())
			pre := sc.signatures(t, w)
			var seen []string
			seenSet := map[string]bool{}
			if err := w.do(sc.target.dev, sc.target.op, func(p string) error {
				if !seenSet[p] {
					seenSet[p] = true
					seen = append(seen, p)
				}
				return nil
			}); err != nil {
				t.Fatalf("clean run: %v", err)
			}
			post := sc.signatures(t, w)
			if err := sc.converge(t, w); err != nil {
				t.Fatalf("clean run does not converge: %v", err)
			}
			seen, skipped := matrixPoints(seen, allPoints)
			mu.Lock()
			total.skipped += skipped
			mu.Unlock()
			sort.Strings(seen)
			for _, point := range seen {
				for _, mode := range []string{"error", "exit"} {
					point, mode := point, mode
					name := fmt.Sprintf("%s/%s", point, mode)
					w := tmpl.clone(t, t.TempDir())
					var err error
					if mode == "error" {
						err = w.do(sc.target.dev, sc.target.op, func(p string) error {
							if p == point {
								return errors.New("injected failure at " + p)
							}
							return nil
						})
					} else {
						cmd := exec.Command(os.Args[0], "-test.run=^TestFailpointChild$")
						cmd.Env = append(os.Environ(), "PARLEY_FP_ROOT="+w.root, "PARLEY_FP_POINT="+point,
							"PARLEY_FP_DEV="+sc.target.dev, "PARLEY_FP_OP="+sc.target.op)
						out, runErr := cmd.CombinedOutput()
						var ee *exec.ExitError
						if !errors.As(runErr, &ee) || ee.ExitCode() != childExit {
							record(point, fmt.Sprintf("%s: child did not stop at the point: %v %s", name, runErr, out))
							continue
						}
					}
					_ = err
					now := sc.signatures(t, w)
					switch {
					case reflect.DeepEqual(now, pre):
						// Absent: the input is retried.
						if err := w.do(sc.target.dev, sc.target.op, nil); err != nil {
							record(point, fmt.Sprintf("%s: absent, but the retry failed: %v", name, err))
							continue
						}
					case reflect.DeepEqual(now, post):
						// Complete: replays are absorbed below.
					default:
						record(point, fmt.Sprintf("%s: state is neither before nor after the transition:\n before %+v\n after  %+v\n now    %+v", name, pre, post, now))
						continue
					}
					if err := sc.converge(t, w); err != nil {
						record(point, fmt.Sprintf("%s: %v", name, err))
						continue
					}
					record(point, "")
				}
			}
		})
	}
	t.Cleanup(func() { total.report(t, &mu) })
}

// matrixPoints returns the points of a target's clean run (in the order
// it passed them) that the matrix stops at, and how many it leaves out.
// With all set, that is every point. Without it (make test), a
// transaction's inner statement points are thinned to the first and the
// last one the target passed for each plan kind: a stop between two
// statements of one transaction leaves what a stop at any other of them
// does (nothing of it is durable, and the engine sees one error from the
// store whichever statement failed), and these points were four in five
// of the matrix's time. Every other point (before-begin, before-persist,
// after-persist and the engine's own between transactions) is always
// kept. make failpoints runs them all (PARLEY_FAILPOINTS=all).
func matrixPoints(seen []string, all bool) (kept []string, skipped int) {
	if all {
		return seen, 0
	}
	first, last := map[string]string{}, map[string]string{}
	for _, p := range seen {
		kind, rest, _ := strings.Cut(p, "/")
		if !strings.HasPrefix(rest, "stmt-") {
			continue
		}
		if _, ok := first[kind]; !ok {
			first[kind] = p
		}
		last[kind] = p
	}
	for _, p := range seen {
		kind, rest, _ := strings.Cut(p, "/")
		if strings.HasPrefix(rest, "stmt-") && p != first[kind] && p != last[kind] {
			skipped++
			continue
		}
		kept = append(kept, p)
	}
	return kept, skipped
}

// matrixResult collects the matrix's points, plan kinds and violations.
type matrixResult struct {
	points     map[string]bool
	kinds      map[string]bool
	violations []string
	// skipped counts the inner statement points left out (matrixPoints),
	// one per scenario that passed them.
	skipped int
}

func (r *matrixResult) report(t *testing.T, mu *sync.Mutex) {
	mu.Lock()
	defer mu.Unlock()
	points, kinds, violations := r.points, r.kinds, r.violations
	for _, v := range violations {
		t.Error(v)
	}
	summary := fmt.Sprintf("failpoint matrix: %d points, %d plan kinds, %d violations", len(points), len(kinds), len(violations))
	if r.skipped > 0 {
		summary += fmt.Sprintf(" (%d inner statement stops left out; PARLEY_FAILPOINTS=all, make failpoints, runs them)", r.skipped)
	}
	if testing.Verbose() {
		names := make([]string, 0, len(kinds))
		for k := range kinds {
			names = append(names, k)
		}
		sort.Strings(names)
		t.Logf("plan kinds: %s", strings.Join(names, " "))
	}
	t.Log(summary)
	fmt.Println(summary)
}

func realNow() time.Time { return time.Now() }
