//go:build !race

package relayserver

// raceEnabled: see race_test.go.
const raceEnabled = false
