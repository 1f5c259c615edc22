// Package relayserver is a parley relay: it serves the relay protocol
// (package wire) over websockets, authenticates devices, keeps their prekey
// bundles and their mailboxes in a relaystore.Store it is handed, delivers
// under leases, guards itself with limits per IP, address and target, and
// exposes /healthz and /metrics.
//
// The caller opens the store (memory, SQLite or NATS, with fault injection
// when asked: relaystore.WithFaults) and passes it to New; NewMemory is the
// short way to a relay in memory for the demo, the benchmark and tests.
//
// relayserver imports wire, engine (address parsing and bundle checks) and
// relaystore. It must not import transport (the client), store, profile or
// tui: a client and a server meet only through the bytes of wire.
package relayserver
