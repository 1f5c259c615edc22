package engine_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/wire"
)

// The failpoint matrix's actions: an own action stored and applied (Hold),
// a received one applied on arrival (CommitEffect), by a person's commit
// (Finalize) and by the pass over the actions that waited (settle).

// actionOp runs the failpoint world's action operations: react:PEER:EMOJI
// reacts to the newest message with PEER, edit:PEER:TEXT edits the newest
// message sent to PEER, commitfirst commits the oldest pending message,
// settle runs the pass over waiting actions under CommitOnArrival.
func actionOp(ctx context.Context, c *engine.Client, name, arg string) (bool, error) {
	peerArg, text, _ := strings.Cut(arg, ":")
	switch name {
	case "react", "edit":
		peer := engine.MustParseAddress(peerArg)
		h, err := c.History(ctx, peer, 0, 100)
		if err != nil {
			return true, err
		}
		for _, e := range h {
			if name == "edit" && e.Direction != engine.DirectionOut {
				continue
			}
			r := engine.ActionRequest{Peer: peer, Content: wire.ContentReaction, Target: e.ID, Emoji: text}
			if name == "edit" {
				r = engine.ActionRequest{Peer: peer, Content: wire.ContentEdit, Target: e.ID, Text: []byte(text)}
			}
			_, err := c.Act(ctx, r)
			return true, err
		}
		return true, fmt.Errorf("%s: no message with %s", name, peer)
	case "commitfirst":
		msgs, err := c.PendingInbound(ctx, engine.PageQuery{Limit: 1})
		if err != nil || len(msgs) == 0 {
			return true, err
		}
		_, err = c.Commit(ctx, msgs[0].Sender, msgs[0].ID)
		return true, err
	case "settle":
		_, err := c.SettleActions(ctx)
		return true, err
	}
	return false, nil
}

func actionScenarios() []fpScenario {
	ab := []string{"alice/1", "bob/1"}
	hello := map[string]map[string][]string{"bob/1": {"alice/1": {"hello"}}}
	edited := map[string]map[string][]string{"bob/1": {"alice/1": {"hello again"}}}
	return []fpScenario{
		{name: "own action", devices: ab, setup: established(), target: fpStep{"alice/1", "react:bob/1:+1"}, want: hello},
		{name: "own edit", devices: ab, setup: established(), target: fpStep{"alice/1", "edit:bob/1:hello again"}, want: edited},
		{name: "action on arrival", devices: ab, setup: append(established(), fpStep{"alice/1", "edit:bob/1:hello again"}, fpStep{"alice/1", "pump"}, fpStep{"bob/1", "stage"}),
			target: fpStep{"bob/1", "processcommit"}, want: edited},
		{name: "action commit", devices: ab, setup: append(established(), fpStep{"alice/1", "react:bob/1:+1"}, fpStep{"alice/1", "pump"}, fpStep{"bob/1", "sync"}),
			target: fpStep{"bob/1", "commitall"}, want: hello},
		{name: "waiting action settled", devices: ab, setup: []fpStep{{"alice/1", "send:bob/1:hello"}, {"alice/1", "react:bob/1:+1"}, {"alice/1", "pump"},
			{"bob/1", "sync"}, {"bob/1", "commitfirst"}}, target: fpStep{"bob/1", "settle"}, want: hello},
	}
}
