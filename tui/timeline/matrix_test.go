package timeline

import (
	"strings"
	"testing"
	"time"

	"github.com/parley-chat/parley/engine"
)

func TestMatrix(t *testing.T) {
	sent := time.Date(2026, 1, 2, 10, 0, 0, 0, time.UTC)
	a := engine.MustParseAddress
	short := func(x engine.Address) string { return strings.SplitN(x.String(), "/", 2)[0] }
	lane := func(who string, s engine.LaneState) engine.Lane { return engine.Lane{Recipient: a(who), State: s} }
	tests := []struct {
		name  string
		lanes []engine.Lane
		after time.Duration
		want  string
	}{
		{"none", nil, 0, ""},
		{"all acknowledged", []engine.Lane{lane("bob/1", engine.LaneAcknowledged), lane("carol/2", engine.LaneAcknowledged)}, time.Minute, "✓ 2/2"},
		{"one pending", []engine.Lane{
			lane("bob/1", engine.LaneAcknowledged), lane("carol/2", engine.LanePending),
			lane("dave/3", engine.LaneAcknowledged), lane("erin/4", engine.LaneAcknowledged)}, 2*time.Hour + 5*time.Minute, "✓ 3/4 · carol pending 2h"},
		{"two waiting", []engine.Lane{lane("bob/1", engine.LaneRelayAccepted), lane("carol/2", engine.LanePending)}, 30 * time.Second, "… 0/2 · bob relay_accepted 30s +1"},
		{"pending before ended", []engine.Lane{lane("bob/1", engine.LaneRemoved), lane("carol/2", engine.LanePending)}, 3 * time.Minute, "… 0/2 · carol pending 3m"},
		{"ended only", []engine.Lane{lane("bob/1", engine.LaneAcknowledged), lane("carol/2", engine.LaneNotAMember)}, 50 * time.Hour, "✓ 1/2 · carol not_a_member"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Matrix(tt.lanes, sent, sent.Add(tt.after), short); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestLanesOpened(t *testing.T) {
	a := engine.MustParseAddress
	got := Lanes([]engine.Lane{{Recipient: a("bob/1"), State: engine.LaneAcknowledged},
		{Recipient: a("carol/2"), State: engine.LanePending}, {Recipient: a("dave/3"), State: engine.LaneAbandoned}}, nil)
	want := []string{"✓ bob/1 acknowledged", "· carol/2 pending", "✗ dave/3 abandoned"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestAge(t *testing.T) {
	for d, want := range map[time.Duration]string{-time.Second: "0s", 45 * time.Second: "45s", 12 * time.Minute: "12m", 2 * time.Hour: "2h", 73 * time.Hour: "3d"} {
		if got := Age(d); got != want {
			t.Errorf("Age(%v) = %q, want %q", d, got, want)
		}
	}
}
