package engine

import (
	"crypto/ecdh"
	"crypto/ed25519"
	"crypto/hkdf"
	"crypto/mlkem"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/parley-chat/parley/wire"
	"golang.org/x/crypto/chacha20poly1305"
)

// Linking a device (issue 33). The new device opens a provisioning mailbox
// and shows a code: the relay, the mailbox, its ephemeral X25519 key and
// the digest of its ephemeral ML-KEM-768 key (the key itself, 1,184 bytes,
// waits in the mailbox as the hello, so that the code stays short enough
// to copy). Device 1 takes the code, checks the hello against the digest,
// and answers with an ephemeral X25519 key and an encapsulation to the
// ML-KEM key. Both derive the same secrets from the two shared secrets and
// the transcript: two sealing keys, one per direction, and six digits that
// both screens show. Whoever sits between them without the code cannot
// make the digits agree; a relay that swaps the hello is caught by the
// digest.
//
// Then, sealed: the new device's keys and its countersignature of its
// entry (join), the package (LinkPackageData), and the new device's done.

// Labels of the ceremony's derivations.
const (
	labelLinkTranscript = "parley/v1/link-transcript"
	labelLinkKeys       = "parley/v1/link-keys"
	labelLinkCheck      = "parley/v1/link-check"
	labelLinkCode       = "parley/v1/link-code"
)

// linkCodeVersion is the first byte of an encoded code.
const linkCodeVersion = 1

// ErrLinkCode means a code is not one `parley link` printed.
var ErrLinkCode = errors.New("not a link code")

// ErrLinkBroken means a step of the ceremony failed its check: a hello
// that does not match the code, a seal that does not open, a join whose
// countersignature does not verify, a package that does not name the new
// device. Said vaguely on purpose.
var ErrLinkBroken = errors.New("the linking exchange does not check out")

// LinkCode is what the new device shows and device 1 types.
type LinkCode struct {
	Relay   string
	Mailbox wire.MailboxID
	DH      [32]byte // the new device's ephemeral X25519 key
	KEM     [32]byte // SHA-256 of its ML-KEM-768 encapsulation key
}

// String encodes the code: base64url without padding of a version byte,
// the mailbox, both keys and the relay URL.
func (c LinkCode) String() string {
	b := []byte{linkCodeVersion}
	b = append(b, c.Mailbox[:]...)
	b = append(b, c.DH[:]...)
	b = append(b, c.KEM[:]...)
	b = append(b, c.Relay...)
	return base64.RawURLEncoding.EncodeToString(b)
}

// ParseLinkCode reads what String wrote.
func ParseLinkCode(s string) (LinkCode, error) {
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || len(b) < 1+16+32+32+1 || len(b) > 1+16+32+32+512 || b[0] != linkCodeVersion {
		return LinkCode{}, ErrLinkCode
	}
	var c LinkCode
	copy(c.Mailbox[:], b[1:])
	copy(c.DH[:], b[17:])
	copy(c.KEM[:], b[49:])
	c.Relay = string(b[81:])
	return c, nil
}

// linkSecrets are what both sides derive.
type linkSecrets struct {
	toOld, toNew [32]byte // sealing keys, by direction
	check        string   // six digits
}

func deriveLink(dh, kem []byte, code LinkCode, hello, offerDH, ct []byte) linkSecrets {
	t := sha256.New()
	t.Write([]byte(labelLinkTranscript))
	t.Write([]byte(code.String()))
	t.Write(hello)
	t.Write(offerDH)
	t.Write(ct)
	transcript := t.Sum(nil)
	ikm := append(append([]byte(nil), dh...), kem...)
	out, err := hkdf.Key(sha256.New, ikm, transcript, labelLinkKeys, 64+4)
	if err != nil {
		panic("engine: hkdf: " + err.Error())
	}
	var s linkSecrets
	copy(s.toOld[:], out[:32])
	copy(s.toNew[:], out[32:64])
	s.check = fmt.Sprintf("%06d", binary.BigEndian.Uint32(out[64:])%1000000)
	return s
}

// sealLink seals body for step with key (each step is sent once per
// direction, so the step is the nonce).
func sealLink(key [32]byte, step wire.LinkStep, body []byte) []byte {
	aead, _ := chacha20poly1305.New(key[:])
	nonce := make([]byte, aead.NonceSize())
	nonce[0] = byte(step)
	return aead.Seal(nil, nonce, body, wire.LinkMessageHeader(step))
}

func openLink(key [32]byte, step wire.LinkStep, sealed []byte) ([]byte, error) {
	aead, _ := chacha20poly1305.New(key[:])
	nonce := make([]byte, aead.NonceSize())
	nonce[0] = byte(step)
	b, err := aead.Open(nil, nonce, sealed, wire.LinkMessageHeader(step))
	if err != nil {
		return nil, ErrLinkBroken
	}
	return b, nil
}

// linkMessage encodes step and body.
func linkMessage(step wire.LinkStep, body []byte) []byte {
	b, err := wire.EncodeLinkMessage(wire.LinkMessage{Step: step, Body: body})
	if err != nil {
		panic(err) // bodies are bounded by their makers
	}
	return b
}

