package engine_test

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/wire"
)

// The failpoint matrix's actions: an own action stored and applied (Hold),
// a received one applied on arrival (CommitEffect), by a person's commit
// (Finalize) and by the pass over the actions that waited (settle).

// actionOp runs the failpoint world's action operations: react:PEER:EMOJI
// reacts to the newest message with PEER, edit:PEER:TEXT edits the newest
// message sent to PEER, groupreact:GROUP:EMOJI and groupedit:GROUP:TEXT
// do the same in a group (stored with their lanes pending), groupdelete:GROUP
// deletes the newest own message of the group, commitfirst commits the oldest pending message,
// discardlast and discardfirst discard the newest or the oldest pending message alone,
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
	case "groupreact", "groupedit", "groupdelete":
		gname, text, _ := strings.Cut(arg, ":")
		g, err := groupNamed(ctx, c, gname)
		if err != nil {
			return true, err
		}
		h, err := c.GroupHistory(ctx, g.ID, 0, 100)
		if err != nil {
			return true, err
		}
		for i := len(h) - 1; i >= 0; i-- {
			e := h[i]
			r := engine.ActionRequest{Group: &g.ID, Content: wire.ContentReaction, Target: e.ID, Emoji: text}
			if name == "groupedit" {
				if !e.Own {
					continue
				}
				r = engine.ActionRequest{Group: &g.ID, Content: wire.ContentEdit, Target: e.ID, Text: []byte(text)}
			}
			if name == "groupdelete" {
				if !e.Own {
					continue
				}
				r = engine.ActionRequest{Group: &g.ID, Content: wire.ContentDelete, Target: e.ID}
			}
			_, err := c.Act(ctx, r)
			return true, err
		}
		return true, fmt.Errorf("%s: no message in group %s", name, gname)
	case "commitfirst":
		msgs, err := c.PendingInbound(ctx, engine.PageQuery{Limit: 1})
		if err != nil || len(msgs) == 0 {
			return true, err
		}
		_, err = c.Commit(ctx, msgs[0].Sender, msgs[0].ID)
		return true, err
	case "discardlast", "discardfirst":
		// The person discards the latest (or the oldest) pending message
		// alone.
		msgs, err := c.PendingInbound(ctx, engine.PageQuery{Limit: 100})
		if err != nil || len(msgs) == 0 {
			return true, err
		}
		m := msgs[len(msgs)-1]
		if name == "discardfirst" {
			m = msgs[0]
		}
		_, err = c.Discard(ctx, m.Sender, m.ID, engine.DiscardRejected)
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

// groupActionScenarios are the action plans in a group of three: an own
// action (the group send's plan, with every lane), a received one applied
// on arrival, by a person's commit, and by the pass over waiting actions.
func groupActionScenarios() []fpScenario {
	if os.Getenv("PARLEY_FP_GROUPS") == "0" {
		return nil
	}
	abc := []string{"alice/1", "bob/1", "carol/1"}
	sent := []fpStep{{"alice/1", "groupcreate:g:bob/1,carol/1"}, {"bob/1", "sync"}, {"carol/1", "sync"}, {"alice/1", "sync"},
		{"alice/1", "groupsend:g:hi"}, {"bob/1", "sync"}, {"carol/1", "sync"}, {"bob/1", "commitall"}, {"carol/1", "commitall"}, {"alice/1", "sync"}}
	with := func(steps ...fpStep) []fpStep { return append(append([]fpStep(nil), sent...), steps...) }
	hi := map[string][]string{"alice/1": {"alice/1:hi"}, "bob/1": {"alice/1:hi"}, "carol/1": {"alice/1:hi"}}
	edited := map[string][]string{"alice/1": {"alice/1:hi all"}, "bob/1": {"alice/1:hi all"}, "carol/1": {"alice/1:hi all"}}
	return []fpScenario{
		{name: "own group action", devices: abc, setup: sent, target: fpStep{"bob/1", "groupreact:g:+1"}, wantGroup: hi},
		{name: "own group edit", devices: abc, setup: sent, target: fpStep{"alice/1", "groupedit:g:hi all"}, wantGroup: edited},
		{name: "group action on arrival", devices: abc, setup: with(fpStep{"alice/1", "groupedit:g:hi all"}, fpStep{"alice/1", "pump"}, fpStep{"bob/1", "stage"}),
			target: fpStep{"bob/1", "processcommit"}, wantGroup: edited},
		// A delete applied on arrival also forgets, in its transaction,
		// the kept decisions whose actions wait for the deleted message.
		{name: "group delete on arrival", devices: abc, setup: with(fpStep{"alice/1", "groupdelete:g"}, fpStep{"alice/1", "pump"}, fpStep{"bob/1", "stage"}),
			target: fpStep{"bob/1", "processcommit"}, wantGroup: map[string][]string{"alice/1": {"alice/1:"}, "bob/1": {"alice/1:"}, "carol/1": {"alice/1:"}}},
		{name: "group action commit", devices: abc, setup: with(fpStep{"carol/1", "groupreact:g:+1"}, fpStep{"carol/1", "pump"}, fpStep{"bob/1", "sync"}),
			target: fpStep{"bob/1", "commitall"}, wantGroup: hi},
		{name: "waiting group action settled", devices: abc,
			setup: []fpStep{{"alice/1", "groupcreate:g:bob/1,carol/1"}, {"bob/1", "sync"}, {"carol/1", "sync"}, {"alice/1", "sync"},
				{"alice/1", "groupsend:g:hi"}, {"alice/1", "groupedit:g:hi all"}, {"alice/1", "pump"}, {"bob/1", "sync"}, {"bob/1", "commitfirst"}},
			target: fpStep{"bob/1", "settle"}, wantGroup: edited},
	}
}
