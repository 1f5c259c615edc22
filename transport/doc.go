// Package transport is a device's connection to a parley relay: Conn
// dials the relay's websocket, authenticates as one address (signing
// wire.AuthMessage), sends requests, collects the envelopes the relay pushes
// and reconnects with backoff. Conn implements engine.Relay,
// engine.RelayLink and engine.PreKeyPool.
//
// transport imports engine and wire; engine never imports transport. The
// relay server lives in transport/relayserver, which must not import this
// package (nor must this package import it, its tests aside), and every byte
// format, the authentication message included, lives in wire.
// docs/relay.md describes the protocol flow, the limits and what a relay can
// and cannot do.
package transport
