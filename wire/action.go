package wire

import (
	"encoding/binary"
	"fmt"
	"unicode"
	"unicode/utf8"
)

// Actions: a reply, a reaction, an edit and a delete for everyone are
// messages of their own (their own logical ID, the exactly-once path) whose
// body names another message, the target, by its logical ID. They travel
// one to one as content frames (kind 6) with these content types; the body
// is an action body below, which starts with its own version byte.
const (
	// ContentReply is a text message that quotes another: its body is
	// the target's ID and the text.
	ContentReply ContentType = 3
	// ContentReaction sets (or, with Remove, takes back) the sender's one
	// reaction to the target; Order numbers the sender's reactions to that
	// target, so that a later one wins whatever the arrival order.
	ContentReaction ContentType = 4
	// ContentEdit replaces the text of the sender's own target; Edit
	// numbers the sender's edits of that target, so that a later edit
	// wins whatever the arrival order.
	ContentEdit ContentType = 5
	// ContentDelete replaces the sender's own target by a tombstone on
	// every device.
	ContentDelete ContentType = 6
)

const (
	// ActionVersion is the layout of an action body without a reaction
	// number: every reply, edit and delete, and a reaction of Order 0 (as
	// sent before ActionVersionOrdered).
	ActionVersion = 0x01
	// ActionVersionOrdered is the layout of a reaction that carries its
	// number (Order 1 or more) after the target. Only a reaction has it.
	ActionVersionOrdered = 0x02
	// MaxEmojiSize bounds a reaction in bytes of UTF-8: the longest emoji
	// sequences in use (a family of four with skin tones, joined by
	// zero-width joiners) take about 40 bytes; 64 leaves room and keeps a
	// reaction from carrying a text.
	MaxEmojiSize = 64
	// MaxEmojiRunes bounds a reaction in code points, so that 64 bytes of
	// ASCII are no reaction either.
	MaxEmojiRunes = 16
	// MaxActionTextSize is the longest text of a reply or an edit: the
	// body of a content frame less the action's header.
	MaxActionTextSize = MaxGroupBodySize - actionEditHeader
)

const (
	actionHeader     = 1 + 16               // version, target
	actionEditHeader = actionHeader + 4 + 4 // and edit number, text length
)

// IsAction reports whether c is the content type of an action.
func IsAction(c ContentType) bool { return c >= ContentReply && c <= ContentDelete }

// Action is the body of an action message. Target is the logical ID of the
// message it acts on. Text is a reply's or an edit's text; Edit is an
// edit's number (1 for the first edit of the target, then 2, ...); Emoji
// and Remove are a reaction's (Remove with no Emoji takes it back), and
// Order its number among the sender's reactions to the target (1, 2, ...;
// 0 for a reaction of version 1, which carries none).
type Action struct {
	Content ContentType
	Target  LogicalID
	Text    []byte
	Edit    uint32
	Emoji   string
	Remove  bool
	Order   uint32
}

// CheckEmoji checks a reaction: 1 to MaxEmojiSize bytes and at most
// MaxEmojiRunes code points of valid UTF-8, with no character IsControl
// names, no space, and nothing but graphic characters and the joiners and
// selectors that emoji sequences use.
func CheckEmoji(s string) error {
	switch {
	case s == "":
		return fmt.Errorf("empty reaction: %w", ErrMalformed)
	case len(s) > MaxEmojiSize:
		return fmt.Errorf("reaction of %d bytes over %d: %w", len(s), MaxEmojiSize, ErrMalformed)
	case !utf8.ValidString(s):
		return fmt.Errorf("reaction is not UTF-8: %w", ErrMalformed)
	case utf8.RuneCountInString(s) > MaxEmojiRunes:
		return fmt.Errorf("reaction of %d code points over %d: %w", utf8.RuneCountInString(s), MaxEmojiRunes, ErrMalformed)
	}
	for _, r := range s {
		joiner := r == 0x200d || r >= 0xfe00 && r <= 0xfe0f || r >= 0xe0020 && r <= 0xe007f
		if IsControl(r) || unicode.IsSpace(r) || !unicode.IsGraphic(r) && !joiner {
			return fmt.Errorf("reaction character %U: %w", r, ErrMalformed)
		}
	}
	return nil
}

