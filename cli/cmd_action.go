package cli

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/internal/layout"
	"github.com/parley-chat/parley/wire"
)

// Actions: react, edit, delete, and send --reply-to. Each is a message of
// its own (engine/action.go): it prints the action's own logical ID and
// follows send's exit codes (3: stored, still pending).

func cmdReact(ctx context.Context, env *cliEnv, cmd *command, args []string) error {
	f, wait := actionFlags(cmd, env)
	remove := f.Bool("remove", false, "take back the own reaction to the message (give no EMOJI)")
	ops, err := f.parse(env, args, 2, 3)
	if err != nil {
		return err
	}
	if *remove == (len(ops) == 3) {
		return usagef("give exactly one of EMOJI and --remove")
	}
	r := engine.ActionRequest{Content: wire.ContentReaction, Remove: *remove}
	if !*remove {
		r.Emoji = ops[2]
		if err := wire.CheckEmoji(r.Emoji); err != nil {
			return usagef("EMOJI must be one emoji: at most %d bytes and %d characters, no space and no control character", wire.MaxEmojiSize, wire.MaxEmojiRunes)
		}
	}
	return runAction(ctx, env, f, ops, r, *wait)
}

func cmdEdit(ctx context.Context, env *cliEnv, cmd *command, args []string) error {
	f, wait := actionFlags(cmd, env)
	ops, err := f.parse(env, args, 3, 3)
	if err != nil {
		return err
	}
	text, err := readBody(env, ops[2])
	if err != nil {
		return err
	}
	return runAction(ctx, env, f, ops, engine.ActionRequest{Content: wire.ContentEdit, Text: text}, *wait)
}

func cmdDelete(ctx context.Context, env *cliEnv, cmd *command, args []string) error {
	f, wait := actionFlags(cmd, env)
	ops, err := f.parse(env, args, 2, 2)
	if err != nil {
		return err
	}
	return runAction(ctx, env, f, ops, engine.ActionRequest{Content: wire.ContentDelete}, *wait)
}

func actionFlags(cmd *command, env *cliEnv) (*flags, *time.Duration) {
	f := newFlags(cmd, env, true)
	f.network = true
	wait := f.Duration("wait", 5*time.Second, "how long the relay may take to accept the action before it is left pending (exit 3)")
	return f, wait
}

// runAction resolves the target operand ops[1] in the conversation with
// ops[0], stores the action and hands it to the relay within wait.
func runAction(ctx context.Context, env *cliEnv, f *flags, ops []string, r engine.ActionRequest, wait time.Duration) error {
	if isGroupOperand(ops[0]) {
		return runGroupAction(ctx, env, f, ops, r, wait)
	}
	peer, err := parsePeer(ops[0])
	if err != nil {
		return err
	}
	idOp, err := parseIDOperand(ops[1])
	if err != nil {
		return err
	}
	p, err := f.open(ctx, env)
	if err != nil {
		return err
	}
	defer closeProfile(p)
	if r.Target, err = idOp.resolve(ctx, "messages with "+peer.String(), conversationIDs(p.Client, peer)); err != nil {
		return err
	}
	r.Peer = peer
	return printAction(env, f, peer, r, wait, p.Client)
}

// runGroupAction is runAction for a group: the target is a message of the
// group's history; the action is stored with a pending lane per member and
// its lanes handed off within wait, as "send GROUP" does (exit 3 names the
// lanes the relay did not take).
func runGroupAction(ctx context.Context, env *cliEnv, f *flags, ops []string, r engine.ActionRequest, wait time.Duration) error {
	idOp, err := parseIDOperand(ops[1])
	if err != nil {
		return err
	}
	p, err := f.open(ctx, env)
	if err != nil {
		return err
	}
	defer closeProfile(p)
	g, err := resolveGroup(ctx, p.Client, ops[0])
	if err != nil {
		return err
	}
	if r.Target, err = idOp.resolve(ctx, "messages of group "+ops[0], groupIDs(p.Client, g.ID)); err != nil {
		return err
	}
	r.Group = &g.ID
	res, err := p.Client.EnqueueGroupAction(ctx, r)
	if err != nil {
		return describeActionError(r, err)
	}
	res = pumpGroupLanes(ctx, p.Client, res, wait)
	if *f.json {
		printer{env.stdout, true}.record([]kv{{"id", hexID(res.ID)}, {"group", hex.EncodeToString(g.ID[:])}, {"action", engine.ActionName(r.Content)},
			{"target", hexID(r.Target)}, {"accepted", len(res.Unsent) == 0}})
	} else {
		fmt.Fprintln(env.stdout, hexID(res.ID))
	}
	return unsent(res, "the "+engine.ActionName(r.Content), ops[0])
}

// groupIDs are the IDs of a group's history.
func groupIDs(c *engine.Client, g wire.GroupID) idCandidates {
	return func(ctx context.Context, yield func(wire.LogicalID)) error {
		for after := int64(0); ; {
			page, err := c.GroupHistory(ctx, g, after, 1000)
			if err != nil || len(page) == 0 {
				return err
			}
			for _, e := range page {
				yield(e.ID)
			}
			after = page[len(page)-1].Seq
		}
	}
}

