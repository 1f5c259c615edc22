package cli

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/parley-chat/parley/wire"
)

// TestResolveIDPrefix: a prefix as the screen shows it resolves when one
// candidate has it; none or several is a one-line error (exit 1) saying how
// many; malformed operands are refused.
func TestResolveIDPrefix(t *testing.T) {
	ids := []wire.LogicalID{{0xab, 0xcd, 0xef, 0x01}, {0xab, 0xcd, 0x12, 0x34}, {0x11, 0x22, 0x33, 0x44}}
	cands := func(_ context.Context, yield func(wire.LogicalID)) error {
		for _, id := range ids {
			yield(id)
			yield(id) // a message listed twice (pending and in the history) counts once
		}
		return nil
	}
	for _, tt := range []struct {
		operand string
		want    *wire.LogicalID
		code    int
		msg     string
	}{
		{"abcdef01", &ids[0], 0, ""},
		{"11223344", &ids[2], 0, ""},
		{"abcd12", &ids[1], 0, ""},
		{hexID(ids[1]), &ids[1], 0, ""},
		{hexID(wire.LogicalID{9}), &wire.LogicalID{9}, 0, ""}, // a full ID is taken as given
		{"abcd", nil, 1, "abcd matches 2 of the pending messages from bob/1; give more digits"},
		{"ffff", nil, 1, "none of the pending messages from bob/1 has an ID starting with ffff"},
	} {
		t.Run(tt.operand, func(t *testing.T) {
			op, err := parseIDOperand(tt.operand)
			if err != nil {
				t.Fatalf("parse: %v", err)
			}
			got, err := op.resolve(context.Background(), "pending messages from bob/1", cands)
			if tt.want != nil {
				if err != nil || got != *tt.want {
					t.Fatalf("got %x, %v; want %x", got, err, *tt.want)
				}
				return
			}
			var ue *usageError
			if err == nil || errors.As(err, &ue) || exitCode(err) != tt.code || err.Error() != tt.msg {
				t.Fatalf("got %v (exit %d), want exit %d and %q", err, exitCode(err), tt.code, tt.msg)
			}
		})
	}
	for _, bad := range []string{"abc", "ABCDEF01", "xyz12345", strings.Repeat("a", 33), ""} {
		if _, err := parseIDOperand(bad); err == nil {
			t.Errorf("operand %q was accepted", bad)
		}
	}
	op, _ := parseIDOperand("abcd")
	if _, err := op.resolve(context.Background(), "x", func(context.Context, func(wire.LogicalID)) error { return errors.New("disk") }); err == nil || err.Error() != "disk" {
		t.Fatalf("a failed read: %v, want it passed on", err)
	}
}
