package cli

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/profile"
	"github.com/parley-chat/parley/wire"
)

// isGroupOperand tells a group operand (an ID or a local name) from a device
// address: addresses hold '/', group names cannot.
func isGroupOperand(s string) bool { return !strings.Contains(s, "/") }

// peerHint is " (did you mean bob/1?)" for a group operand that is the user
// of a device this profile talks to: a device address without its device.
func peerHint(ctx context.Context, c *engine.Client, s string) string {
	convs, err := c.Conversations(ctx)
	if err != nil {
		return ""
	}
	for _, cv := range convs {
		if cv.Peer.User == s {
			return fmt.Sprintf(" (did you mean %s?)", cv.Peer)
		}
	}
	return ""
}

// resolveGroup finds a group by its 32-hex ID or its unique local name.
func resolveGroup(ctx context.Context, c *engine.Client, s string) (engine.GroupInfo, error) {
	if b, err := hex.DecodeString(s); err == nil && len(b) == len(wire.GroupID{}) {
		g, err := c.Group(ctx, wire.GroupID(b))
		if err == nil || !errors.Is(err, engine.ErrUnknownGroup) {
			return g, err
		}
	}
	all, err := c.Groups(ctx)
	if err != nil {
		return engine.GroupInfo{}, err
	}
	var found []engine.GroupInfo
	for _, g := range all {
		if g.Name == s {
			found = append(found, g)
		}
	}
	switch len(found) {
	case 0:
		return engine.GroupInfo{}, wordedf(engine.ErrUnknownGroup, "no group %s here%s", textValue(s), peerHint(ctx, c, s))
	case 1:
		return found[0], nil
	}
	return engine.GroupInfo{}, fmt.Errorf("%d groups are called %q: name one by its ID (parley group list)", len(found), s)
}

func groupFields(g engine.GroupInfo) []kv {
	var members, admins []string
	for _, m := range g.Roster.Members {
		members = append(members, m.Address)
		if m.Admin {
			admins = append(admins, m.Address)
		}
	}
	return []kv{{"id", hex.EncodeToString(g.ID[:])}, {"name", g.Name}, {"generation", g.Roster.Generation},
		{"members", orEmpty(members)}, {"admins", orEmpty(admins)}}
}