// checkAction checks what the encoder and the decoder both require.
func checkAction(a Action) error {
	switch a.Content {
	case ContentReply:
		if a.Edit != 0 || a.Emoji != "" || a.Remove || a.Order != 0 {
			return fmt.Errorf("reply with reaction or edit fields: %w", ErrMalformed)
		}
	case ContentEdit:
		if a.Edit == 0 || a.Emoji != "" || a.Remove || a.Order != 0 {
			return fmt.Errorf("edit number %d: %w", a.Edit, ErrMalformed)
		}
	case ContentReaction:
		if a.Text != nil || a.Edit != 0 {
			return fmt.Errorf("reaction with a text: %w", ErrMalformed)
		}
		if a.Remove {
			if a.Emoji != "" {
				return fmt.Errorf("reaction removed with an emoji: %w", ErrMalformed)
			}
			return nil
		}
		return CheckEmoji(a.Emoji)
	case ContentDelete:
		if a.Text != nil || a.Edit != 0 || a.Emoji != "" || a.Remove || a.Order != 0 {
			return fmt.Errorf("delete with other fields: %w", ErrMalformed)
		}
	default:
		return fmt.Errorf("content type %d is no action: %w", a.Content, ErrMalformed)
	}
	if len(a.Text) > MaxActionTextSize {
		return ErrMessageTooLarge
	}
	return nil
}

// EncodeAction returns an action's body:
//
//	reply:    version 1 | target | text length u32 | text
//	reaction: version 1 | target | remove flag | emoji length u8 | emoji
//	          (Order 0), or
//	          version 2 | target | order u32 | remove flag | emoji length u8 | emoji
//	          (Order 1 or more)
//	edit:     version 1 | target | edit number u32 | text length u32 | text
//	delete:   version 1 | target
//
// A text over MaxActionTextSize fails with ErrMessageTooLarge; anything
// checkAction refuses (an edit number 0, a reaction that CheckEmoji
// refuses, fields of another kind) with ErrMalformed.
func EncodeAction(a Action) ([]byte, error) {
	if err := checkAction(a); err != nil {
		return nil, err
	}
	b := make([]byte, 0, actionEditHeader+len(a.Text)+len(a.Emoji))
	if a.Order != 0 {
		b = append(b, ActionVersionOrdered)
	} else {
		b = append(b, ActionVersion)
	}
	b = append(b, a.Target[:]...)
	switch a.Content {
	case ContentReply:
		b = binary.BigEndian.AppendUint32(b, uint32(len(a.Text)))
		b = append(b, a.Text...)
	case ContentReaction:
		if a.Order != 0 {
			b = binary.BigEndian.AppendUint32(b, a.Order)
		}
		b = append(b, boolByte(a.Remove), byte(len(a.Emoji)))
		b = append(b, a.Emoji...)
	case ContentEdit:
		b = binary.BigEndian.AppendUint32(b, a.Edit)
		b = binary.BigEndian.AppendUint32(b, uint32(len(a.Text)))
		b = append(b, a.Text...)
	}
	return b, nil
}

// DecodeAction parses the body of an action message of content type c,
// strictly: a version other than 1, or than 2 for a reaction, is
// ErrUnsupportedVersion (a version 1 reaction is Order 0); an input over
// MaxGroupBodySize ErrMessageTooLarge; truncation, trailing bytes, a
// content type that is no action and whatever EncodeAction refuses are
// ErrMalformed. Text is a copy (nil for an empty text, as for the kinds
// without one).
func DecodeAction(c ContentType, b []byte) (Action, error) {
	if len(b) > MaxGroupBodySize {
		return Action{}, ErrMessageTooLarge
	}
	if !IsAction(c) {
		return Action{}, fmt.Errorf("content type %d is no action: %w", c, ErrMalformed)
	}
	r := &reader{b: b}
	v := r.u8("version")
	switch {
	case r.err != nil:
		return Action{}, r.err
	case v == ActionVersionOrdered && c != ContentReaction:
		return Action{}, fmt.Errorf("version %d of a %d: %w", v, c, ErrUnsupportedVersion)
	case v != ActionVersion && v != ActionVersionOrdered:
		return Action{}, fmt.Errorf("version %d: %w", v, ErrUnsupportedVersion)
	}
	a := Action{Content: c}
	r.array(a.Target[:], "target")
	var text []byte
	switch c {
	case ContentReply:
		text = r.sized("text", 0, MaxActionTextSize)
	case ContentReaction:
		if v == ActionVersionOrdered {
			// Order 0 is written as version 1: one encoding each.
			if a.Order = r.u32("reaction number"); r.err == nil && a.Order == 0 {
				r.fail(fmt.Errorf("reaction number 0 in version 2: %w", ErrMalformed))
			}
		}
		a.Remove = r.flag("remove")
		a.Emoji = string(r.sized8("emoji", MaxEmojiSize))
	case ContentEdit:
		a.Edit = r.u32("edit number")
		text = r.sized("text", 0, MaxActionTextSize)
	}
	if err := r.end(); err != nil {
		return Action{}, err
	}
	if len(text) > 0 {
		a.Text = append([]byte(nil), text...)
	}
	if err := checkAction(a); err != nil {
		return Action{}, err
	}
	return a, nil
}

func boolByte(v bool) byte {
	if v {
		return 1
	}
	return 0
}
