package wire

import (
	"encoding/binary"
	"fmt"
	"unicode/utf8"
)

// Linking a device (issue 33): what the new device and the device holding
// the account key say to each other through a provisioning mailbox
// (relayprovision.go). Each payload is a LinkMessage (frame kind 12): a
// step and its body, sealed by the engine for every step after the first.
// The last sealed body the key holder sends holds a LinkPackage (frame kind 13):
// what the new device needs to start as a device of the account.
//
// LinkMessage layout (docs/wire-format.md):
//
//	u8  version (LinkVersion)
//	u8  kind 12
//	u8  step (1 hello, 2 offer, 3 join, 4 package, 5 done)
//	u32 body length (0..MaxLinkBody), body
//
// LinkPackage layout:
//
//	u8  version (LinkVersion)
//	u8  kind 13
//	[32] account key (Ed25519)
//	u32 length (1..MaxDeviceListSize), device list
//	u16 contact count (0..MaxLinkContacts), each: address, u8 name length
//	    (1..MaxLinkNameSize), name (UTF-8)
//	u16 blocked count (0..MaxLinkBlocked), each: address
//	u8  settings flags (bit 0: accept everyone; other bits must be 0)
//
// LinkPackage version 2 (issue 34: history at link time) is version 1
// with the version byte 2 and a history section after the flags:
//
//	[16] archive ID, [32] archive key (a keyed archive, archivekeyed.go)
//	u64  records before the archive's end record (1..)
//	u16  length (1..MaxLinkManifestSize), file manifest of the blob that
//	     holds the archive (file.go: its blob, chunk key and digest)
//
// A package without history is written as version 1, so version 1's
// vectors hold.
//
// LinkPackage version 3 (issue 33: who linked the device) is version 1
// with the version byte 3 and, after the flags, the number of the device
// that linked the new one and the history, which is optional:
//
//	u32 linker's device number (1..2^31-1)
//	u8  history (0 none, 1 the version 2 history section follows)
//
// It is written only when Linker is set (LinkPackageData); a package
// without it is written as version 1 or 2 as before, so that a build that
// knows only those can still be linked by device 1. A build that knows
// only versions 1 and 2 refuses version 3 at its version byte
// (ErrUnsupportedVersion).

// LinkVersion is the version byte of LinkMessage and LinkPackage.
const LinkVersion = 1

// LinkPackageHistoryVersion is the version byte of a LinkPackage that
// carries history (LinkHistory).
const LinkPackageHistoryVersion = 2

// LinkPackageLinkerVersion is the version byte of a LinkPackage that names
// the device that linked the new one (Linker), with or without history.
const LinkPackageLinkerVersion = 3

// MaxLinkManifestSize bounds the history's manifest in a package: a
// manifest with the longest name and media type fits.
const MaxLinkManifestSize = 1024

// Frame kinds of linking (a kind byte of their own, beside the frame kinds
// inside the ratchet: they never travel there).
const (
	FrameLinkMessage = 12
	FrameLinkPackage = 13
)

// LinkStep names a LinkMessage's place in the ceremony.
type LinkStep uint8

// Link steps, in the order they are sent.
const (
	LinkHello   LinkStep = 1 // new device: its ML-KEM encapsulation key, in the clear
	LinkOffer   LinkStep = 2 // device 1: its ephemeral X25519 key, the KEM ciphertext, the sealed account
	LinkJoin    LinkStep = 3 // new device: its sealed keys and countersignature
	LinkPackage LinkStep = 4 // device 1: the sealed LinkPackage (LinkPackageData)
	LinkDone    LinkStep = 5 // new device: sealed, it stored the package
)

func (s LinkStep) valid() bool { return s >= LinkHello && s <= LinkDone }

