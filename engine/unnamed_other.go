//go:build !linux

package engine

import (
	"errors"
	"os"
)

// openUnnamed reports that this system has no unnamed files: a fetch
// writes the file at the end under a temporary name (saveFile).
func openUnnamed(string) (*os.File, bool) { return nil, false }

// linkUnnamed is never called where openUnnamed has no files.
func linkUnnamed(*os.File, string) error { return errors.ErrUnsupported }
