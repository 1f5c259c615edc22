package engine_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/parley-chat/parley/engine"
)

// TestDecideRetryWait: without envelope status the backoff is today's;
// with it, a lost envelope is due at once, a taken one waits for its ACK
// ten minutes, and one never reported taken waits an hour, doubling to a
// day, however short the policy's own backoff is.
func TestDecideRetryWait(t *testing.T) {
	p := engine.Policy{AutoRetry: true, RetryMin: 2 * time.Second, RetryMax: 5 * time.Minute}
	tests := []struct {
		status bool
		fate   engine.EnvelopeFate
		prev   time.Duration
		want   time.Duration
	}{
		// No envelope status: doubling from RetryMin to RetryMax.
		{false, engine.FateUnreported, 0, 2 * time.Second},
		{false, engine.FateUnreported, 2 * time.Second, 4 * time.Second},
		{false, engine.FateUnreported, 4 * time.Minute, 5 * time.Minute},
		{false, engine.FateUnreported, 5 * time.Minute, 5 * time.Minute},
		// A fate heard from a relay that does not announce the feature
		// changes nothing.
		{false, engine.FateTaken, 0, 2 * time.Second},
		{false, engine.FateExpired, 2 * time.Second, 4 * time.Second},
		// Envelope status: never reported taken.
		{true, engine.FateUnreported, 0, time.Hour},
		{true, engine.FateUnreported, 2 * time.Second, time.Hour},
		{true, engine.FateUnreported, time.Hour, 2 * time.Hour},
		{true, engine.FateUnreported, 16 * time.Hour, 24 * time.Hour},
		{true, engine.FateUnreported, 24 * time.Hour, 24 * time.Hour},
		// Taken, not acknowledged.
		{true, engine.FateTaken, 0, 10 * time.Minute},
		{true, engine.FateTaken, 8 * time.Hour, 10 * time.Minute},
		// Expired: lost, resent at the next opportunity.
		{true, engine.FateExpired, 0, 0},
		{true, engine.FateExpired, 8 * time.Hour, 0},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("status=%v/fate=%d/prev=%v", tt.status, tt.fate, tt.prev), func(t *testing.T) {
			got := engine.DecideRetryWait(tt.status, tt.fate, tt.prev, p)
			if got != tt.want {
				t.Fatalf("DecideRetryWait = %v, want %v", got, tt.want)
			}
		})
	}
}
