package engine_test

import "testing"

// oneGoroutine skips a test built with the race detector when the test
// drives in-memory devices from its own goroutine alone: the detector
// finds nothing there and multiplies its time by five to ten (most of
// it in the pure-Go SQLite). make test runs every engine test without the
// detector in its second step, these included; the tests that run
// goroutines of their own (the loop, the pump, the lock-order checker,
// the file transfers against a blob server) stay in the race step.
func oneGoroutine(t *testing.T) {
	t.Helper()
	if raceDetector {
		t.Skip("one goroutine drives this test: make test runs it without the race detector")
	}
}