func orEmpty(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// groupUsage is the subcommands of "parley group".
const groupUsage = "create NAME MEMBER... | add GROUP MEMBER... | remove GROUP MEMBER... | admin GROUP MEMBER | leave GROUP | show GROUP | list"

// cmdGroup runs "parley group SUBCOMMAND ...".
func cmdGroup(ctx context.Context, env *cliEnv, cmd *command, args []string) error {
	f := newFlags(cmd, env, true)
	ops, err := f.parse(env, args, 0, 1+wire.MaxGroupMembers)
	if err != nil {
		return err
	}
	if len(ops) == 0 {
		return usagef("say what to do: create, add, remove, admin, leave, show or list")
	}
	sub, rest := ops[0], ops[1:]
	need := map[string][2]int{"create": {2, 1 + wire.MaxGroupMembers}, "add": {2, 1 + wire.MaxGroupMembers},
		"remove": {2, 1 + wire.MaxGroupMembers}, "admin": {2, 2}, "leave": {1, 1}, "show": {1, 1}, "list": {0, 0}}
	n, ok := need[sub]
	if !ok {
		return usagef("unknown subcommand %s: create, add, remove, admin, leave, show or list", textValue(sub))
	}
	if len(rest) < n[0] {
		return usagef("too few arguments for %s", sub)
	}
	if len(rest) > n[1] {
		return usagef("unexpected argument %s for %s", textValue(rest[n[1]]), sub)
	}
	var members []engine.Address
	if sub == "create" || sub == "add" || sub == "remove" || sub == "admin" {
		for _, s := range rest[1:] {
			a, err := parsePeer(s)
			if err != nil {
				return err
			}
			members = append(members, a)
		}
	}
	if sub == "create" {
		if err := wire.CheckGroupName(rest[0]); err != nil || !isGroupOperand(rest[0]) {
			return usagef("group name %q: 1 to %d bytes, no '/' and no control characters", rest[0], wire.MaxGroupNameSize)
		}
	}
	f.network = sub != "show" && sub != "list"
	f.reader = !f.network
	p, err := f.open(ctx, env)
	if err != nil {
		return err
	}
	defer closeProfile(p)
	out := printer{env.stdout, *f.json}
	switch sub {
	case "create":
		g, res, err := p.Client.CreateGroup(ctx, rest[0], members)
		if err != nil {
			return err
		}
		if *f.json {
			out.record(groupFields(g)[:4])
		} else {
			fmt.Fprintln(env.stdout, hex.EncodeToString(g.ID[:]))
		}
		return unsent(res, "the new roster", hex.EncodeToString(g.ID[:]))
	case "list":
		all, err := p.Client.Groups(ctx)
		if err != nil {
			return err
		}
		for _, g := range all {
			out.record(groupFields(g))
		}
		return nil
	}
	g, err := resolveGroup(ctx, p.Client, rest[0])
	if err != nil {
		return err
	}
	var change []wire.RosterChange
	switch sub {
	case "show":
		out.record(groupFields(g))
		return nil
	case "add", "remove", "admin":
		op := map[string]wire.RosterOp{"add": wire.RosterAdd, "remove": wire.RosterRemove, "admin": wire.RosterAdmin}[sub]
		for _, m := range members {
			change = append(change, wire.RosterChange{Op: op, Address: m.String()})
		}
	case "leave":
		change = []wire.RosterChange{{Op: wire.RosterRemove, Address: p.Client.Self().String()}}
	}
	res, err := p.Client.ChangeRoster(ctx, g.ID, change)
	if err != nil {
		return err
	}
	if g, err = p.Client.Group(ctx, g.ID); err != nil {
		return err
	}
	out.record(groupFields(g))
	return unsent(res, "the roster change", rest[0])
}

// unsent is the error (exit 3) for lanes of what (the message, the roster
// change) that stay pending, and how to send them again; its ID went to
// stdout already.
func unsent(res engine.GroupSendResult, what, group string) error {
	if len(res.Unsent) == 0 {
		return nil
	}
	names := make([]string, len(res.Unsent))
	for i, a := range res.Unsent {
		names[i] = a.String()
	}
	err := &engine.MessageNotSentError{ID: res.ID, Err: fmt.Errorf("lanes to %s stay pending", strings.Join(names, ", "))}
	return wordedf(err, "%s stays pending for %s (the relay did not take it); \"parley retry %s\" sends it again", what, strings.Join(names, ", "), group)
}

// sendGroup is "parley send GROUP TEXT": the message is stored with every
// lane pending (store-first), then the pump hands the lanes off, bounded by
// wait (exit 3 names the lanes the relay did not take by then); with
// noWait it returns once stored.
func sendGroup(ctx context.Context, env *cliEnv, f *flags, p *profile.Profile, group string, g engine.GroupInfo, body []byte, wait time.Duration, noWait bool) error {
	var (
		res engine.GroupSendResult
		err error
	)
	if noWait {
		res, err = p.Client.EnqueueGroup(ctx, g.ID, body)
	} else {
		res, err = sendGroupWithin(ctx, p.Client, g.ID, body, wait)
	}
	if err != nil {
		return err
	}
	rec := []kv{{"id", hexID(res.ID)}, {"group", hex.EncodeToString(g.ID[:])}, {"accepted", !noWait && len(res.Unsent) == 0}}
	if noWait {
		rec = append(rec, kv{"stored", true})
	}
	if *f.json {
		printer{env.stdout, true}.record(rec)
	} else {
		fmt.Fprintln(env.stdout, hexID(res.ID))
	}
	if noWait {
		return nil
	}
	return unsent(res, "the message", group)
}

// sendGroupWithin stores the message (EnqueueGroup, with no deadline but
// ctx's) and runs the pump for its lanes bounded by wait: the lanes the
// relay did not take by then are in Unsent.
func sendGroupWithin(ctx context.Context, c *engine.Client, id wire.GroupID, body []byte, wait time.Duration) (engine.GroupSendResult, error) {
	res, err := c.EnqueueGroup(ctx, id, body)
	if err != nil {
		return res, err
	}
	return pumpGroupLanes(ctx, c, res, wait), nil
}

// pumpGroupLanes runs the pump for a stored group message's lanes bounded
// by wait: the lanes the relay did not take by then stay in Unsent.
func pumpGroupLanes(ctx context.Context, c *engine.Client, res engine.GroupSendResult, wait time.Duration) engine.GroupSendResult {
	wctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	pumped, _ := c.Pump(wctx)
	taken := make(map[engine.Address]bool)
	for _, r := range pumped {
		if r.ID == res.ID && r.Err == nil {
			taken[r.Peer] = true
		}
	}
	lanes := res.Unsent
	res.Unsent = nil
	for _, a := range lanes {
		if !taken[a] {
			res.Unsent = append(res.Unsent, a)
		}
	}
	return res
}

// retryGroup is "parley retry GROUP": each member with a pending lane of the
// group is retried, in that member's order with everything else pending to
// it (FIFO per member).
func retryGroup(ctx context.Context, env *cliEnv, f *flags, p *profile.Profile, group string) error {
	g, err := resolveGroup(ctx, p.Client, group)
	if err != nil {
		return err
	}
	msgs, err := p.Client.PendingOutbound(ctx, engine.PageQuery{Limit: 1000})
	if err != nil {
		return err
	}
	seen := make(map[engine.Address]bool)
	var firstErr error
	for _, m := range msgs {
		if m.Group == nil || *m.Group != g.ID || seen[m.Recipient] {
			continue
		}
		seen[m.Recipient] = true
		ids, err := p.Client.Retry(ctx, m.Recipient)
		for _, id := range ids {
			printer{env.stdout, *f.json}.record([]kv{{"id", hexID(id)}, {"recipient", m.Recipient.String()}})
		}
		if err != nil && firstErr == nil {
			firstErr = describeSendError(env, m.Recipient, err)
		}
	}
	return firstErr
}

// groupHistory is "parley history GROUP": each message once with its
// sender; own messages with their lanes.
func groupHistory(ctx context.Context, env *cliEnv, f *flags, p *profile.Profile, group string, limit int) error {
	g, err := resolveGroup(ctx, p.Client, group)
	if err != nil {
		return err
	}
	h, err := p.Client.GroupHistory(ctx, g.ID, 0, limit)
	if err != nil {
		return err
	}
	out := printer{env.stdout, *f.json}
	for _, e := range h {
		rec := []kv{{"group", hex.EncodeToString(g.ID[:])}, {"sender", e.Sender.String()}, {"id", hexID(e.ID)}, {"at", stamp(e.At)}}
		rec = append(rec, bodyFields(e.Body)...)
		rec = append(rec, historyActionFields(engine.HistoryEntry{ReplyTo: e.ReplyTo, Edits: e.Edits, Deleted: e.Deleted, Reactions: e.Reactions})...)
		if e.DecidedOn != nil {
			rec = append(rec, kv{"decided_on", e.DecidedOn.String()})
		}
		if e.Own {
			lanes := make(map[string]string, len(e.Lanes))
			for _, l := range e.Lanes {
				lanes[l.Recipient.String()] = l.State.String()
			}
			rec = append(rec, kv{"lanes", lanes})
		}
		out.record(rec)
	}
	return nil
}

// groupTrace is "parley trace GROUP ID": every lane's envelopes.
func groupTrace(ctx context.Context, env *cliEnv, f *flags, p *profile.Profile, group, idText string) error {
	g, err := resolveGroup(ctx, p.Client, group)
	if err != nil {
		return err
	}
	id, err := parseID(idText)
	if err != nil {
		return err
	}
	h, err := p.Client.GroupHistory(ctx, g.ID, 0, 1000)
	if err != nil {
		return err
	}
	out := printer{env.stdout, *f.json}
	for _, e := range h {
		if e.ID != id || !e.Own {
			continue
		}
		for _, l := range e.Lanes {
			trace, err := p.Client.Trace(ctx, l.Recipient, id, engine.DirectionOut)
			if err != nil {
				return err
			}
			attempts := make([]map[string]any, len(trace.Attempts))
			for i, a := range trace.Attempts {
				attempts[i] = map[string]any{"n": a.N, "at": a.At.UTC().Format(time.RFC3339Nano), "envelope": hex.EncodeToString(a.Envelope[:]),
					"type": strings.ToLower(a.Type.String()), "initiation": hex.EncodeToString(a.Initiation[:])}
			}
			out.record([]kv{{"group", hex.EncodeToString(g.ID[:])}, {"id", hexID(id)}, {"recipient", l.Recipient.String()},
				{"lane", l.State.String()}, {"attempts", attempts}})
		}
		return nil
	}
	return fmt.Errorf("no message %s sent to group %s here", hexID(id), g.Name)
}

// groupCommand parses a command of n operands whose first is a group (no
// '/') and opens the profile; it returns no profile and no error when the
// first operand is a device address, for the caller's one-to-one path.
func (f *flags) groupCommand(ctx context.Context, env *cliEnv, args []string, n int) (*profile.Profile, []string, error) {
	ops, err := f.parse(env, args, n, n)
	if err != nil {
		return nil, nil, err
	}
	if !isGroupOperand(ops[0]) {
		return nil, nil, nil
	}
	p, err := f.open(ctx, env)
	if err != nil {
		return nil, nil, err
	}
	return p, ops, nil
}