// readLink decodes payload as the message of step.
func readLink(payload []byte, step wire.LinkStep) ([]byte, error) {
	m, err := wire.DecodeLinkMessage(payload)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrLinkBroken, err)
	}
	if m.Step != step {
		return nil, fmt.Errorf("%w: step %d, want %d", ErrLinkBroken, m.Step, step)
	}
	return m.Body, nil
}

// LinkNew is the new device's side of the ceremony.
type LinkNew struct {
	dh      *ecdh.PrivateKey
	kem     *mlkem.DecapsulationKey768
	code    LinkCode
	secrets linkSecrets
	offer   LinkOfferData
	id      *Identity
}

// LinkOfferData is what device 1 tells the new device of the account.
type LinkOfferData struct {
	User       string
	AccountKey [32]byte
	Number     uint32
}

// NewLinkNew makes the new device's ephemeral keys from r.
func NewLinkNew(r io.Reader) (*LinkNew, error) {
	var seed [32 + mlkem.SeedSize]byte
	if _, err := io.ReadFull(r, seed[:]); err != nil {
		return nil, fmt.Errorf("link: %w", err)
	}
	dh, err := ecdh.X25519().NewPrivateKey(seed[:32])
	if err != nil {
		return nil, err
	}
	kem, err := mlkem.NewDecapsulationKey768(seed[32:])
	if err != nil {
		return nil, err
	}
	return &LinkNew{dh: dh, kem: kem}, nil
}

// Hello returns the first payload, to send as soon as the mailbox opens.
func (n *LinkNew) Hello() []byte {
	return linkMessage(wire.LinkHello, n.kem.EncapsulationKey().Bytes())
}

// Code returns the code for the mailbox at relay.
func (n *LinkNew) Code(relay string, mailbox wire.MailboxID) LinkCode {
	n.code = LinkCode{Relay: relay, Mailbox: mailbox, KEM: sha256.Sum256(n.kem.EncapsulationKey().Bytes())}
	copy(n.code.DH[:], n.dh.PublicKey().Bytes())
	return n.code
}

// TakeOffer reads device 1's offer and returns the six digits to show.
func (n *LinkNew) TakeOffer(payload []byte) (string, LinkOfferData, error) {
	body, err := readLink(payload, wire.LinkOffer)
	if err != nil {
		return "", LinkOfferData{}, err
	}
	if len(body) < 32+mlkem.CiphertextSize768 {
		return "", LinkOfferData{}, ErrLinkBroken
	}
	peer, err := ecdh.X25519().NewPublicKey(body[:32])
	if err != nil {
		return "", LinkOfferData{}, ErrLinkBroken
	}
	dh, err := n.dh.ECDH(peer)
	if err != nil {
		return "", LinkOfferData{}, ErrLinkBroken
	}
	ct := body[32 : 32+mlkem.CiphertextSize768]
	ss, err := n.kem.Decapsulate(ct)
	if err != nil {
		return "", LinkOfferData{}, ErrLinkBroken
	}
	n.secrets = deriveLink(dh, ss, n.code, n.kem.EncapsulationKey().Bytes(), body[:32], ct)
	plain, err := openLink(n.secrets.toNew, wire.LinkOffer, body[32+mlkem.CiphertextSize768:])
	if err != nil || len(plain) < 32+4+1 {
		return "", LinkOfferData{}, ErrLinkBroken
	}
	o := LinkOfferData{Number: binary.BigEndian.Uint32(plain[32:]), User: string(plain[36:])}
	copy(o.AccountKey[:], plain)
	if wire.CheckDeviceAddress(Address{User: o.User, Device: o.Number}.String()) != nil {
		return "", LinkOfferData{}, ErrLinkBroken
	}
	n.offer = o
	return n.secrets.check, o, nil
}

// Join returns the sealed join: id's public keys and its countersignature
// of its entry in the offered account.
func (n *LinkNew) Join(id *Identity) []byte {
	n.id = id
	pub := id.Public()
	sig := id.Sign(wire.DeviceEntryMessage(n.offer.User, n.offer.AccountKey, n.offer.Number, pub.SigningKey, pub.DHKey))
	body := append(append(append([]byte(nil), pub.SigningKey[:]...), pub.DHKey[:]...), sig...)
	return linkMessage(wire.LinkJoin, sealLink(n.secrets.toOld, wire.LinkJoin, body))
}

