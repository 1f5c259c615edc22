package wire

import (
	"encoding/binary"
	"fmt"
	"unicode/utf8"
)

// Group frame kinds. They share version 0x01 and the kind byte with Frame,
// but each has its own type and decoder: Frame's API is fixed (SPEC 4.1) and
// has no room for a group ID or a generation, so DecodeFrame keeps refusing
// them and a receiver dispatches on PeekFrameKind.
const (
	FrameGroupMessage FrameKind = 3
	FrameRoster       FrameKind = 4
	FrameNotAMember   FrameKind = 5
	// FrameSignedRoster is a roster change signed by its author. The
	// unsigned FrameRoster is no longer accepted from a peer; it is decoded
	// only to read roster logs written before signatures.
	FrameSignedRoster FrameKind = 7
)

// GroupID names a group: 16 random bytes chosen by its creator. Any 16 bytes
// are valid.
type GroupID [16]byte

// ContentType says what a group message's body holds.
type ContentType uint8

// Content types: text, and a file manifest (ContentFile, in file.go).
const (
	ContentText ContentType = 1
)

// RosterOp is one kind of roster change.
type RosterOp uint8

// Roster operations.
const (
	RosterAdd    RosterOp = 1 // add a member
	RosterRemove RosterOp = 2 // remove a member (a member removing itself leaves)
	RosterAdmin  RosterOp = 3 // name a member admin
)

const (
	// MaxGroupMembers is the most members a roster holds, the sender
	// included. A group send is one transaction with one ratchet step and
	// one envelope per member, so the bound keeps that transaction (and a
	// roster frame) small on a slow disk.
	MaxGroupMembers = 64
	// MaxRosterChanges is the most operations one roster change carries:
	// enough to create a full group in one change.
	MaxRosterChanges = MaxGroupMembers
	// MaxGroupNameSize is the longest group name in bytes of UTF-8.
	MaxGroupNameSize = 64

	groupMessageHeaderSize = 1 + 1 + 16 + 16 + 8 + 1 + 4
	// MaxGroupBodySize is the largest group message body: a group frame with
	// it is exactly MaxFrameSize bytes, so it fits the ratchet as an
	// application frame does.
	MaxGroupBodySize = MaxFrameSize - groupMessageHeaderSize

	rosterHeaderSize = 1 + 1 + 16 + 16 + 8
	rosterEntryMax   = 1 + 1 + MaxAddressSize
	// MaxRosterFrameSize is the largest roster frame: the longest name, the
	// most changes and the most members, every address at its longest.
	MaxRosterFrameSize = rosterHeaderSize + 1 + MaxGroupNameSize + 1 + MaxRosterChanges*rosterEntryMax + 2 + MaxGroupMembers*rosterEntryMax

	signedRosterExtra = 32 + 1 + MaxAddressSize + 32 + ed25519SignatureSize
	// MaxSignedRosterFrameSize is the largest signed roster frame: the
	// largest roster frame with the parent digest, the author, its key and
	// the signature.
	MaxSignedRosterFrameSize = MaxRosterFrameSize + signedRosterExtra

	ed25519SignatureSize = 64

	// NotAMemberSize is the size of a not_a_member frame.
	NotAMemberSize = 1 + 1 + 16 + 16 + 8
)

// GroupMessage is a group message as one member receives it on its pairwise
// session: the logical ID (the same on every lane), the group, the roster
// generation the sender saw when it sent, the content type and the body.
type GroupMessage struct {
	ID         LogicalID
	Group      GroupID
	Generation uint64
	Content    ContentType
	Body       []byte
}

// RosterChange is one operation of a roster change on one member.
type RosterChange struct {
	Op      RosterOp
	Address string
}

// RosterMember is one member of a roster.
type RosterMember struct {
	Address string
	Admin   bool
}

