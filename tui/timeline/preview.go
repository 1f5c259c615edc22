package timeline

import "github.com/parley-chat/parley/wire"

// maxPreviews bounds the pictures a conversation view keeps drawn in this
// run (each is at most a few tens of kilobytes of cells): past it the
// oldest goes, and its message shows as text again.
const maxPreviews = 32

// previews are the pictures downloaded in this run, by the message that
// carried them, drawn under that message.
type previews struct {
	lines map[wire.LogicalID][]string
	order []wire.LogicalID
}

// add keeps lines as id's picture (nothing for none).
func (p *previews) add(id wire.LogicalID, lines []string) {
	if len(lines) == 0 {
		return
	}
	if p.lines == nil {
		p.lines = map[wire.LogicalID][]string{}
	}
	if _, ok := p.lines[id]; !ok {
		p.order = append(p.order, id)
		if len(p.order) > maxPreviews {
			delete(p.lines, p.order[0])
			p.order = p.order[1:]
		}
	}
	p.lines[id] = lines
}

// of returns id's picture, if one is kept.
func (p *previews) of(id wire.LogicalID) []string {
	if p == nil {
		return nil
	}
	return p.lines[id]
}
