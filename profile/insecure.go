package profile

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
)

// insecureFile records, in the profile's directory, the plaintext ws://
// relay URL its user accepted (--insecure-relay): a URL changed since needs
// accepting again. It holds no secret.
const insecureFile = "insecure-relay"

// AllowInsecureRelay records that the user accepted plaintext ws:// to url.
func AllowInsecureRelay(dir, url string) error {
	return os.WriteFile(filepath.Join(dir, insecureFile), []byte(url+"\n"), 0o600)
}

// InsecureRelayAllowed reports whether the user accepted plaintext ws:// to
// url.
func InsecureRelayAllowed(dir, url string) bool {
	b, err := os.ReadFile(filepath.Join(dir, insecureFile))
	return err == nil && strings.TrimSpace(string(b)) == url
}

// forgetInsecureRelay removes the record (the profile is removed).
func forgetInsecureRelay(dir string) error {
	if err := os.Remove(filepath.Join(dir, insecureFile)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}
