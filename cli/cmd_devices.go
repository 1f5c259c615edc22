package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/wire"
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
		out.record([]kv{{"device", dev.String()}, {"state", deviceState(e.State)},
			{"linked_at", stamp(time.Unix(e.Linked, 0))}, {"this", dev == self}})
	}
	return nil
}

// deviceState names a device's state as a person reads it: a revoked
// device is one its account removed.
func deviceState(s wire.DeviceState) string {
	if s == wire.DeviceRevoked {
		return "removed"
	}
	return s.String()
}

// deviceRemove serves `parley device remove USER/N`: on the device holding
// the account key, after a confirmation unless yes, the list moves to the
// next generation with the device removed, at the relay and then here.
func deviceRemove(ctx context.Context, env *cliEnv, f *flags, arg string, yes bool) error {
	dev, err := engine.ParseAddress(arg)
	if err != nil {
		return usagef("parley device remove USER/N: %s is not a device address", textValue(arg))
	}
	p, err := f.open(ctx, env)
	if err != nil {
		return err
	}
	defer closeProfile(p)
	acc, err := p.Account(ctx)
	if err != nil {
		return err
	}
	self := p.Client.Self()
	switch {
	case acc.Key == nil:
		return fmt.Errorf("not removed: %w", engine.ErrNotAccountHolder)
	case dev == self:
		return fmt.Errorf("not removed: %w", engine.ErrRemoveSelf)
	case dev.User != self.User:
		return fmt.Errorf("not removed: %s is not a device of %s", dev, self.User)
	}
	if !yes {
		fmt.Fprintf(env.stderr, "remove %s from the devices of %s? it will no longer receive or send as %s [yes/no] ", dev, self.User, self.User)
		line, _ := bufio.NewReader(env.stdin).ReadString('\n')
		if strings.TrimSpace(strings.ToLower(line)) != "yes" {
			return errors.New("not removed: the removal was not confirmed (nothing was changed)")
		}
	}
	list, err := p.Client.RemoveDevice(ctx, dev)
	if err != nil && list.Generation != 0 {
		return fmt.Errorf("%s is removed at the relay: %w", dev, err)
	} else if err != nil {
		return fmt.Errorf("not removed: %w", err)
	}
	out := printer{env.stdout, *f.json}
	out.record([]kv{{"removed", dev.String()}, {"generation", list.Generation}})
	return nil
}