// TakePackage opens the package and checks it: the account key is the
// offered one and signs the list, and the list names this device, active,
// with its keys.
func (n *LinkNew) TakePackage(payload []byte) (wire.LinkPackageData, error) {
	body, err := readLink(payload, wire.LinkPackage)
	if err != nil {
		return wire.LinkPackageData{}, err
	}
	plain, err := openLink(n.secrets.toNew, wire.LinkPackage, body)
	if err != nil {
		return wire.LinkPackageData{}, err
	}
	p, err := wire.DecodeLinkPackage(plain)
	if err != nil {
		return wire.LinkPackageData{}, fmt.Errorf("%w: %w", ErrLinkBroken, err)
	}
	l := p.List
	msg, err := deviceListMessage(l)
	switch {
	case err != nil, p.AccountKey != n.offer.AccountKey, l.AccountKey != p.AccountKey, l.User != n.offer.User,
		!ed25519.Verify(l.AccountKey[:], msg, l.Signature[:]), !ActiveDevice(l, n.offer.Number, n.id.Public().SigningKey):
		return wire.LinkPackageData{}, ErrLinkBroken
	}
	// A linker the list does not name active (or this device itself) would
	// leave every group state refused here: the package is not the
	// account's.
	if p.Linker != 0 {
		if e, ok := findEntry(&l, p.Linker); !ok || e.State != wire.DeviceActive || p.Linker == n.offer.Number {
			return wire.LinkPackageData{}, fmt.Errorf("%w: the package names device %d as its linker, not an active other device of the list", ErrLinkBroken, p.Linker)
		}
	}
	return p, nil
}

// Done returns the sealed done.
func (n *LinkNew) Done() []byte {
	return linkMessage(wire.LinkDone, sealLink(n.secrets.toOld, wire.LinkDone, []byte("stored")))
}

// LinkHost is device 1's side of the ceremony.
type LinkHost struct {
	secrets linkSecrets
	offer   LinkOfferData
	payload []byte
}

// NewLinkHost checks the hello against code and makes the offer of the
// account (user, its key, the new device's number). Check returns the six
// digits and Offer the payload to send.
func NewLinkHost(r io.Reader, code LinkCode, hello []byte, offer LinkOfferData) (*LinkHost, error) {
	ek, err := readLink(hello, wire.LinkHello)
	if err != nil {
		return nil, err
	}
	if sha256.Sum256(ek) != code.KEM {
		return nil, ErrLinkBroken
	}
	kemKey, err := mlkem.NewEncapsulationKey768(ek)
	if err != nil {
		return nil, ErrLinkBroken
	}
	peer, err := ecdh.X25519().NewPublicKey(code.DH[:])
	if err != nil {
		return nil, ErrLinkBroken
	}
	var seed [32]byte
	if _, err := io.ReadFull(r, seed[:]); err != nil {
		return nil, fmt.Errorf("link: %w", err)
	}
	eph, err := ecdh.X25519().NewPrivateKey(seed[:])
	if err != nil {
		return nil, err
	}
	dh, err := eph.ECDH(peer)
	if err != nil {
		return nil, ErrLinkBroken
	}
	ss, ct := kemKey.Encapsulate()
	h := &LinkHost{offer: offer}
	h.secrets = deriveLink(dh, ss, code, ek, eph.PublicKey().Bytes(), ct)
	plain := append(append([]byte(nil), offer.AccountKey[:]...), binary.BigEndian.AppendUint32(nil, offer.Number)...)
	plain = append(plain, offer.User...)
	body := append(append(append([]byte(nil), eph.PublicKey().Bytes()...), ct...), sealLink(h.secrets.toNew, wire.LinkOffer, plain)...)
	h.payload = linkMessage(wire.LinkOffer, body)
	return h, nil
}

// Check returns the six digits both screens show.
func (h *LinkHost) Check() string { return h.secrets.check }

// Offer returns the offer's payload.
func (h *LinkHost) Offer() []byte { return h.payload }

// TakeJoin opens the join and returns the new device's entry, its
// countersignature checked.
func (h *LinkHost) TakeJoin(payload []byte, linked int64) (wire.DeviceEntry, error) {
	body, err := readLink(payload, wire.LinkJoin)
	if err != nil {
		return wire.DeviceEntry{}, err
	}
	plain, err := openLink(h.secrets.toOld, wire.LinkJoin, body)
	if err != nil || len(plain) != 32+32+64 {
		return wire.DeviceEntry{}, ErrLinkBroken
	}
	e := wire.DeviceEntry{Number: h.offer.Number, Linked: linked, State: wire.DeviceActive}
	copy(e.SigningKey[:], plain)
	copy(e.DHKey[:], plain[32:])
	copy(e.Signature[:], plain[64:])
	if !ed25519.Verify(e.SigningKey[:], wire.DeviceEntryMessage(h.offer.User, h.offer.AccountKey, e.Number, e.SigningKey, e.DHKey), e.Signature[:]) {
		return wire.DeviceEntry{}, ErrLinkBroken
	}
	return e, nil
}

// Package seals p.
func (h *LinkHost) Package(p wire.LinkPackageData) ([]byte, error) {
	enc, err := wire.EncodeLinkPackage(p)
	if err != nil {
		return nil, fmt.Errorf("link package: %w", err)
	}
	return linkMessage(wire.LinkPackage, sealLink(h.secrets.toNew, wire.LinkPackage, enc)), nil
}

// TakeDone checks the new device's done.
func (h *LinkHost) TakeDone(payload []byte) error {
	body, err := readLink(payload, wire.LinkDone)
	if err != nil {
		return err
	}
	_, err = openLink(h.secrets.toOld, wire.LinkDone, body)
	return err
}
