// Package transport carries parley's relay protocol (package wire) over
// websockets: the relay server, which authenticates devices, stores prekey
// bundles and keeps each recipient's mailbox, and the client, which
// implements engine.Relay for one device.
//
// transport imports engine and wire; engine never imports transport. The
// relay's storage sits behind relaystore.Store. docs/relay.md describes the
// protocol flow, the authentication message, the limits and what a relay can
// and cannot do.
package transport
