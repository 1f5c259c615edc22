package cli

import (
	"context"
	"encoding/hex"
	"fmt"
	"strings"
	"time"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/internal/tracetext"
	"github.com/parley-chat/parley/profile"
)

// Reading, from a reader beside the profile's holder as well (flags.reader):
// the pending lists inbox and outbox, history and trace.

func pageFlags(f *flags, peerFlag string) (*string, *int64, *int) {
	peer := f.String(peerFlag, "", "only messages with this device")
	after := f.Int64("after", 0, "only messages after this sequence number")
	limit := f.Int("limit", 100, "at most this many messages")
	return peer, after, limit
}

func pageQuery(peer string, after int64, limit int) (engine.PageQuery, error) {
	q := engine.PageQuery{After: after, Limit: limit}
	if peer != "" {
		a, err := parsePeer(peer)
		if err != nil {
			return q, err
		}
		q.Peer = &a
	}
	if limit < 1 || limit > 1000 {
		return q, usagef("--limit must be 1 to 1000")
	}
	if after < 0 {
		return q, usagef("--after must be 0 or more")
	}
	return q, nil
}

func cmdInbox(ctx context.Context, env *cliEnv, cmd *command, args []string) error {
	return pageCommand(ctx, env, cmd, args, "sender", func(p *profile.Profile, q engine.PageQuery) ([][]kv, error) {
		msgs, err := p.Client.PendingInbound(ctx, q)
		recs := make([][]kv, len(msgs))
		for i, m := range msgs {
			recs[i] = append([]kv{{"sender", m.Sender.String()}, {"id", hexID(m.ID)}, {"seq", m.Seq}, {"received_at", stamp(m.ReceivedAt)}}, messageFields(m.Content, m.Body)...)
			if m.Group != nil {
				recs[i] = append(recs[i], kv{"group", hex.EncodeToString(m.Group[:])})
			}
		}
		return recs, err
	})
}

func cmdOutbox(ctx context.Context, env *cliEnv, cmd *command, args []string) error {
	return pageCommand(ctx, env, cmd, args, "recipient", func(p *profile.Profile, q engine.PageQuery) ([][]kv, error) {
		msgs, err := p.Client.PendingOutbound(ctx, q)
		recs := make([][]kv, len(msgs))
		for i, m := range msgs {
			recs[i] = append([]kv{{"recipient", m.Recipient.String()}, {"id", hexID(m.ID)}, {"seq", m.Seq}, {"created_at", stamp(m.CreatedAt)}}, messageFields(m.Content, m.Body)...)
			if m.Group != nil {
				recs[i] = append(recs[i], kv{"group", hex.EncodeToString(m.Group[:])})
			}
			// Only a message the relay saw taken says so: the records of
			// the others stay as they were.
			if as, aerr := p.Client.Attempts(ctx, m.Recipient, m.ID); aerr == nil && len(as) > 0 && !as[len(as)-1].TakenAt.IsZero() {
				recs[i] = append(recs[i], kv{"state", "on_device"}, kv{"taken_at", stamp(as[len(as)-1].TakenAt)})
			}
		}
		return recs, err
	})
}

// pageCommand runs a command that lists one page of pending messages
// (--PEERFLAG, --after, --limit) and prints one record per message.
func pageCommand(ctx context.Context, env *cliEnv, cmd *command, args []string, peerFlag string, list func(*profile.Profile, engine.PageQuery) ([][]kv, error)) error {
	f := newFlags(cmd, env, true)
	f.reader = true
	peer, after, limit := pageFlags(f, peerFlag)
	if _, err := f.parse(env, args, 0, 0); err != nil {
		return err
	}
	q, err := pageQuery(*peer, *after, *limit)
	if err != nil {
		return err
	}
	p, err := f.open(ctx, env)
	if err != nil {
		return err
	}
	defer closeProfile(p)
	recs, err := list(p, q)
	if err != nil {
		return err
	}
	out := printer{env.stdout, *f.json}
	for _, r := range recs {
		out.record(r)
	}
	return nil
}

