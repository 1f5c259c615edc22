package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// MaxContactName is the longest name a device can be given, in bytes.
const MaxContactName = 64

// ErrInvalidContactName means a name is too long, not UTF-8, or holds
// control characters.
var ErrInvalidContactName = errors.New("invalid contact name")

// CheckContactName reports why name cannot name a device ("" removes a
// name and is fine).
func CheckContactName(name string) error {
	switch {
	case len(name) > MaxContactName:
		return fmt.Errorf("%w: %d bytes, at most %d", ErrInvalidContactName, len(name), MaxContactName)
	case !utf8.ValidString(name):
		return fmt.Errorf("%w: not UTF-8", ErrInvalidContactName)
	case strings.TrimSpace(name) != name:
		return fmt.Errorf("%w: spaces at either end", ErrInvalidContactName)
	case strings.IndexFunc(name, func(r rune) bool { return unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r) }) >= 0:
		return fmt.Errorf("%w: control characters", ErrInvalidContactName)
	}
	return nil
}

// SetContact gives peer a name shown next to its address ("" forgets the
// name). Names stay in this profile, sealed; a peer never learns them.
func (c *Client) SetContact(ctx context.Context, peer Address, name string) error {
	if err := CheckContactName(name); err != nil {
		return err
	}
	if _, err := c.store.Apply(ctx, SetContact{Peer: peer, Name: name}); err != nil {
		return fmt.Errorf("name %s: %w", peer, err)
	}
	return nil
}

// Contacts returns the names given to devices.
func (c *Client) Contacts(ctx context.Context) (map[Address]string, error) {
	return c.store.Contacts(ctx)
}
