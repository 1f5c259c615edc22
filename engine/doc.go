// Package engine is parley's domain: device addresses, identities and prekeys,
// session set-up and the double ratchet, the reliability layer (logical
// messages, pending lists, acknowledgements), commit plans, receive results,
// events and errors, and the interfaces it needs from the outside (Store,
// Relay).
//
// engine performs all cryptographic work on candidate copies of state and
// hands the result to a Store as one typed plan; it never touches SQL,
// websockets or the terminal. It must not import a SQL driver, a websocket
// library or Bubble Tea: beyond the standard library it imports only wire,
// curve arithmetic and the file stream's AEAD (TestArchitectureTable keeps
// it that way, from the package table in docs/architecture.md).
package engine
