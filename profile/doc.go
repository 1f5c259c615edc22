// Package profile opens parley profiles: the store, the identity, the relay
// connection and the engine, wired the one way every entry point uses (the
// command line, the interface, the demo and the benchmark), with one
// vocabulary of errors (wrong passphrase, open in another process, written
// by a newer parley, no profile, relay unreachable).
//
// It sits above engine, store and transport and below package cli; tui
// never imports it (the demo is handed an opener by cli).
package profile
