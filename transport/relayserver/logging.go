package relayserver

import "errors"

// What the relay logs: failures of its storage and its links to other
// relays, never who talks to whom. A store's error names the mailbox it
// failed on ("append to bob/1: ..."), so only its innermost cause is
// logged (the driver's or the cluster's own words, or a sentinel): message
// metadata stays in what the metrics count, without addresses.

// cause returns err's innermost error, the part that names no address.
func cause(err error) error {
	for {
		next := errors.Unwrap(err)
		if next == nil {
			return err
		}
		err = next
	}
}
