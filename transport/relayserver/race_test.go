//go:build race

package relayserver

// raceEnabled: the tests run under the race detector, which slows every
// memory access several times; the measurements of CPU and latency log
// their figures but do not judge them then.
const raceEnabled = true