// Roster is a roster change: its ID (the frame's logical ID, which also
// orders concurrent changes), the group, the generation the change creates,
// the group's name, the operations, and the full roster that results as the
// author saw it. Members are sorted by address, each once; changes too.
type Roster struct {
	ID         LogicalID
	Group      GroupID
	Generation uint64
	Name       string
	Changes    []RosterChange
	Members    []RosterMember
}

// SignedRoster is a roster change as its author signed it: the change
// (Roster), the digest of the roster at Generation-1 on which the author
// made it (all zero at generation 1), the author's device address and
// Ed25519 identity key, and the signature by that key over a label and
// every byte of the frame before the signature (SignedRosterBody). A change
// forwarded by anyone can be checked by whoever knows the author's key.
type SignedRoster struct {
	Roster
	Parent    [32]byte
	Author    string
	AuthorKey [32]byte
	Signature [64]byte
}

// NotAMember refuses a group message: the refuser's roster at Generation (the
// message's generation or a later one) omits the sender. ID is the refused
// message's logical ID.
type NotAMember struct {
	ID         LogicalID
	Group      GroupID
	Generation uint64
}

// PeekFrameKind returns the kind of a frame of version 0x01 without decoding
// the rest, so that a receiver can pick DecodeFrame or a group decoder. It
// rejects input over MaxFrameSize, another version and an unknown kind, in
// DecodeFrame's order.
func PeekFrameKind(b []byte) (FrameKind, error) {
	if len(b) > MaxFrameSize {
		return 0, ErrMessageTooLarge
	}
	if len(b) < 1 {
		return 0, ErrMalformed
	}
	if b[0] != FrameVersion {
		return 0, ErrUnsupportedVersion
	}
	if len(b) < 2 {
		return 0, ErrMalformed
	}
	switch k := FrameKind(b[1]); k {
	case FrameApplication, FrameAck, FrameGroupMessage, FrameRoster, FrameNotAMember, FrameContent, FrameSignedRoster, FrameChainAnnounce, FrameNeedChain,
		FrameChainAcks, FrameSentCopy, FrameDecision, FrameDecisionBody, FrameSentActionCopy, FrameDecisionAction, FrameGroupState:
		return k, nil
	}
	return 0, fmt.Errorf("frame kind %d: %w", b[1], ErrMalformed)
}

// groupContent reports whether a group message may carry content type c:
// text, a file manifest, or an action (IsAction), whose body is an action
// body as in a content frame.
func groupContent(c ContentType) bool {
	return c == ContentText || c == ContentFile || IsAction(c)
}

// EncodeGroupMessage returns a group message frame's bytes. A body over
// MaxGroupBodySize fails with ErrMessageTooLarge; an unknown content type with
// ErrMalformed.
func EncodeGroupMessage(m GroupMessage) ([]byte, error) {
	if !groupContent(m.Content) {
		return nil, fmt.Errorf("content type %d: %w", m.Content, ErrMalformed)
	}
	if len(m.Body) > MaxGroupBodySize {
		return nil, ErrMessageTooLarge
	}
	b := make([]byte, 0, groupMessageHeaderSize+len(m.Body))
	b = append(b, FrameVersion, byte(FrameGroupMessage))
	b = append(b, m.ID[:]...)
	b = append(b, m.Group[:]...)
	b = binary.BigEndian.AppendUint64(b, m.Generation)
	b = append(b, byte(m.Content))
	b = binary.BigEndian.AppendUint32(b, uint32(len(m.Body)))
	return append(b, m.Body...), nil
}