func cmdHistory(ctx context.Context, env *cliEnv, cmd *command, args []string) error {
	f := newFlags(cmd, env, true)
	f.reader = true
	limit := f.Int("limit", 1000, "at most this many of the newest messages (1 to 1000)")
	if _, err := f.parse(env, args, 1, 1); err != nil {
		return err
	}
	if *limit < 1 || *limit > 1000 {
		return usagef("--limit must be 1 to 1000")
	}
	if p, ops, err := f.groupCommand(ctx, env, args, 1); p != nil || err != nil {
		if err != nil {
			return err
		}
		defer closeProfile(p)
		return groupHistory(ctx, env, f, p, ops[0], *limit)
	}
	peer, _, p, err := f.peerCommand(ctx, env, args, 1)
	if err != nil {
		return err
	}
	defer closeProfile(p)
	h, err := p.Client.History(ctx, peer, 0, *limit)
	if err != nil {
		return err
	}
	out := printer{env.stdout, *f.json}
	for i := len(h) - 1; i >= 0; i-- {
		e := h[i]
		rec := []kv{{"direction", e.Direction.String()}, {"id", hexID(e.ID)}, {"at", stamp(e.At)}}
		if e.Direction == engine.DirectionOut {
			rec = append(rec, kv{"state", e.State.String()})
		}
		rec = append(append(rec, bodyFields(e.Body)...), historyActionFields(e)...)
		if e.DecidedOn != nil {
			rec = append(rec, kv{"decided_on", e.DecidedOn.String()})
		}
		if e.Imported != nil {
			rec = append(rec, kv{"imported", importedFrom(*e.Imported)})
		}
		if e.Direction == engine.DirectionOut {
			lanes, err := p.Client.PersonLanes(ctx, e.Peer, e.ID)
			if err != nil {
				return err
			}
			if len(lanes) > 0 {
				rec = append(rec, kv{"lanes", laneFields(lanes)})
			}
		}
		out.record(rec)
	}
	return nil
}

// importedFrom names where an imported history entry came from: "link"
// (the account's history when this device was linked) or "restore" (a
// backup).
func importedFrom(i engine.Imported) string {
	if i.Link {
		return "link"
	}
	return "restore"
}

func cmdTrace(ctx context.Context, env *cliEnv, cmd *command, args []string) error {
	f := newFlags(cmd, env, true)
	f.reader = true
	if p, ops, err := f.groupCommand(ctx, env, args, 2); p != nil || err != nil {
		if err != nil {
			return err
		}
		defer closeProfile(p)
		return groupTrace(ctx, env, f, p, ops[0], ops[1])
	}
	peer, ops, p, err := f.peerCommand(ctx, env, args, 2)
	if err != nil {
		return err
	}
	defer closeProfile(p)
	idOp, err := parseIDOperand(ops[1])
	if err != nil {
		return err
	}
	id, err := idOp.resolve(ctx, "messages with "+peer.String(), conversationIDs(p.Client, peer))
	if err != nil {
		return err
	}
	// A message sent to PEER, else one received from it.
	l, err := p.Client.Trace(ctx, peer, id, engine.DirectionOut)
	if err != nil {
		return err
	}
	if l.State == "unknown" && len(l.Attempts) == 0 {
		if l, err = p.Client.Trace(ctx, peer, id, engine.DirectionIn); err != nil {
			return err
		}
		if l.State == "unknown" {
			return fmt.Errorf("no message %s to or from %s here (pruned, or never seen)", hexID(id), peer)
		}
	}
	fs, isFile, err := p.Client.FileTransfer(ctx, peer, id)
	if err != nil {
		return err
	}
	if !*f.json {
		fmt.Fprintln(env.stdout, tracetext.Draw(p.Client.Self(), l, nil))
		if isFile {
			fmt.Fprintln(env.stdout, fileTraceText(fs))
		}
		return nil
	}
	attempts := make([]map[string]any, len(l.Attempts))
	for i, a := range l.Attempts {
		attempts[i] = map[string]any{"n": a.N, "at": a.At.UTC().Format(time.RFC3339Nano), "envelope": hex.EncodeToString(a.Envelope[:]),
			"type": strings.ToLower(a.Type.String()), "initiation": hex.EncodeToString(a.Initiation[:])}
		if !a.TakenAt.IsZero() {
			attempts[i]["taken_at"] = a.TakenAt.UTC().Format(time.RFC3339Nano)
		}
	}
	dir := "out"
	if l.Direction == engine.DirectionIn {
		dir = "in"
	}
	rec := []kv{{"peer", peer.String()}, {"id", hexID(id)}, {"direction", dir}, {"state", l.State}}
	if !l.At.IsZero() {
		rec = append(rec, kv{"at", l.At.UTC().Format(time.RFC3339Nano)})
	}
	if !l.Done.IsZero() {
		rec = append(rec, kv{"finalized_at", l.Done.UTC().Format(time.RFC3339Nano)})
	}
	rec = append(rec, kv{"attempts", attempts})
	if isFile {
		rec = append(rec, kv{"file", fileTraceJSON(fs)})
	}
	printer{env.stdout, true}.record(rec)
	return nil
}

// laneFields lists the lanes of an own message to a person: per device,
// its state, and whether it is a sent copy to another device of this
// person.
func laneFields(lanes []engine.LaneStatus) []orderedJSON {
	out := make([]orderedJSON, len(lanes))
	for i, l := range lanes {
		out[i] = orderedJSON{{"device", l.Recipient.String()}, {"state", l.State.String()}, {"copy", l.Own}}
	}
	return out
}
