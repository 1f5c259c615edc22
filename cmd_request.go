package main

import (
	"context"
	"fmt"
	"os"

	"github.com/parley-chat/parley/profile"
)

// cmdRequestSettings shows or changes how the profile treats devices it has
// not accepted: held to the stranger limits, or like everyone else.
func cmdRequestSettings(ctx context.Context, env *cliEnv, cmd *command, args []string) error {
	f := newFlags(cmd, env, true)
	acceptAll := f.String("accept-all", "", "true: treat every device alike (the old behaviour, for bots); false: hold devices not accepted to the stranger limits")
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
