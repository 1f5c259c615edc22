package main

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/profile"
	"github.com/parley-chat/parley/tui"
)

func cmdSend(ctx context.Context, env *cliEnv, cmd *command, args []string) error {
	f := newFlags(cmd, env, true)
	f.network = true
	file := f.String("file", "", "send the file at this path (instead of TEXT or -)")
	ops, err := f.parse(env, args, 1, 2)
	if err != nil {
		return err
	}
	if (*file != "") == (len(ops) == 2) {
		return usagef("give exactly one body: TEXT, - or --file PATH")
	}
	if *file != "" {
		return sendFile(ctx, env, f, ops[0], *file)
	}
	if isGroupOperand(ops[0]) {
		body, err := readBody(env, ops[1])
		if err != nil {
			return err
		}
		return sendGroup(ctx, env, f, ops[0], body)
	}
	peer, err := parsePeer(ops[0])
	if err != nil {
		return err
	}
	body, err := readBody(env, ops[1])
	if err != nil {
		return err
	}
	p, err := f.open(ctx, env)
	if err != nil {
		return err
	}
	defer closeProfile(p)
	id, err := p.Client.Send(ctx, peer, body)
	var notSent *engine.MessageNotSentError
	if err != nil && !errors.As(err, &notSent) {
		return describeSendError(peer, err)
	}
	if *f.json {
		printer{env.stdout, true}.record([]kv{{"id", hexID(id)}, {"recipient", peer.String()}, {"accepted", err == nil}})
	} else {
		fmt.Fprintln(env.stdout, hexID(id))
	}
	if err != nil {
		return fmt.Errorf("message %s to %s stays pending: %w", hexID(id), peer, err)
	}
	return nil
}

// describeSendError names the cause of a refused send.
func describeSendError(peer engine.Address, err error) error {
	switch {
	case errors.Is(err, engine.ErrIdentityChanged):
		return fmt.Errorf("%s has a new identity; compare the safety number, then \"parley trust %s\"", peer, peer)
	}
	return err
}

func cmdSync(ctx context.Context, env *cliEnv, cmd *command, args []string) error {
	f := newFlags(cmd, env, true)
	f.network = true
	wait := f.Duration("wait", time.Second, "stop after the mailbox has been idle this long")
	if _, err := f.parse(env, args, 0, 0); err != nil {
		return err
	}
	p, err := f.open(ctx, env)
	if err != nil {
		return err
	}
	defer closeProfile(p)
	out := printer{env.stdout, *f.json}
	// Rows a previous run staged come first, then everything the relay
	// holds, round after round, until it has been idle for --wait.
	err = p.Client.SyncUntilIdle(ctx, *wait, func(r engine.SyncResult) {
		for _, res := range r.Received {
			out.record(resultFields(res))
		}
	})
	var se *engine.SyncError
	if errors.As(err, &se) && se.AckOnly() {
		// Only the relay's lease acknowledgement failed: what was printed
		// is stored here, so the run did its work (exit 0).
		fmt.Fprintf(env.stderr, "parley sync: warning: the relay did not get the acknowledgement (%s); everything printed is kept on this device, and what the relay delivers again is absorbed as duplicates by the next sync\n", oneLine(se.Err))
		return nil
	}
	return err
}

// resultFields renders one receive result with the contract's field names.
func resultFields(r engine.ReceiveResult) []kv {
	fields := []kv{{"kind", r.Kind.String()}}
	if r.Kind == engine.ResultGroupChanged {
		return append(fields, kv{"group", hex.EncodeToString(r.Group[:])}, kv{"generation", r.Generation}, kv{"sender", r.Sender.String()})
	}
	if r.Group != nil {
		fields = append(fields, kv{"group", hex.EncodeToString(r.Group[:])})
	}
	if !r.Sender.IsZero() {
		fields = append(fields, kv{"sender", r.Sender.String()})
	}
	if r.ID != ([16]byte{}) || r.Kind != engine.ResultError && r.Kind != engine.ResultSessionReset {
		fields = append(fields, kv{"id", hexID(r.ID)})
	}
	switch r.Kind {
	case engine.ResultDelivery:
		fields = append(fields, messageFields(r.Content, r.Body)...)
	case engine.ResultAcknowledgement:
		fields = append(fields, kv{"cleared", r.Cleared})
	case engine.ResultAlreadyCommitted, engine.ResultAlreadyDiscarded:
		fields = append(fields, kv{"ack_sent", r.AckSent})
	case engine.ResultError:
		fields = append(fields, kv{"error", engine.ErrorName(r.Err)}, kv{"detail", oneLine(r.Err)})
		if r.RecoveryRequested {
			fields = append(fields, kv{"recovery_requested", true})
		}
	}
	return fields
}

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