// Bounds of linking.
const (
	// MaxLinkBody is the largest LinkMessage body: a provisioning payload
	// less the message's own header.
	MaxLinkBody = MaxProvisionPayload - 7
	// MaxLinkContacts is the most named contacts a package carries, and
	// MaxLinkBlocked the most blocked senders: together with the largest
	// device list and the seal they fit MaxLinkBody.
	MaxLinkContacts = 1024
	MaxLinkBlocked  = 256
	// MaxLinkNameSize is the longest contact name (the engine's
	// MaxContactName).
	MaxLinkNameSize = 64
	// MaxLinkPackageSize is the largest encoded LinkPackageData.
	MaxLinkPackageSize = 2 + 32 + 4 + MaxDeviceListSize + 2 + MaxLinkContacts*(1+MaxAddressSize+1+MaxLinkNameSize) +
		2 + MaxLinkBlocked*(1+MaxAddressSize) + 1 + 4 + 1 + 16 + 32 + 8 + 2 + MaxLinkManifestSize
)

// LinkMessage is one payload of the ceremony.
type LinkMessage struct {
	Step LinkStep
	Body []byte
}

// EncodeLinkMessage returns m's bytes: an unknown step is ErrMalformed, a
// body over MaxLinkBody ErrMessageTooLarge.
func EncodeLinkMessage(m LinkMessage) ([]byte, error) {
	if !m.Step.valid() {
		return nil, fmt.Errorf("wire: encode link message: step %d: %w", m.Step, ErrMalformed)
	}
	if len(m.Body) > MaxLinkBody {
		return nil, fmt.Errorf("wire: encode link message: body of %d bytes over %d: %w", len(m.Body), MaxLinkBody, ErrMessageTooLarge)
	}
	b := make([]byte, 0, 7+len(m.Body))
	b = append(b, LinkVersion, FrameLinkMessage, byte(m.Step))
	b = binary.BigEndian.AppendUint32(b, uint32(len(m.Body)))
	return append(b, m.Body...), nil
}

// LinkMessageHeader returns the first three bytes of an encoded message of
// step s (version, kind, step): what the engine binds each seal to.
func LinkMessageHeader(s LinkStep) []byte { return []byte{LinkVersion, FrameLinkMessage, byte(s)} }

// DecodeLinkMessage parses a LinkMessage: over MaxProvisionPayload is
// ErrMessageTooLarge, another version ErrUnsupportedVersion, another kind,
// an unknown step, truncation or trailing bytes ErrMalformed.
func DecodeLinkMessage(b []byte) (LinkMessage, error) {
	if len(b) > MaxProvisionPayload {
		return LinkMessage{}, fmt.Errorf("wire: decode link message: %d bytes over %d: %w", len(b), MaxProvisionPayload, ErrMessageTooLarge)
	}
	r := reader{b: b}
	r.version(LinkVersion)
	if k := r.u8("kind"); r.err == nil && k != FrameLinkMessage {
		r.fail(fmt.Errorf("kind %d, want %d: %w", k, FrameLinkMessage, ErrMalformed))
	}
	m := LinkMessage{Step: LinkStep(r.u8("step"))}
	if r.err == nil && !m.Step.valid() {
		r.fail(fmt.Errorf("step %d: %w", m.Step, ErrMalformed))
	}
	body := r.sized("body", 0, MaxLinkBody)
	if r.err == nil && len(body) > 0 {
		m.Body = append([]byte(nil), body...)
	}
	if err := r.end(); err != nil {
		return LinkMessage{}, fmt.Errorf("wire: decode link message: %w", err)
	}
	return m, nil
}

// LinkContact is a named contact in a package.
type LinkContact struct {
	Address string
	Name    string
}

// LinkPackageData is what device 1 gives a new device of its account.
type LinkPackageData struct {
	AccountKey [32]byte
	List       DeviceList
	Contacts   []LinkContact
	Blocked    []string
	AcceptAll  bool // the profile accepts everyone (no message requests)
	// History, when set, is the keyed archive of the account's history
	// that waits for the new device as a blob (versions 2 and 3).
	History *LinkHistory
	// Linker is the number of the device that linked the new one (the
	// account key holder): the one device whose group states the new
	// device takes. 0 is not named (versions 1 and 2: the new device
	// takes device 1 as its linker); set, the package is version 3.
	Linker uint32
}

// LinkHistory names the history a new device imports: a keyed archive,
// uploaded as a blob like a file (Manifest), and sealed under Key.
type LinkHistory struct {
	Archive  [16]byte
	Key      [32]byte
	Records  uint64 // records before the archive's end record
	Manifest FileManifest
}

