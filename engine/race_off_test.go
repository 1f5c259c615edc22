//go:build !race

package engine_test

// raceDetector is true when the tests are built with the race detector
// (oneGoroutine).
const raceDetector = false
