package cli

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/wire"
)

// Receiving: sync, and commit and discard, which finalize a received
// message.

func cmdSync(ctx context.Context, env *cliEnv, cmd *command, args []string) error {
	f := newFlags(cmd, env, true)
	f.network = true
	wait := f.Duration("wait", time.Second, "stop after the mailbox has been idle this long")
	if _, err := f.parse(env, args, 0, 0); err != nil {
		return err
	}
	if *wait < 0 {
		return usagef("--wait must not be negative")
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
	if errors.As(err, &se) && se.ReleaseOnly() {
		// Only the release of the relay's leases failed: what was printed
		// is stored here, so the run did its work (exit 0).
		fmt.Fprintf(env.stderr, "parley sync: warning: the relay did not hear that its leases were released (%s); everything printed is kept on this device, and what the relay delivers again is absorbed as duplicates by the next sync\n", textLine(explain(env, se.Err)))
		return nil
	}
	return err
}

// resultFields renders one receive result with the contract's field names.
func resultFields(r engine.ReceiveResult) []kv {
	fields := []kv{{"kind", r.Kind.String()}}
	// An action is reported as what it does, naming its target: applied
	// (on arrival or once its target came) or still pending.
	if k := actionKind(r.Content); k != "" && (r.Kind == engine.ResultDelivery || r.Kind == engine.ResultApplied) {
		fields = []kv{{"kind", k}, {"sender", r.Sender.String()}, {"id", hexID(r.ID)}, {"applied", r.Action != nil}}
		if r.Group != nil {
			fields = append(fields, kv{"group", hex.EncodeToString(r.Group[:])})
		}
		if r.Kind == engine.ResultDelivery {
			return append(fields, messageFields(r.Content, r.Body)...)
		}
		a := r.Action
		fields = append(fields, kv{"action", engine.ActionName(a.Content)}, kv{"target", hexID(a.Target)})
		switch a.Content {
		case wire.ContentReaction:
			fields = append(fields, kv{"emoji", a.Emoji}, kv{"remove", a.Remove})
		case wire.ContentEdit:
			fields = append(fields, bodyFields(a.Text)...)
		}
		return fields
	}
	if r.Kind == engine.ResultActionDiscarded {
		if r.Group != nil {
			fields = append(fields, kv{"group", hex.EncodeToString(r.Group[:])})
		}
		return append(fields, kv{"sender", r.Sender.String()}, kv{"id", hexID(r.ID)}, kv{"action", engine.ActionName(r.Content)}, kv{"reason", r.Reason.String()})
	}
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
		if r.DecidedElsewhere {
			fields = append(fields, kv{"decided_elsewhere", true})
		}
	case engine.ResultDecided, engine.ResultDecisionHeard:
		if d := r.Decided; d != nil {
			outcome := "committed"
			if d.Outcome == engine.OutcomeDiscarded {
				outcome = "discarded"
			}
			if r.Kind == engine.ResultDecisionHeard {
				fields = append(fields, kv{"message", hexID(d.ID)}, kv{"from", d.Sender.String()})
			}
			fields = append(fields, kv{"outcome", outcome}, kv{"on", d.On.String()})
			if r.TakenBack {
				fields = append(fields, kv{"taken_back", true})
			}
		}
		if r.Err != nil {
			// A decision heard and not kept, or taken as a commit
			// without its action: why, by name.
			fields = append(fields, kv{"error", engine.ErrorName(r.Err)})
		}
	case engine.ResultSentCopy:
		if r.CopyTo != nil {
			fields = append(fields, kv{"to", r.CopyTo.String()})
		}
		if k := actionKind(r.Content); k != "" {
			// A copy of an action (frame kind 17) says what it does and
			// whether it applied here or waits for its target.
			fields = append(fields, kv{"action", k}, kv{"applied", r.Action != nil})
			if a := r.Action; a != nil {
				fields = append(fields, kv{"target", hexID(a.Target)})
				switch a.Content {
				case wire.ContentReaction:
					fields = append(fields, kv{"emoji", a.Emoji}, kv{"remove", a.Remove})
				case wire.ContentEdit:
					fields = append(fields, bodyFields(a.Text)...)
				}
			}
			break
		}
		fields = append(fields, bodyFields(r.Body)...)
		if a := r.Action; a != nil && a.Content == wire.ContentReply {
			fields = append(fields, kv{"reply_to", hexID(a.Target)})
		}
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
			return requestHint(ctx, p, sender, err)
		}
		// A message finalized before with this outcome is acknowledged
		// again (exit 0, "already"); with the other one it is refused.
		res, err := p.Client.FinalizeBatch(ctx, []engine.FinalizeRequest{{Sender: sender, ID: id, Outcome: outcome, Reason: why}})
		if err == nil {
			err = res[0].Err
		}
		if err != nil {
			if errors.Is(err, engine.ErrNotPending) {
				return requestHint(ctx, p, sender, fmt.Errorf("no pending message %s from %s", hexID(id), sender))
			}
			if errors.Is(err, engine.ErrRequestPending) {
				return fmt.Errorf("message %s from %s is a message request: \"parley accept %s\" first", hexID(id), sender, sender)
			}
			if errors.Is(err, engine.ErrTargetPending) {
				return fmt.Errorf("target_pending: message %s from %s acts on a message not committed here yet; it waits and is applied once that one is", hexID(id), sender)
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
		if a := res[0].Action; a != nil {
			rec = append(rec, kv{"applied", actionKind(a.Content)}, kv{"target", hexID(a.Target)})
		}
		if why := res[0].Discarded; why != engine.DiscardNone {
			rec = append(rec, kv{"discarded", why.String()})
		}
		if res[0].Already {
			rec = append(rec, kv{"already", map[engine.Outcome]string{engine.OutcomeCommitted: "committed", engine.OutcomeDiscarded: "discarded"}[outcome]})
		}
		printer{env.stdout, *f.json}.record(rec)
		return nil
	}
}
