package cli

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/parley-chat/parley/engine"
)

// cmdDevices prints the devices of the profile's account, one per line, from
// the device list this device holds (issue 33: only device 1 exists until
// linking is built).
func cmdDevices(ctx context.Context, env *cliEnv, cmd *command, args []string) error {
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
	acc, err := p.Account(ctx)
	if errors.Is(err, engine.ErrNoAccount) {
		return fmt.Errorf("this profile has no account yet: open it once without --read-only (any command that writes) to make one")
	} else if err != nil {
		return err
	}
	self := p.Client.Self()
	out := printer{env.stdout, *f.json}
	for _, e := range acc.List.Entries {
		dev := engine.Address{User: acc.List.User, Device: e.Number}
		out.record([]kv{{"device", dev.String()}, {"state", e.State.String()},
			{"linked_at", stamp(time.Unix(e.Linked, 0))}, {"this", dev == self}})
	}
	return nil
}