// DecodeGroupMessage parses a group message frame, rejecting as DecodeFrame
// does: input over MaxFrameSize, another version, then another kind, an
// unknown content type, a length over MaxGroupBodySize, truncation or
// trailing bytes. The body is a copy; an empty body is a non-nil empty slice.
func DecodeGroupMessage(b []byte) (GroupMessage, error) {
	r, err := groupReader(b, FrameGroupMessage, MaxFrameSize)
	if err != nil {
		return GroupMessage{}, err
	}
	var m GroupMessage
	r.array(m.ID[:], "id")
	r.array(m.Group[:], "group")
	m.Generation = r.u64("generation")
	m.Content = ContentType(r.u8("content type"))
	if r.err == nil && !groupContent(m.Content) {
		r.fail(fmt.Errorf("content type %d: %w", m.Content, ErrMalformed))
	}
	body := r.sized("body", 0, MaxGroupBodySize)
	if err := r.end(); err != nil {
		return GroupMessage{}, err
	}
	m.Body = append(make([]byte, 0, len(body)), body...)
	return m, nil
}

// EncodeRoster returns a roster frame's bytes. More than MaxRosterChanges
// changes or MaxGroupMembers members fail with ErrMessageTooLarge; a bad
// name, generation 0, an unknown operation, an address that is not a
// canonical device address, or changes or members out of address order or
// repeated fail with ErrMalformed.
func EncodeRoster(ro Roster) ([]byte, error) {
	if err := checkRosterSize(ro); err != nil {
		return nil, err
	}
	b := make([]byte, 0, rosterHeaderSize+rosterListsSize(ro))
	b = append(b, FrameVersion, byte(FrameRoster))
	b = append(b, ro.ID[:]...)
	b = append(b, ro.Group[:]...)
	b = binary.BigEndian.AppendUint64(b, ro.Generation)
	return appendRosterLists(b, ro), nil
}

// checkRosterSize checks the counts, then checkRoster.
func checkRosterSize(ro Roster) error {
	if len(ro.Changes) > MaxRosterChanges || len(ro.Members) > MaxGroupMembers {
		return ErrMessageTooLarge
	}
	return checkRoster(ro)
}

func rosterListsSize(ro Roster) int {
	return 1 + len(ro.Name) + 1 + len(ro.Changes)*rosterEntryMax + 2 + len(ro.Members)*rosterEntryMax
}

// appendRosterLists appends the name, the changes and the members, the
// part both roster layouts share.
func appendRosterLists(b []byte, ro Roster) []byte {
	b = append(append(b, byte(len(ro.Name))), ro.Name...)
	b = append(b, byte(len(ro.Changes)))
	for _, c := range ro.Changes {
		b = appendAddress(append(b, byte(c.Op)), c.Address)
	}
	b = binary.BigEndian.AppendUint16(b, uint16(len(ro.Members)))
	for _, m := range ro.Members {
		role := byte(0)
		if m.Admin {
			role = 1
		}
		b = appendAddress(append(b, role), m.Address)
	}
	return b
}

// SignedRosterBody returns the bytes of a signed roster frame before its
// signature: what the author signs (behind a label of the engine's). It
// checks what EncodeSignedRoster checks.
func SignedRosterBody(sr SignedRoster) ([]byte, error) {
	if err := checkRosterSize(sr.Roster); err != nil {
		return nil, err
	}
	if err := CheckDeviceAddress(sr.Author); err != nil {
		return nil, fmt.Errorf("roster author: %w", err)
	}
	b := make([]byte, 0, rosterHeaderSize+signedRosterExtra+rosterListsSize(sr.Roster))
	b = append(b, FrameVersion, byte(FrameSignedRoster))
	b = append(b, sr.ID[:]...)
	b = append(b, sr.Group[:]...)
	b = binary.BigEndian.AppendUint64(b, sr.Generation)
	b = append(b, sr.Parent[:]...)
	b = appendAddress(b, sr.Author)
	b = append(b, sr.AuthorKey[:]...)
	return appendRosterLists(b, sr.Roster), nil
}

// EncodeSignedRoster returns a signed roster frame's bytes:
// SignedRosterBody followed by the signature. It refuses what EncodeRoster
// refuses, and an author that is not a canonical device address.
func EncodeSignedRoster(sr SignedRoster) ([]byte, error) {
	b, err := SignedRosterBody(sr)
	if err != nil {
		return nil, err
	}
	return append(b, sr.Signature[:]...), nil
}