func cmdFinalize(outcome engine.Outcome) func(context.Context, *cliEnv, *command, []string) error {
	return func(ctx context.Context, env *cliEnv, cmd *command, args []string) error {
		f := newFlags(cmd, env, true)
		f.network = true
		var reason *string
		if outcome == engine.OutcomeDiscarded {
			reason = f.String("reason", "rejected", "local reason: rejected, unsupported, policy or other")
		}
		ops, err := f.parse(env, args, 2, 2)
		if err != nil {
			return err
		}
		sender, err := parsePeer(ops[0])
		if err != nil {
			return err
		}
		idOp, err := parseIDOperand(ops[1])
		if err != nil {
			return err
		}
		why := engine.DiscardNone
		if reason != nil {
			m := map[string]engine.DiscardReason{"rejected": engine.DiscardRejected, "unsupported": engine.DiscardUnsupported, "policy": engine.DiscardPolicy, "other": engine.DiscardOther}
			var ok bool
			if why, ok = m[*reason]; !ok {
				return usagef("--reason must be rejected, unsupported, policy or other")
			}
		}
		p, err := f.open(ctx, env)
		if err != nil {
			return err
		}
		defer closeProfile(p)
		id, err := idOp.resolve(ctx, "pending messages from "+sender.String(), pendingInboundIDs(p.Client, sender))
		if err != nil {
			return err
		}
		// A message finalized before with this outcome is acknowledged
		// again (exit 0, "already"); with the other one it is refused.
		res, err := p.Client.FinalizeBatch(ctx, []engine.FinalizeRequest{{Sender: sender, ID: id, Outcome: outcome, Reason: why}})
		if err == nil {
			err = res[0].Err
		}
		if err != nil {
			if errors.Is(err, engine.ErrNotPending) {
				return fmt.Errorf("no pending message %s from %s", hexID(id), sender)
			}
			if errors.Is(err, engine.ErrFileNotFetched) {
				return fmt.Errorf("file_not_fetched: message %s is a file; \"parley fetch %s %s\" downloads, saves and commits it", hexID(id), sender, hexID(id))
			}
			if errors.Is(err, engine.ErrAlreadyCommitted) || errors.Is(err, engine.ErrAlreadyDiscarded) {
				return fmt.Errorf("%s: message %s from %s was finalized the other way; nothing changed", engine.ErrorName(err), hexID(id), sender)
			}
			return err
		}
		rec := []kv{{"ack_sent", res[0].AckSent}}
		if res[0].Already {
			rec = append(rec, kv{"already", map[engine.Outcome]string{engine.OutcomeCommitted: "committed", engine.OutcomeDiscarded: "discarded"}[outcome]})
		}
		printer{env.stdout, *f.json}.record(rec)
		return nil
	}
}

func cmdRetry(ctx context.Context, env *cliEnv, cmd *command, args []string) error {
	f := newFlags(cmd, env, true)
	f.network = true
	if p, ops, err := f.groupCommand(ctx, env, args, 1); p != nil || err != nil {
		if err != nil {
			return err
		}
		defer closeProfile(p)
		return retryGroup(ctx, env, f, p, ops[0])
	}
	peer, _, p, err := f.peerCommand(ctx, env, args, 1)
	if err != nil {
		return err
	}
	defer closeProfile(p)
	ids, err := p.Client.Retry(ctx, peer)
	for _, id := range ids {
		if *f.json {
			printer{env.stdout, true}.record([]kv{{"id", hexID(id)}, {"recipient", peer.String()}})
		} else {
			fmt.Fprintln(env.stdout, hexID(id))
		}
	}
	if err != nil {
		return describeSendError(peer, err)
	}
	return nil
}

func cmdAbandon(ctx context.Context, env *cliEnv, cmd *command, args []string) error {
	f := newFlags(cmd, env, true)
	peer, ops, p, err := f.peerCommand(ctx, env, args, 2)
	if err != nil {
		return err
	}
	defer closeProfile(p)
	idOp, err := parseIDOperand(ops[1])
	if err != nil {
		return err
	}
	id, err := idOp.resolve(ctx, "pending messages to "+peer.String(), pendingOutboundIDs(p.Client, peer))
	if err != nil {
		return err
	}
	if err := p.Client.Abandon(ctx, peer, id); err != nil {
		if errors.Is(err, engine.ErrNotPending) {
			return fmt.Errorf("no pending message %s to %s", hexID(id), peer)
		}
		return err
	}
	printer{env.stdout, *f.json}.record([]kv{{"abandoned", hexID(id)}})
	return nil
}

func cmdHistory(ctx context.Context, env *cliEnv, cmd *command, args []string) error {
	f := newFlags(cmd, env, true)
	f.reader = true
	limit := f.Int("limit", 1000, "at most this many of the newest messages")
	if p, ops, err := f.groupCommand(ctx, env, args, 1); p != nil || err != nil {
		if err != nil {
			return err
		}
		defer closeProfile(p)
		return groupHistory(ctx, env, f, p, ops[0])
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
		out.record(append(rec, bodyFields(e.Body)...))
	}
	return nil
}

// peerCommand parses a command whose first of n operands is a device address
// and opens the profile; the caller closes it.
func (f *flags) peerCommand(ctx context.Context, env *cliEnv, args []string, n int) (engine.Address, []string, *profile.Profile, error) {
	ops, err := f.parse(env, args, n, n)
	if err != nil {
		return engine.Address{}, nil, nil, err
	}
	peer, err := parsePeer(ops[0])
	if err != nil {
		return engine.Address{}, nil, nil, err
	}
	p, err := f.open(ctx, env)
	if err != nil {
		return engine.Address{}, nil, nil, err
	}
	return peer, ops, p, nil
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
		return usagef("%s", err)
	}
	id, err := idOp.resolve(ctx, "messages with "+peer.String(), conversationIDs(p.Client, peer))
	if err != nil {
		return err
	}
	// A message sent to PEER, else one received from it.
	l, err := p.Client.Life(ctx, peer, id, engine.DirectionOut)
	if err != nil {
		return err
	}
	if l.State == "unknown" && len(l.Attempts) == 0 {
		if l, err = p.Client.Life(ctx, peer, id, engine.DirectionIn); err != nil {
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
		fmt.Fprintln(env.stdout, tui.TraceText(p.Client.Self(), l, nil))
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
