package cli

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/profile"
)

// cmdRequestSettings shows or changes how the profile treats devices it has
// not accepted: held to the stranger limits, or like everyone else.
func cmdRequestSettings(ctx context.Context, env *cliEnv, cmd *command, args []string) error {
	f := newFlags(cmd, env, true)
	acceptAll := f.String("accept-all", "", "true: treat every device alike (the old behaviour, for bots); false: messages from devices not accepted wait as requests")
	if _, err := f.parse(env, args, 0, 0); err != nil {
		return err
	}
	dir := f.profileDir(env)
	if _, err := os.Stat(dir); err != nil {
		return fmt.Errorf("no profile at %s (run parley init)", dir)
	}
	switch *acceptAll {
	case "":
	case "true", "false":
		if err := profile.SetAcceptAll(dir, *acceptAll == "true"); err != nil {
			return fmt.Errorf("record --accept-all: %w", err)
		}
	default:
		return usagef("--accept-all takes true or false, not %q", *acceptAll)
	}
	printer{env.stdout, *f.json}.record([]kv{{"accept_all", profile.AcceptsAll(dir)}})
	return nil
}

// cmdRequests lists the open message requests: devices not accepted whose
// messages wait for the owner's answer, oldest first.
func cmdRequests(ctx context.Context, env *cliEnv, cmd *command, args []string) error {
	f := newFlags(cmd, env, true)
	f.reader = true
	if _, err := f.parse(env, args, 0, 0); err != nil {
		return err
	}
	p, err := f.open(ctx, env)
	if err != nil {
		return err
	}
	defer closeProfile(p)
	reqs, err := p.Client.Requests(ctx)
	if err != nil {
		return err
	}
	out := printer{env.stdout, *f.json}
	for _, r := range reqs {
		out.record([]kv{{"sender", r.Peer.String()}, {"first_seen", stamp(r.FirstSeen)}, {"last_seen", stamp(r.LastSeen)},
			{"count", r.Count}, {"bytes", r.Bytes}, {"preview", r.Preview}})
	}
	return nil
}

// cmdAccept accepts each PEER: its request's messages become pending
// deliveries (commit them, or let the policy), and its later messages are
// deliveries. A peer without a request is accepted before it writes.
func cmdAccept(ctx context.Context, env *cliEnv, cmd *command, args []string) error {
	f := newFlags(cmd, env, true)
	ops, err := f.parse(env, args, 1, maxAcceptPeers)
	if err != nil {
		return err
	}
	peers := make([]engine.Address, len(ops))
	for i, op := range ops {
		if peers[i], err = parsePeer(op); err != nil {
			return err
		}
	}
	p, err := f.open(ctx, env)
	if err != nil {
		return err
	}
	defer closeProfile(p)
	out := printer{env.stdout, *f.json}
	for _, peer := range peers {
		n, err := p.Client.AcceptRequest(ctx, peer)
		if err != nil {
			return err
		}
		out.record([]kv{{"peer", peer.String()}, {"accepted", true}, {"count", n}})
	}
	return nil
}

// maxAcceptPeers is the most peers one accept names: enough for a script
// that sets up a group of friends, few enough to read back.
const maxAcceptPeers = 64

// cmdReject deletes PEER's request (its messages and session); with
// --block, PEER's later envelopes are dropped, here and at the relay.
func cmdReject(ctx context.Context, env *cliEnv, cmd *command, args []string) error {
	f := newFlags(cmd, env, true)
	block := f.Bool("block", false, "also drop every later envelope from PEER, here and at the relay")
	f.network = true
	peer, _, p, err := f.peerCommand(ctx, env, args, 1)
	if err != nil {
		return err
	}
	defer closeProfile(p)
	if err := p.Client.RejectRequest(ctx, peer, *block); err != nil {
		if errors.Is(err, engine.ErrNotPending) {
			return fmt.Errorf("no request from %s (parley requests lists them)", peer)
		}
		return err
	}
	printer{env.stdout, *f.json}.record([]kv{{"peer", peer.String()}, {"rejected", true}, {"blocked", *block}})
	return nil
}

// cmdUnblock ends the block of PEER: its later envelopes are opened again
// (a first message is a request), here and at the relay.
func cmdUnblock(ctx context.Context, env *cliEnv, cmd *command, args []string) error {
	f := newFlags(cmd, env, true)
	f.network = true
	peer, _, p, err := f.peerCommand(ctx, env, args, 1)
	if err != nil {
		return err
	}
	defer closeProfile(p)
	if err := p.Client.Unblock(ctx, peer); err != nil {
		if errors.Is(err, engine.ErrNotPending) {
			return fmt.Errorf("%s is not blocked", peer)
		}
		return err
	}
	printer{env.stdout, *f.json}.record([]kv{{"peer", peer.String()}, {"blocked", false}})
	return nil
}

// requestHint adds to err, a message not found among those pending from
// sender, that sender's messages wait as a message request when they do:
// they are not pending until sender is accepted.
func requestHint(ctx context.Context, p *profile.Profile, sender engine.Address, err error) error {
	reqs, rerr := p.Client.Requests(ctx)
	if rerr != nil {
		return err
	}
	for _, r := range reqs {
		if r.Peer == sender {
			return fmt.Errorf("%v: %s is not accepted, and its %s as a message request (\"parley accept %s\" first)", err, sender, plural(r.Count, "message waits", "messages wait"), sender)
		}
	}
	return err
}

// plural is "1 message waits" or "3 messages wait".
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}