// DecodeSignedRoster parses a signed roster frame: input over
// MaxSignedRosterFrameSize is ErrMessageTooLarge, another version
// ErrUnsupportedVersion, and anything EncodeSignedRoster refuses, truncation
// or trailing bytes ErrMalformed. It does not verify the signature: that
// needs the author's key as the reader knows it. The signed bytes are
// b[:len(b)-64].
func DecodeSignedRoster(b []byte) (SignedRoster, error) {
	r, err := groupReader(b, FrameSignedRoster, MaxSignedRosterFrameSize)
	if err != nil {
		return SignedRoster{}, err
	}
	var sr SignedRoster
	r.array(sr.ID[:], "id")
	r.array(sr.Group[:], "group")
	sr.Generation = r.u64("generation")
	r.array(sr.Parent[:], "parent digest")
	sr.Author = r.address("author")
	r.array(sr.AuthorKey[:], "author key")
	if r.err == nil && len(r.b) < ed25519SignatureSize {
		r.fail(fmt.Errorf("signature: truncated: %w", ErrMalformed))
	}
	if r.err != nil {
		return SignedRoster{}, r.err
	}
	lists := &reader{b: r.b[:len(r.b)-ed25519SignatureSize]}
	lists.rosterLists(&sr.Roster)
	if err := lists.end(); err != nil {
		return SignedRoster{}, err
	}
	copy(sr.Signature[:], r.b[len(r.b)-ed25519SignatureSize:])
	if err := checkRoster(sr.Roster); err != nil {
		return SignedRoster{}, err
	}
	if err := CheckDeviceAddress(sr.Author); err != nil {
		return SignedRoster{}, fmt.Errorf("roster author: %w", err)
	}
	return sr, nil
}

// DecodeRoster parses a roster frame: input over MaxRosterFrameSize is
// ErrMessageTooLarge, another version ErrUnsupportedVersion, and anything
// EncodeRoster refuses, truncation or trailing bytes ErrMalformed. Empty
// lists decode as nil.
func DecodeRoster(b []byte) (Roster, error) {
	r, err := groupReader(b, FrameRoster, MaxRosterFrameSize)
	if err != nil {
		return Roster{}, err
	}
	var ro Roster
	r.array(ro.ID[:], "id")
	r.array(ro.Group[:], "group")
	ro.Generation = r.u64("generation")
	r.rosterLists(&ro)
	if err := r.end(); err != nil {
		return Roster{}, err
	}
	if err := checkRoster(ro); err != nil {
		return Roster{}, err
	}
	return ro, nil
}

// rosterLists reads the name, the changes and the members into ro, counts
// checked before anything is allocated.
func (r *reader) rosterLists(ro *Roster) {
	name := r.take(int(r.u8("name length")), "name")
	nc := int(r.u8("change count"))
	if r.err == nil && nc > MaxRosterChanges {
		r.fail(fmt.Errorf("%d changes over %d: %w", nc, MaxRosterChanges, ErrMalformed))
	}
	if r.err == nil && nc > 0 {
		if nc*3 > len(r.b) { // the shortest change is 3 bytes: check before allocating
			r.fail(fmt.Errorf("changes: truncated: %w", ErrMalformed))
		} else {
			ro.Changes = make([]RosterChange, nc)
		}
	}
	for i := range ro.Changes {
		ro.Changes[i].Op = RosterOp(r.u8("change op"))
		ro.Changes[i].Address = r.address("change address")
	}
	nm := int(r.u16("member count"))
	if r.err == nil && nm > MaxGroupMembers {
		r.fail(fmt.Errorf("%d members over %d: %w", nm, MaxGroupMembers, ErrMalformed))
	}
	if r.err == nil && nm > 0 {
		if nm*3 > len(r.b) {
			r.fail(fmt.Errorf("members: truncated: %w", ErrMalformed))
		} else {
			ro.Members = make([]RosterMember, nm)
		}
	}
	for i := range ro.Members {
		ro.Members[i].Admin = r.flag("member role")
		ro.Members[i].Address = r.address("member address")
	}
	if r.err == nil {
		ro.Name = string(name)
	}
}

