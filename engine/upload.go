package engine

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/parley-chat/parley/wire"
)

// Upload is an upload begun and not finished: the run that made it was
// killed, or it failed before its manifest was stored. Sending the same
// file to the same peer or group again resumes it from what the relay
// holds (SendFile, SendGroupFile).
type Upload struct {
	Peer  Address       // the recipient; zero for a group's
	Group *wire.GroupID // the group, for a group's
	Path  string        // the file, as it was sent
	Size  int64         // its size then
	ID    wire.LogicalID
}

// Uploads lists the uploads begun and not finished (one in flight now is
// listed too), read from their records in the files directory; a profile
// without files has none. A record that does not read (torn when its run
// was killed before the first chunk) is left out, as sending does.
func (c *Client) Uploads() ([]Upload, error) {
	dir := c.cfg.Files.Dir
	if dir == "" {
		return nil, nil
	}
	names, err := filepath.Glob(filepath.Join(dir, "upload-*.json"))
	if err != nil {
		return nil, fmt.Errorf("list uploads: %w", err)
	}
	var out []Upload
	for _, n := range names {
		b, err := os.ReadFile(n)
		if err != nil {
			if os.IsNotExist(err) {
				continue // finished meanwhile
			}
			return nil, fmt.Errorf("list uploads: %w", err)
		}
		var r uploadRecord
		if json.Unmarshal(b, &r) != nil {
			continue
		}
		u := Upload{Path: r.Path, Size: r.Size}
		if id, err := hex.DecodeString(r.ID); err == nil && len(id) == len(u.ID) {
			copy(u.ID[:], id)
		}
		if g, ok := strings.CutPrefix(r.To, "group:"); ok {
			var gid wire.GroupID
			if b, err := hex.DecodeString(g); err != nil || len(b) != len(gid) {
				continue
			} else {
				copy(gid[:], b)
			}
			u.Group = &gid
		} else if u.Peer, err = ParseAddress(r.To); err != nil {
			continue
		}
		out = append(out, u)
	}
	return out, nil
}
