package layout

import (
	"fmt"
	"regexp"
	"strconv"

	"github.com/parley-chat/parley/wire"
)

// Shown is what a received body reads as: the body itself, or for a file
// manifest (content wire.ContentFile) "[file] name · size · type", so that
// no panel draws a manifest's bytes. The name and type are the peer's:
// they are cleaned when drawn, like any body.
func Shown(content wire.ContentType, body []byte) []byte {
	if content != wire.ContentFile {
		return body
	}
	m, err := wire.DecodeManifest(body)
	if err != nil {
		return []byte("[file] (unreadable manifest)")
	}
	return []byte(fmt.Sprintf("[file] %s · %s · %s", m.Name, Size(m.Size), m.MediaType))
}

// Size is a byte count as people read it: 512 B, 3.4 KiB, 20.0 MiB.
func Size(n int64) string {
	switch {
	case n < 1<<10:
		return fmt.Sprintf("%d B", n)
	case n < 1<<20:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	case n < 1<<30:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	}
	return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
}

// historyFile is how the engine keeps a file in the history: its name,
// its size in bytes and its type ("[file] report.pdf (20971520 bytes,
// application/pdf)").
var historyFile = regexp.MustCompile(`^\[file\] (.*) \(([0-9]{1,19}) bytes, ([^()]*)\)$`)

// Stored is what a history entry's body reads as: the body itself, or for
// a file the same line as a waiting one ("[file] name · size · type"), so
// that a file's size reads in one unit everywhere.
func Stored(body []byte) []byte {
	if len(body) < 7 || string(body[:7]) != "[file] " {
		return body
	}
	m := historyFile.FindSubmatch(body)
	if m == nil {
		return body
	}
	n, err := strconv.ParseInt(string(m[2]), 10, 64)
	if err != nil {
		return body
	}
	return []byte(fmt.Sprintf("[file] %s · %s · %s", m[1], Size(n), m[3]))
}