const linkFlagAcceptAll = 1

func checkLinkPackage(p *LinkPackageData) error {
	if len(p.Contacts) > MaxLinkContacts {
		return fmt.Errorf("%d contacts over %d: %w", len(p.Contacts), MaxLinkContacts, ErrMessageTooLarge)
	}
	if len(p.Blocked) > MaxLinkBlocked {
		return fmt.Errorf("%d blocked senders over %d: %w", len(p.Blocked), MaxLinkBlocked, ErrMessageTooLarge)
	}
	for i, c := range p.Contacts {
		if err := checkAddress(c.Address); err != nil {
			return fmt.Errorf("contact %d: %w", i, err)
		}
		if len(c.Name) == 0 || len(c.Name) > MaxLinkNameSize || !utf8.ValidString(c.Name) {
			return fmt.Errorf("contact %d: name of %d bytes, want 1..%d of UTF-8: %w", i, len(c.Name), MaxLinkNameSize, ErrMalformed)
		}
	}
	for i, a := range p.Blocked {
		if err := checkAddress(a); err != nil {
			return fmt.Errorf("blocked sender %d: %w", i, err)
		}
	}
	if h := p.History; h != nil && h.Records == 0 {
		return fmt.Errorf("history of no records: %w", ErrMalformed)
	}
	if p.Linker > maxDeviceNumber {
		return fmt.Errorf("linker device number %d over %d: %w", p.Linker, maxDeviceNumber, ErrMalformed)
	}
	return nil
}

// EncodeLinkPackage returns p's bytes: version 3 when p names its Linker,
// else version 2 with history and version 1 without. More contacts or blocked senders
// than the bounds are ErrMessageTooLarge; a bad address, an empty, long or
// non-UTF-8 name, a linker number over 2^31-1, or a list
// EncodeDeviceList refuses ErrMalformed.
func EncodeLinkPackage(p LinkPackageData) ([]byte, error) {
	if err := checkLinkPackage(&p); err != nil {
		return nil, fmt.Errorf("wire: encode link package: %w", err)
	}
	list, err := EncodeDeviceList(p.List)
	if err != nil {
		return nil, fmt.Errorf("wire: encode link package: %w", err)
	}
	var manifest []byte
	version := byte(LinkVersion)
	if p.History != nil {
		if manifest, err = EncodeManifest(p.History.Manifest); err != nil {
			return nil, fmt.Errorf("wire: encode link package: history: %w", err)
		}
		if len(manifest) > MaxLinkManifestSize {
			return nil, fmt.Errorf("wire: encode link package: manifest of %d bytes over %d: %w", len(manifest), MaxLinkManifestSize, ErrMalformed)
		}
		version = LinkPackageHistoryVersion
	}
	if p.Linker != 0 {
		version = LinkPackageLinkerVersion
	}
	b := []byte{version, FrameLinkPackage}
	b = append(b, p.AccountKey[:]...)
	b = binary.BigEndian.AppendUint32(b, uint32(len(list)))
	b = append(b, list...)
	b = binary.BigEndian.AppendUint16(b, uint16(len(p.Contacts)))
	for _, c := range p.Contacts {
		b = appendAddress(b, c.Address)
		b = append(b, byte(len(c.Name)))
		b = append(b, c.Name...)
	}
	b = binary.BigEndian.AppendUint16(b, uint16(len(p.Blocked)))
	for _, a := range p.Blocked {
		b = appendAddress(b, a)
	}
	var flags byte
	if p.AcceptAll {
		flags |= linkFlagAcceptAll
	}
	b = append(b, flags)
	if version == LinkPackageLinkerVersion {
		b = binary.BigEndian.AppendUint32(b, p.Linker)
		if p.History != nil {
			b = append(b, 1)
		} else {
			b = append(b, 0)
		}
	}
	if h := p.History; h != nil {
		b = append(b, h.Archive[:]...)
		b = append(b, h.Key[:]...)
		b = binary.BigEndian.AppendUint64(b, h.Records)
		b = binary.BigEndian.AppendUint16(b, uint16(len(manifest)))
		b = append(b, manifest...)
	}
	return b, nil
}

