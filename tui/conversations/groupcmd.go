package conversations

import (
	"errors"
	"fmt"
	"strings"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/wire"
)

// GroupCommandMsg asks for a group to be created (Create, with Name) or
// for members to be added or removed (Group set, Op RosterAdd or
// RosterRemove). The pane runs it on the engine.
type GroupCommandMsg struct {
	Create  bool
	Name    string
	Group   wire.GroupID
	Op      wire.RosterOp
	Members []engine.Address
}

// ParseGroupCommand reads the line typed after g: "create NAME MEMBER...",
// "add GROUP MEMBER..." or "remove GROUP MEMBER...", GROUP being the name
// of one of groups, as the command line's `parley group` does.
func ParseGroupCommand(line string, groups []engine.GroupInfo) (GroupCommandMsg, error) {
	f := strings.Fields(line)
	if len(f) < 3 {
		return GroupCommandMsg{}, errors.New("write create NAME MEMBER, add GROUP MEMBER or remove GROUP MEMBER (one member or more)")
	}
	members := make([]engine.Address, 0, len(f)-2)
	for _, s := range f[2:] {
		a, err := engine.ParseAddress(s)
		if err != nil {
			return GroupCommandMsg{}, err
		}
		members = append(members, a)
	}
	switch f[0] {
	case "create":
		if strings.Contains(f[1], "/") {
			return GroupCommandMsg{}, fmt.Errorf("a group's name cannot hold /: %q", f[1])
		}
		return GroupCommandMsg{Create: true, Name: f[1], Members: members}, nil
	case "add", "remove":
		var found []engine.GroupInfo
		for _, g := range groups {
			if g.Name == f[1] {
				found = append(found, g)
			}
		}
		if len(found) != 1 {
			return GroupCommandMsg{}, fmt.Errorf("%d groups are named %q here, not one", len(found), f[1])
		}
		op := wire.RosterAdd
		if f[0] == "remove" {
			op = wire.RosterRemove
		}
		return GroupCommandMsg{Name: f[1], Group: found[0].ID, Op: op, Members: members}, nil
	}
	return GroupCommandMsg{}, fmt.Errorf("unknown group command %q: create, add or remove", f[0])
}
