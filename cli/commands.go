package cli

import (
	"context"

	"github.com/parley-chat/parley/engine"
)

// command is one subcommand: its name, its operands as help shows them, a
// one-line summary and the function that runs it. run receives its own
// entry so that it builds its flags without looking itself up by name.
type command struct {
	name    string
	args    string
	summary string
	run     func(ctx context.Context, env *cliEnv, cmd *command, args []string) error
	// noJSON is set for a command that prints no records (the interfaces,
	// the relay): it offers no --json.
	noJSON bool
}

// commandTable is every subcommand, grouped by the file that runs it. It is
// the one place a command is added; "parley help" lists it by name.
var commandTable = []*command{
	// cmd_profile.go
	{name: "init", args: "--address ADDR --relay URL [--relay-ca FILE] [--accept-all]", summary: "make a profile and publish its prekey bundle; prints the identity fingerprint", run: cmdInit},
	{name: "identity", args: "", summary: "print the own address and identity fingerprint", run: cmdIdentity},
	{name: "link", args: "--relay URL [--yes]", summary: "make this profile a new device of an account: prints code=, then check=, then address= once linked", run: cmdLink},
	{name: "device", args: "add CODE | remove USER/N [--yes]", summary: "link the new device that printed CODE to this account, or remove one of its devices (on the device holding the account key)", run: cmdDevice},
	{name: "backup", args: "--to FILE [--backup-passphrase-file FILE]", summary: "write a sealed archive of the account key and the history (on the device holding the account key)", run: cmdBackup},
	{name: "restore", args: "FILE --relay URL [--backup-passphrase-file FILE]", summary: "make a new device of the account from a backup in --profile DIR, with its history (run again to resume)", run: cmdRestore},
	{name: "devices", args: "", summary: "list the devices of this person's account, from the device list held here", run: cmdDevices},
	{name: "safety-number", args: "PEER", summary: "print the safety number with PEER (from the two accounts once each side holds the other's list, else from the devices' identities) and its basis", run: cmdSafetyNumber},
	{name: "trust", args: "PEER", summary: "show PEER's identity at the relay; pin it with --fingerprint or --yes (then retry to resend)", run: cmdTrust},
	{name: "contact", args: "[NAME PEER | --remove PEER]", summary: "name a device (shown next to its address), forget a name, or list the names", run: cmdContact},
	{name: "prune", args: "--older-than DUR", summary: "delete finalized records older than DUR", run: cmdPrune},
	{name: "relay-settings", args: "[--url URL] [--ca FILE | --system-roots] [--accept-new-id]",
		summary: "show or change how this profile reaches its relay: URL, private CA, pinned relay ID", run: cmdRelaySettings},

	// cmd_request.go
	{name: "request-settings", args: "[--accept-all true|false]",
		summary: "show or change whether messages from devices not accepted wait as requests", run: cmdRequestSettings},
	{name: "requests", args: "", summary: "list message requests: devices not accepted whose messages wait for an answer", run: cmdRequests},
	{name: "accept", args: "PEER...", summary: "accept PEER: its request's messages become pending deliveries (before it writes, too)", run: cmdAccept},
	{name: "reject", args: "PEER [--block]", summary: "delete PEER's request, unseen by PEER; --block also drops its later envelopes", run: cmdReject},
	{name: "unblock", args: "PEER", summary: "end the block of PEER: its later messages arrive again, as a request", run: cmdUnblock},

	// cmd_quarantine.go
	{name: "quarantine", args: "[--clear]", summary: "list the envelopes that could not be processed, with why; --clear deletes them", run: cmdQuarantine},

	// cmd_send.go: send, retry, abandon; cmd_receive.go: sync, commit,
	// discard; cmd_read.go: inbox, outbox, trace, history; cmd_file.go: fetch
	{name: "send", args: "(PEER|GROUP) (TEXT | - | --file PATH) [--reply-to ID]", summary: "send a message or a file; prints its logical ID (exit 3: kept pending)", run: cmdSend},
	// cmd_action.go (and send --reply-to)
	{name: "react", args: "PEER ID (EMOJI | --remove)", summary: "react to a message (one reaction per person; --remove takes it back); prints the action's ID", run: cmdReact},
	{name: "edit", args: "PEER ID (TEXT | -)", summary: "replace the text of an own message (within 24 h); prints the action's ID", run: cmdEdit},
	{name: "delete", args: "PEER ID", summary: "delete an own message for everyone (within 24 h); prints the action's ID", run: cmdDelete},
	{name: "fetch", args: "SENDER ID [--to DIR]", summary: "download, verify and save a received file, then commit it (exit 1 names the cause); again, say where it is", run: cmdFetch},
	{name: "sync", args: "[--wait DUR]", summary: "stage, acknowledge and process the mailbox until idle; one line per result", run: cmdSync},
	{name: "inbox", args: "[--sender PEER] [--after SEQ] [--limit N]", summary: "list pending received messages", run: cmdInbox},
	{name: "outbox", args: "[--recipient PEER] [--after SEQ] [--limit N]", summary: "list pending sent messages", run: cmdOutbox},
	{name: "commit", args: "SENDER ID", summary: "commit a pending received message and acknowledge it", run: cmdFinalize(engine.OutcomeCommitted)},
	{name: "discard", args: "SENDER ID", summary: "discard a pending received message and acknowledge it", run: cmdFinalize(engine.OutcomeDiscarded)},
	{name: "retry", args: "PEER", summary: "send the messages pending for PEER again, in order (exit 3: one stays pending)", run: cmdRetry},
	{name: "abandon", args: "PEER ID", summary: "drop a pending sent message locally (not a recall)", run: cmdAbandon},
	{name: "trace", args: "PEER ID", summary: "a message's trace: the envelopes that carried it, on which session, and where it stands", run: cmdTrace},
	{name: "history", args: "PEER [--limit N]", summary: "print the conversation with PEER, oldest first", run: cmdHistory},

	// cmd_group.go (send, retry, history and trace take a GROUP too)
	{name: "group", args: groupUsage, summary: "make and change groups: members, admins, generation", run: cmdGroup},

	// cmd_tui.go
	{name: "tui", args: "[--theme NAME] [--commit POLICY] [--auto-retry=BOOL] [--config FILE] [PEER]", summary: "the terminal interface for one profile (open at the conversation with PEER)", run: cmdTUI, noJSON: true},
	{name: "demo", args: "[--theme NAME] [--config FILE] [--record FILE] [--script FILE]", summary: "an embedded relay and two fresh profiles, alice/1 and bob/1, side by side", run: cmdDemo, noJSON: true},

	// cmd_relay.go
	{name: "relay", args: "[--listen ADDR] [--data DIR] [--tls-cert FILE --tls-key FILE] [limits]",
		summary: "run a relay; the first line on stdout is \"listening on ws://HOST:PORT\" (wss:// with TLS)", run: cmdRelay, noJSON: true},

	// cmd_bench.go
	{name: "bench", args: "[--duration D] [--messages N] [--pairs N | --group 2,10,50 | --history N] [--window W] [--json]", summary: "end-to-end benchmark on loopback with production durability", run: cmdBench},
}

// findCommand returns the command called name, or nil.
func findCommand(name string) *command {
	for _, c := range commandTable {
		if c.name == name {
			return c
		}
	}
	return nil
}

// nearestCommand returns the command whose name is closest to a mistyped
// one, when it is close enough to be what was meant: at most two edits, and
// fewer than the name's own length.
func nearestCommand(name string) string {
	best, bestDist := "", 3
	for _, c := range commandTable {
		if d := editDistance(name, c.name); d < bestDist && d < len(name) {
			best, bestDist = c.name, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance between a and b, in bytes
// (command names are ASCII).
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