// printAction is send's store-first path for an action: checked, stored
// and applied here (Act), handed to the relay within wait; its ID printed.
func printAction(env *cliEnv, f *flags, peer engine.Address, r engine.ActionRequest, wait time.Duration, c *engine.Client) error {
	ctx := context.Background()
	wctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	if err := c.CheckPeer(wctx, peer); err != nil {
		return describeSendError(env, peer, err)
	}
	id, err := c.Act(ctx, r)
	if err != nil {
		return describeActionError(r, err)
	}
	pumped, err := c.Pump(wctx)
	sent := false
	for _, res := range pumped {
		if res.ID == id {
			err, sent = res.Err, true
		}
	}
	if !sent && (err == nil || errors.Is(err, context.DeadlineExceeded)) {
		err = &engine.MessageNotSentError{ID: id, Err: fmt.Errorf("the relay did not take it within --wait %v: %w", wait, engine.ErrRelayUnreachable)}
	}
	var notSent *engine.MessageNotSentError
	if err != nil && !errors.As(err, &notSent) {
		return describeSendError(env, peer, err)
	}
	if *f.json {
		printer{env.stdout, true}.record([]kv{{"id", hexID(id)}, {"recipient", peer.String()}, {"action", engine.ActionName(r.Content)},
			{"target", hexID(r.Target)}, {"accepted", err == nil}})
	} else {
		fmt.Fprintln(env.stdout, hexID(id))
	}
	if err != nil {
		return wordedf(err, "the %s stays pending: %s; \"parley retry %s\" sends it again", engine.ActionName(r.Content), pendingCause(env, err), peer)
	}
	return nil
}

// describeActionError says why an action was refused, nothing stored.
func describeActionError(r engine.ActionRequest, err error) error {
	var refused *engine.ActionRefusedError
	switch {
	case errors.Is(err, engine.ErrTargetNotFound) && r.Group != nil:
		return fmt.Errorf("target_not_found: no message %s in the group", hexID(r.Target))
	case errors.Is(err, engine.ErrTargetNotFound):
		return fmt.Errorf("target_not_found: no message %s with %s", hexID(r.Target), r.Peer)
	case errors.As(err, &refused):
		why := map[engine.DiscardReason]string{
			engine.DiscardNotAuthor:     "only the author of a message edits or deletes it",
			engine.DiscardWindowPassed:  fmt.Sprintf("a message is edited or deleted within %v of sending it", engine.ActionWindow),
			engine.DiscardTargetDeleted: "the message was deleted",
			engine.DiscardTargetMissing: "that is not a message",
		}[refused.Reason]
		return fmt.Errorf("%s: %s %s refused: %s", refused.Reason, engine.ActionName(r.Content), hexID(r.Target), why)
	}
	return err
}

// actionFields renders an action's body for sync and the inbox: what it
// is and which message it names; false when body is not a valid action.
func actionFields(content wire.ContentType, body []byte) ([]kv, bool) {
	if !wire.IsAction(content) {
		return nil, false
	}
	a, err := wire.DecodeAction(content, body)
	if err != nil {
		return nil, false
	}
	fields := []kv{{"action", engine.ActionName(content)}, {"target", hexID(a.Target)}}
	switch content {
	case wire.ContentReply:
		return append([]kv{{"reply_to", hexID(a.Target)}}, bodyFields(a.Text)...), true
	case wire.ContentReaction:
		fields = append(fields, kv{"emoji", a.Emoji}, kv{"remove", a.Remove})
	case wire.ContentEdit:
		fields = append(fields, bodyFields(a.Text)...)
	}
	return fields, true
}

// actionKind is the kind sync reports for an action: edited, reacted or
// deleted ("" for a reply and anything else, reported as a delivery).
func actionKind(c wire.ContentType) string {
	return map[wire.ContentType]string{wire.ContentReaction: "reacted", wire.ContentEdit: "edited", wire.ContentDelete: "deleted"}[c]
}

// reactionJSON is one reaction as history --json shows it.
type reactionJSON struct {
	From  string `json:"from"`
	Emoji string `json:"emoji"`
}

// reactionsJSON is a message's reactions; its text form is
// "alice/1:EMOJI,bob/1:EMOJI".
type reactionsJSON []reactionJSON

// String is the text form.
func (rs reactionsJSON) String() string {
	var parts []string
	for _, r := range rs {
		parts = append(parts, r.From+":"+layout.Clean([]byte(r.Emoji)))
	}
	return strings.Join(parts, ",")
}

// historyActionFields are an entry's reply, edit, tombstone and reactions.
func historyActionFields(e engine.HistoryEntry) []kv {
	var fields []kv
	if e.ReplyTo != nil {
		fields = append(fields, kv{"reply_to", hexID(*e.ReplyTo)})
	}
	rs := reactionsJSON{}
	for _, r := range e.Reactions {
		rs = append(rs, reactionJSON{From: r.From.String(), Emoji: r.Emoji})
	}
	return append(fields, kv{"edited", e.Edits > 0}, kv{"deleted", e.Deleted}, kv{"reactions", rs})
}