// DecodeLinkPackage parses a package: over MaxLinkPackageSize is
// ErrMessageTooLarge, another version ErrUnsupportedVersion, and what
// EncodeLinkPackage refuses, another kind, an unknown flag, a version 3
// linker number of 0 or a history byte other than 0 or 1, truncation or
// trailing bytes ErrMalformed.
func DecodeLinkPackage(b []byte) (LinkPackageData, error) {
	if len(b) > MaxLinkPackageSize {
		return LinkPackageData{}, fmt.Errorf("wire: decode link package: %d bytes over %d: %w", len(b), MaxLinkPackageSize, ErrMessageTooLarge)
	}
	r := reader{b: b}
	version := r.versions(LinkVersion, LinkPackageHistoryVersion, LinkPackageLinkerVersion)
	if k := r.u8("kind"); r.err == nil && k != FrameLinkPackage {
		r.fail(fmt.Errorf("kind %d, want %d: %w", k, FrameLinkPackage, ErrMalformed))
	}
	var p LinkPackageData
	r.array(p.AccountKey[:], "account key")
	p.List = r.sizedDeviceList()
	n := int(r.u16("contact count"))
	if r.err == nil && n > MaxLinkContacts {
		r.fail(fmt.Errorf("%d contacts over %d: %w", n, MaxLinkContacts, ErrMalformed))
	}
	for i := 0; i < n && r.err == nil; i++ {
		c := LinkContact{Address: r.address("contact address")}
		c.Name = string(r.take(int(r.u8("name length")), "name"))
		p.Contacts = append(p.Contacts, c)
	}
	n = int(r.u16("blocked count"))
	if r.err == nil && n > MaxLinkBlocked {
		r.fail(fmt.Errorf("%d blocked senders over %d: %w", n, MaxLinkBlocked, ErrMalformed))
	}
	for i := 0; i < n && r.err == nil; i++ {
		p.Blocked = append(p.Blocked, r.address("blocked address"))
	}
	flags := r.u8("settings flags")
	if r.err == nil && flags&^linkFlagAcceptAll != 0 {
		r.fail(fmt.Errorf("unknown settings flags %#x: %w", flags, ErrMalformed))
	}
	p.AcceptAll = flags&linkFlagAcceptAll != 0
	history := version == LinkPackageHistoryVersion
	if version == LinkPackageLinkerVersion {
		p.Linker = r.u32("linker device number")
		if r.err == nil && (p.Linker == 0 || p.Linker > maxDeviceNumber) {
			r.fail(fmt.Errorf("linker device number %d outside 1..%d: %w", p.Linker, maxDeviceNumber, ErrMalformed))
		}
		switch hb := r.u8("history"); {
		case r.err != nil:
		case hb == 1:
			history = true
		case hb != 0:
			r.fail(fmt.Errorf("history byte %d, want 0 or 1: %w", hb, ErrMalformed))
		}
	}
	if history && r.err == nil {
		var h LinkHistory
		r.array(h.Archive[:], "archive id")
		r.array(h.Key[:], "archive key")
		h.Records = r.u64("archive records")
		manifest := r.sized16b("history manifest", 1, MaxLinkManifestSize)
		if r.err == nil {
			m, err := DecodeManifest(manifest)
			if err != nil {
				r.fail(fmt.Errorf("history manifest: %w", err))
			}
			h.Manifest = m
		}
		p.History = &h
	}
	if r.err == nil {
		if err := checkLinkPackage(&p); err != nil {
			r.fail(err)
		}
	}
	if err := r.end(); err != nil {
		return LinkPackageData{}, fmt.Errorf("wire: decode link package: %w", err)
	}
	return p, nil
}

// sized16b reads a u16 length in lo..hi and then that many bytes, without
// copying them.
func (r *reader) sized16b(field string, lo, hi int) []byte {
	n := int(r.u16(field + " length"))
	if r.err != nil {
		return nil
	}
	if n < lo || n > hi {
		r.fail(fmt.Errorf("%s length %d outside %d..%d: %w", field, n, lo, hi, ErrMalformed))
		return nil
	}
	return r.take(n, field)
}
