package profile

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
)

// strangersFile records, in the profile's directory, how the profile treats
// devices it has not accepted: "requests" stages their first messages as
// message requests and holds them to the stranger caps
// (engine.Config.Requests, CapStrangers); "accept-all", or no file (profiles made
// before, or outside parley init), treats everyone alike, the old
// behaviour that bots want. It holds no secret.
const strangersFile = "strangers"

// SetAcceptAll records whether the profile in dir accepts everyone (true)
// or treats devices it has not accepted as strangers (false).
func SetAcceptAll(dir string, all bool) error {
	v := "requests"
	if all {
		v = "accept-all"
	}
	return os.WriteFile(filepath.Join(dir, strangersFile), []byte(v+"\n"), 0o600)
}

// AcceptsAll reports whether the profile in dir accepts everyone.
func AcceptsAll(dir string) bool {
	b, err := os.ReadFile(filepath.Join(dir, strangersFile))
	if err != nil {
		return true
	}
	return strings.TrimSpace(string(b)) != "requests"
}

// forgetStrangers removes the record (the profile is removed).
func forgetStrangers(dir string) error {
	if err := os.Remove(filepath.Join(dir, strangersFile)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}
