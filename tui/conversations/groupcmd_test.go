package conversations

import (
	"context"
	"testing"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/themes"
	"github.com/parley-chat/parley/wire"
)

func TestParseGroupCommand(t *testing.T) {
	team := engine.GroupInfo{ID: wire.GroupID{1}, Name: "team"}
	twins := []engine.GroupInfo{team, {ID: wire.GroupID{2}, Name: "twin"}, {ID: wire.GroupID{3}, Name: "twin"}}
	tests := []struct {
		line    string
		want    GroupCommandMsg
		wantErr bool
	}{
		{line: "create team bob/1 carol/1", want: GroupCommandMsg{Create: true, Name: "team", Members: []engine.Address{bob, engine.MustParseAddress("carol/1")}}},
		{line: "add team carol/2", want: GroupCommandMsg{Name: "team", Group: team.ID, Op: wire.RosterAdd, Members: []engine.Address{carol}}},
		{line: "remove team carol/2", want: GroupCommandMsg{Name: "team", Group: team.ID, Op: wire.RosterRemove, Members: []engine.Address{carol}}},
		{line: "create team", wantErr: true},       // no member
		{line: "create a/b bob/1", wantErr: true},  // a name with /
		{line: "add nosuch bob/1", wantErr: true},  // unknown group
		{line: "add twin bob/1", wantErr: true},    // two groups of that name
		{line: "add team Bob/1", wantErr: true},    // a bad address
		{line: "rename team bob/1", wantErr: true}, // unknown command
	}
	for _, tt := range tests {
		t.Run(tt.line, func(t *testing.T) {
			got, err := ParseGroupCommand(tt.line, twins)
			if tt.wantErr {
				if err == nil {
					t.Fatalf("got %+v, want an error", got)
				}
				return
			}
			if err != nil {
				t.Fatalf("got error %v, want %+v", err, tt.want)
			}
			if got.Create != tt.want.Create || got.Name != tt.want.Name || got.Group != tt.want.Group || got.Op != tt.want.Op || len(got.Members) != len(tt.want.Members) {
				t.Fatalf("got %+v, want %+v", got, tt.want)
			}
			for i := range got.Members {
				if got.Members[i] != tt.want.Members[i] {
					t.Fatalf("got %+v, want %+v", got, tt.want)
				}
			}
		})
	}
}

// TestGroupCommandLine: g opens the line, enter sends the command, esc
// cancels; an invalid line stays open with the reason.
func TestGroupCommandLine(t *testing.T) {
	m := New(context.Background(), &fakeSource{}, themes.MustGet("dark"))
	m.SetSize(60, 8)
	m.Focus()
	m, _ = m.Update(keyMsg("g"))
	if !m.Capturing() {
		t.Fatal("g did not open the group line")
	}
	m, _ = m.Update(keyMsg("create team"))
	m, cmd := m.Update(keyMsg("enter"))
	if cmd != nil || !m.Capturing() || m.err == "" {
		t.Fatalf("an invalid line should stay open with its reason (err %q)", m.err)
	}
	m, _ = m.Update(keyMsg(" bob/1"))
	m, cmd = m.Update(keyMsg("enter"))
	var got GroupCommandMsg
	for _, msg := range run(cmd) {
		if c, ok := msg.(GroupCommandMsg); ok {
			got = c
		}
	}
	if !got.Create || got.Name != "team" || len(got.Members) != 1 || got.Members[0] != bob || m.Capturing() {
		t.Fatalf("got %+v (capturing %v), want create team bob/1 and the line closed", got, m.Capturing())
	}
}
