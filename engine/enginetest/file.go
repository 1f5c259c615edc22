package enginetest

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/parley-chat/parley/wire"
)

// snapshot is a Network's state as JSON, so that processes that run one
// after another (a test and the child processes it kills) can share a relay.
type snapshot struct {
	Next     uint64
	Boxes    map[string][]fileRow
	Held     map[string][]fileRow
	Holding  map[string]bool
	Bundles  map[string]*filePublished
	Drop     map[string]int
	Dup      map[string]int
	Down     map[string]bool
	Accepted int
	Lists    map[string][]byte `json:",omitempty"`
}

type fileRow struct {
	ID  uint64
	Env []byte
}

type filePublished struct {
	Bundle  []byte
	OneTime []wire.OneTimePreKeyPublic
}

func pairKey(p pair) string { return p.from + ">" + p.to }

func splitPair(s string) pair {
	for i := 0; i < len(s); i++ {
		if s[i] == '>' {
			return pair{s[:i], s[i+1:]}
		}
	}
	return pair{}
}

// SaveFile writes the network's state to path (leases are not kept: a new
// process starts with none, as after a reconnect).
func (n *Network) SaveFile(path string) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	s := snapshot{Next: n.next, Boxes: map[string][]fileRow{}, Held: map[string][]fileRow{}, Holding: n.holding,
		Bundles: map[string]*filePublished{}, Drop: map[string]int{}, Dup: map[string]int{}, Down: n.down, Accepted: n.accepted, Lists: n.lists}
	for k, rows := range n.boxes {
		for _, r := range rows {
			s.Boxes[k] = append(s.Boxes[k], fileRow{r.id, r.env})
		}
	}
	for k, rows := range n.held {
		for _, r := range rows {
			s.Held[k] = append(s.Held[k], fileRow{r.id, r.env})
		}
	}
	for k, p := range n.bundles {
		b, err := wire.EncodeBundle(p.bundle)
		if err != nil {
			return err
		}
		s.Bundles[k] = &filePublished{Bundle: b, OneTime: p.oneTime}
	}
	for k, v := range n.drop {
		s.Drop[pairKey(k)] = v
	}
	for k, v := range n.dup {
		s.Dup[pairKey(k)] = v
	}
	b, err := json.Marshal(s)
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// LoadNetwork reads a network saved with SaveFile; a missing file is an
// empty network.
func LoadNetwork(path string) (*Network, error) {
	n := NewNetwork()
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return n, nil
	}
	if err != nil {
		return nil, err
	}
	var s snapshot
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("load network %s: %w", path, err)
	}
	n.next, n.accepted = s.Next, s.Accepted
	for k, rows := range s.Boxes {
		for _, r := range rows {
			n.boxes[k] = append(n.boxes[k], row{r.ID, r.Env})
		}
	}
	for k, rows := range s.Held {
		for _, r := range rows {
			n.held[k] = append(n.held[k], row{r.ID, r.Env})
		}
	}
	for k, v := range s.Holding {
		n.holding[k] = v
	}
	for k, p := range s.Bundles {
		bd, err := wire.DecodeBundle(p.Bundle)
		if err != nil {
			return nil, err
		}
		n.bundles[k] = &published{bundle: bd, oneTime: p.OneTime}
	}
	for k, v := range s.Drop {
		n.drop[splitPair(k)] = v
	}
	for k, v := range s.Dup {
		n.dup[splitPair(k)] = v
	}
	n.lists = s.Lists
	for k, v := range s.Down {
		n.down[k] = v
	}
	return n, nil
}
