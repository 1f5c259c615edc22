package engine_test

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/store"
)

// The message-request scenarios of the failpoint matrix: bob/1 is in
// request mode (a marker file beside his profile, read by fpWorld.do) and
// alice/1, a stranger to him, writes first. The request's stage, accept,
// reject, block and sweep are each crashed at every point.

// requestMode reports whether addr's profile is in request mode.
func (w fpWorld) requestMode(addr string) bool {
	_, err := os.Stat(w.profile(addr) + ".requests")
	return err == nil
}

// requestOp runs the request operations of fpWorld.do: "requests" (request
// mode on), "acceptall", "rejectall", "blockall", "sweepall" and
// "unblock:PEER". It reports
// false for any other op.
func requestOp(ctx context.Context, w fpWorld, addr string, c *engine.Client, name, arg string) (bool, error) {
	switch name {
	case "requests":
		return true, os.WriteFile(w.profile(addr)+".requests", nil, 0o600)
	case "acceptall", "rejectall", "blockall":
		reqs, err := c.Requests(ctx)
		if err != nil {
			return true, err
		}
		for _, r := range reqs {
			if name == "acceptall" {
				_, err = c.AcceptRequest(ctx, r.Peer)
			} else {
				err = c.RejectRequest(ctx, r.Peer, name == "blockall")
			}
			if err != nil {
				return true, err
			}
		}
		return true, nil
	case "unblock":
		return true, c.Unblock(ctx, engine.MustParseAddress(arg))
	case "sweepall":
		_, err := c.SweepRequestsBefore(ctx, time.Now().Add(time.Hour))
		return true, err
	}
	return false, nil
}

// requestSignature summarizes a device's requests and blocks.
func requestSignature(ctx context.Context, st *store.DB) ([]string, error) {
	reqs, err := st.Requests(ctx)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, r := range reqs {
		out = append(out, fmt.Sprintf("request %s %d %d %q", r.Peer, r.Count, r.Bytes, r.Preview))
	}
	// Whether the relay heard of a block is not compared: telling it is a
	// transition of its own, retried by maintenance, and converge checks
	// that every block was told in the end.
	blocks, err := st.Blocks(ctx)
	for _, a := range blocks {
		out = append(out, fmt.Sprintf("block %s", a))
	}
	return out, err
}

func requestScenarios() []fpScenario {
	ab := []string{"alice/1", "bob/1"}
	hello := map[string]map[string][]string{"bob/1": {"alice/1": {"hello"}}}
	asked := []fpStep{{"bob/1", "requests"}, {"alice/1", "send:bob/1:hello"}, {"bob/1", "sync"}}
	// After a reject, alice's message would stay pending for ever: she
	// gives up on it.
	giveUp := []fpStep{{"alice/1", "abandonall:bob/1"}}
	none := map[string]map[string][]string{}
	return []fpScenario{
		{name: "request stage", devices: ab, setup: []fpStep{{"bob/1", "requests"}, {"alice/1", "send:bob/1:hello"}, {"bob/1", "stage"}},
			target: fpStep{"bob/1", "process"}, heal: []fpStep{{"bob/1", "acceptall"}}, want: hello},
		{name: "request accept", devices: ab, setup: asked, target: fpStep{"bob/1", "acceptall"}, want: hello},
		{name: "request reject", devices: ab, setup: asked, target: fpStep{"bob/1", "rejectall"}, heal: giveUp, want: none, noRetry: true},
		{name: "request block", devices: ab, setup: asked, target: fpStep{"bob/1", "blockall"}, heal: giveUp, want: none, noRetry: true},
		{name: "unblock", devices: ab, setup: append(asked, fpStep{"bob/1", "blockall"}), target: fpStep{"bob/1", "unblock:alice/1"},
			heal: giveUp, want: none, noRetry: true},
		{name: "request sweep", devices: ab, setup: asked, target: fpStep{"bob/1", "sweepall"}, heal: giveUp, want: none, noRetry: true},
	}
}