// EncodeNotAMember returns a not_a_member frame's bytes.
func EncodeNotAMember(n NotAMember) ([]byte, error) {
	b := make([]byte, 0, NotAMemberSize)
	b = append(b, FrameVersion, byte(FrameNotAMember))
	b = append(b, n.ID[:]...)
	b = append(b, n.Group[:]...)
	return binary.BigEndian.AppendUint64(b, n.Generation), nil
}

// DecodeNotAMember parses a not_a_member frame: exactly NotAMemberSize bytes;
// like an acknowledgement, a longer input up to MaxFrameSize is ErrMalformed.
func DecodeNotAMember(b []byte) (NotAMember, error) {
	r, err := groupReader(b, FrameNotAMember, MaxFrameSize)
	if err != nil {
		return NotAMember{}, err
	}
	var n NotAMember
	r.array(n.ID[:], "id")
	r.array(n.Group[:], "group")
	n.Generation = r.u64("generation")
	if err := r.end(); err != nil {
		return NotAMember{}, err
	}
	return n, nil
}

// groupReader checks the size, the version and the kind of a group frame and
// returns a reader past them.
func groupReader(b []byte, kind FrameKind, max int) (*reader, error) {
	if len(b) > max {
		return nil, ErrMessageTooLarge
	}
	r := &reader{b: b}
	r.version(FrameVersion)
	if k := FrameKind(r.u8("kind")); r.err == nil && k != kind {
		r.fail(fmt.Errorf("frame kind %d, want %d: %w", k, kind, ErrMalformed))
	}
	return r, r.err
}

// checkRoster checks what the encoder and the decoder both require beyond
// lengths: a name, a generation of at least 1, known operations, canonical
// device addresses, and changes and members each in strictly increasing address
// order (so each address once, and one encoding per roster).
func checkRoster(ro Roster) error {
	if err := CheckGroupName(ro.Name); err != nil {
		return err
	}
	if ro.Generation == 0 {
		return fmt.Errorf("roster generation 0: %w", ErrMalformed)
	}
	for i, c := range ro.Changes {
		if c.Op < RosterAdd || c.Op > RosterAdmin {
			return fmt.Errorf("roster op %d: %w", c.Op, ErrMalformed)
		}
		if err := CheckDeviceAddress(c.Address); err != nil {
			return fmt.Errorf("change address: %w", err)
		}
		if i > 0 && ro.Changes[i-1].Address >= c.Address {
			return fmt.Errorf("changes out of address order at %d: %w", i, ErrMalformed)
		}
	}
	for i, m := range ro.Members {
		if err := CheckDeviceAddress(m.Address); err != nil {
			return fmt.Errorf("member address: %w", err)
		}
		if i > 0 && ro.Members[i-1].Address >= m.Address {
			return fmt.Errorf("members out of address order at %d: %w", i, ErrMalformed)
		}
	}
	return nil
}

// CheckGroupName checks a group name: 1 to MaxGroupNameSize bytes of valid
// UTF-8 with no character IsControl names (so no name can act on a terminal
// or turn a line around) and no '/', so that a name is never taken for an
// address.
func CheckGroupName(name string) error {
	if len(name) < 1 || len(name) > MaxGroupNameSize {
		return fmt.Errorf("group name length %d outside 1..%d: %w", len(name), MaxGroupNameSize, ErrMalformed)
	}
	if !utf8.ValidString(name) {
		return fmt.Errorf("group name is not UTF-8: %w", ErrMalformed)
	}
	for _, c := range name {
		if IsControl(c) || c == '/' {
			return fmt.Errorf("group name holds %q: %w", c, ErrMalformed)
		}
	}
	return nil
}
