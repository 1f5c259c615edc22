// Package store keeps a parley profile on disk: one SQLite database
// (modernc.org/sqlite, no cgo) in a profile directory, guarded by an advisory
// lock so that one process writes it, with every secret column sealed under a
// storage key that the user's passphrase unwraps.
//
// store owns the schema and its migrations, sealed records, the profile lock
// and the mapping of SQLite's errors to engine's. It speaks in transitions:
// the engine plans, store applies each plan in one BEGIN IMMEDIATE
// transaction, and reads come back as read models; there are no exported row
// setters. Driver errors never leave the package.
//
// store may import engine and wire; neither may import store.
// docs/storage.md describes the file layout, the key hierarchy and the
// migration rules.
package store
