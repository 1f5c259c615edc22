package cli

import (
	"context"
)

// cmdQuarantine lists the envelopes that could not be processed (oldest
// first, with the reason each got), or with --clear deletes them.
func cmdQuarantine(ctx context.Context, env *cliEnv, cmd *command, args []string) error {
	f := newFlags(cmd, env, true)
	clear := f.Bool("clear", false, "delete every quarantined envelope")
	if _, err := f.parse(env, args, 0, 0); err != nil {
		return err
	}
	f.reader = !*clear
	p, err := f.open(ctx, env)
	if err != nil {
		return err
	}
	defer closeProfile(p)
	out := printer{env.stdout, *f.json}
	if *clear {
		n, err := p.Client.ClearQuarantine(ctx, 0)
		if err != nil {
			return err
		}
		out.record([]kv{{"cleared", n}})
		return nil
	}
	for after := int64(0); ; {
		page, err := p.Client.Quarantine(ctx, after, 500)
		if err != nil {
			return err
		}
		for _, q := range page {
			after = q.Row
			out.record([]kv{{"row", q.Row}, {"sender", q.Sender}, {"received_at", stamp(q.ReceivedAt)},
				{"quarantined_at", stamp(q.QuarantinedAt)}, {"reason", q.Reason}, {"bytes", q.Size}})
		}
		if len(page) < 500 {
			return nil
		}
	}
}
