package cli

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/wire"
)

// Sending: send (a file: cmd_file.go; to a group: cmd_group.go), retry and
// abandon.

func cmdSend(ctx context.Context, env *cliEnv, cmd *command, args []string) error {
	f := newFlags(cmd, env, true)
	f.network = true
	file := f.String("file", "", "send the file at this path (instead of TEXT or -)")
	noWait := f.Bool("no-wait", false, "return once the message is stored, before any network (exit 0); the TUI's or the next run's loop, or \"parley retry\", hands it to the relay")
	wait := f.Duration("wait", 5*time.Second, "how long the relay may take to accept the message before it is left pending (exit 3)")
	replyTo := f.String("reply-to", "", "quote the message with this ID (a reply; not with --file)")
	ops, err := f.parse(env, args, 1, 2)
	if err != nil {
		return err
	}
	if (*file != "") == (len(ops) == 2) {
		return usagef("give exactly one body: TEXT, - or --file PATH")
	}
	if *replyTo != "" {
		if *file != "" || *noWait {
			return usagef("--reply-to takes a TEXT or -, and waits for the relay")
		}
		text, err := readBody(env, ops[1])
		if err != nil {
			return err
		}
		return runAction(ctx, env, f, []string{ops[0], *replyTo}, engine.ActionRequest{Content: wire.ContentReply, Text: text}, *wait)
	}
	if *file != "" {
		return sendFile(ctx, env, f, ops[0], *file)
	}
	var peer engine.Address
	if !isGroupOperand(ops[0]) {
		if peer, err = parsePeer(ops[0]); err != nil {
			return err
		}
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
	if isGroupOperand(ops[0]) {
		g, err := resolveGroup(ctx, p.Client, ops[0])
		if err == nil {
			return sendGroup(ctx, env, f, p, ops[0], g, body, *wait, *noWait)
		}
		// No group of that name: a person whose device list is held
		// (or the relay serves) is written to on every device.
		person, ok := resolvePerson(ctx, p.Client, ops[0], *wait)
		if !errors.Is(err, engine.ErrUnknownGroup) || !ok {
			return err
		}
		peer = person
	}
	if *noWait {
		return enqueue(ctx, env, f, p.Client, peer, body)
	}
	id, err := sendWithin(ctx, p.Client, peer, body, *wait)
	var notSent *engine.MessageNotSentError
	if err != nil && !errors.As(err, &notSent) {
		return describeSendError(env, peer, err)
	}
	if *f.json {
		printer{env.stdout, true}.record([]kv{{"id", hexID(id)}, {"recipient", peer.String()}, {"accepted", err == nil}})
	} else {
		fmt.Fprintln(env.stdout, hexID(id))
	}
	if err != nil {
		// The ID went to stdout: the line says why and what to do.
		return wordedf(err, "the message stays pending: %s; \"parley retry %s\" sends it again", pendingCause(env, err), peer)
	}
	return nil
}

// resolvePerson returns the conversation address of the person named s
// (a user, no device) when this device holds their device list or the
// relay serves one (fetched within wait), and false otherwise.
func resolvePerson(ctx context.Context, c *engine.Client, s string, wait time.Duration) (engine.Address, bool) {
	if _, err := engine.ParseAddress(s + "/1"); err != nil {
		return engine.Address{}, false
	}
	wctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	a, ok, err := c.RefreshPeerList(wctx, s)
	if err != nil || !ok {
		return engine.Address{}, false
	}
	return a.Conversation, true
}

// sendWithin is send's store-first path: what Send would refuse is refused
// with nothing stored (engine.Client.CheckPeer), the message is stored
// (Enqueue), and the pump hands it to the relay, the network bounded by
// wait. It returns the message's ID with nil when the relay accepted it, or
// with a *engine.MessageNotSentError when it stays pending.
func sendWithin(ctx context.Context, c *engine.Client, peer engine.Address, body []byte, wait time.Duration) (wire.LogicalID, error) {
	wctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	if err := c.CheckPeer(wctx, peer); err != nil {
		return wire.LogicalID{}, err
	}
	res, err := c.Enqueue(ctx, []engine.SendRequest{{Peer: peer, Body: body}})
	if err == nil {
		err = res[0].Err
	}
	if err != nil {
		return wire.LogicalID{}, err
	}
	id := res[0].ID
	pumped, err := c.Pump(wctx)
	// A message to a person goes on a lane per device: accepted when the
	// relay took every lane the pump tried.
	var laneErr error
	tried := false
	for _, r := range pumped {
		if r.ID == id {
			tried = true
			if laneErr == nil {
				laneErr = r.Err
			}
		}
	}
	if tried {
		return id, laneErr
	}
	if err == nil || errors.Is(err, context.DeadlineExceeded) {
		err = fmt.Errorf("the relay did not take it within --wait %v: %w", wait, engine.ErrRelayUnreachable)
	}
	return id, &engine.MessageNotSentError{ID: id, Err: err}
}

// enqueue stores one message as pending and prints its ID; nothing goes to
// the network (send --no-wait).
func enqueue(ctx context.Context, env *cliEnv, f *flags, c *engine.Client, peer engine.Address, body []byte) error {
	res, err := c.Enqueue(ctx, []engine.SendRequest{{Peer: peer, Body: body}})
	if err == nil {
		err = res[0].Err
	}
	if err != nil {
		return describeSendError(env, peer, err)
	}
	if *f.json {
		printer{env.stdout, true}.record([]kv{{"id", hexID(res[0].ID)}, {"recipient", peer.String()}, {"accepted", false}, {"stored", true}})
	} else {
		fmt.Fprintln(env.stdout, hexID(res[0].ID))
	}
	return nil
}

// describeSendError names the cause of a refused send, or of a retried
// message that stays pending (exit 3), by its ID: retry printed only the
// ones it handed off.
func describeSendError(env *cliEnv, peer engine.Address, err error) error {
	var notSent *engine.MessageNotSentError
	switch {
	case errors.Is(err, engine.ErrIdentityChanged):
		return fmt.Errorf("%s has a new identity; compare the safety number, then \"parley trust %s\"", peer, peer)
	case errors.As(err, &notSent):
		return wordedf(err, "message %s stays pending: %s", hexID(notSent.ID), pendingCause(env, err))
	}
	return err
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
		return describeSendError(env, peer, err)
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
