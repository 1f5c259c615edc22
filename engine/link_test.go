package engine_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/wire"
)

// linkPair runs the ceremony up to the offer between a new device and a
// host offering alice's account.
func linkPair(t *testing.T) (*engine.LinkNew, *engine.LinkHost, engine.LinkCode, *engine.AccountKey, wire.DeviceList) {
	t.Helper()
	k, err := engine.NewAccountKey(engine.SystemRandom{})
	if err != nil {
		t.Fatal(err)
	}
	id1, _ := engine.NewIdentity(engine.SystemRandom{})
	l1, err := engine.FirstDeviceList(k, id1, engine.MustParseAddress("alice/1"), 100)
	if err != nil {
		t.Fatal(err)
	}
	n, err := engine.NewLinkNew(engine.SystemRandom{})
	if err != nil {
		t.Fatal(err)
	}
	hello := n.Hello()
	code := n.Code("ws://relay.example", wire.MailboxID{7})
	parsed, err := engine.ParseLinkCode(code.String())
	if err != nil || parsed != code {
		t.Fatalf("ParseLinkCode(String()) = %+v, %v; want %+v", parsed, err, code)
	}
	h, err := engine.NewLinkHost(engine.SystemRandom{}, parsed, hello,
		engine.LinkOfferData{User: "alice", AccountKey: k.Public(), Number: engine.NextDeviceNumber(l1)})
	if err != nil {
		t.Fatal(err)
	}
	return n, h, code, k, l1
}

// TestLinkCeremony: both sides show the same digits; the host gets the
// new device's countersigned entry, the new device a package that names
// it; each seal opens only on its side.
func TestLinkCeremony(t *testing.T) {
	n, h, _, k, l1 := linkPair(t)
	check, offer, err := n.TakeOffer(h.Offer())
	if err != nil {
		t.Fatal(err)
	}
	if check != h.Check() || len(check) != 6 {
		t.Fatalf("digits %q and %q, want the same six", check, h.Check())
	}
	if offer.User != "alice" || offer.Number != 2 || offer.AccountKey != k.Public() {
		t.Fatalf("offer %+v", offer)
	}
	id2, _ := engine.NewIdentity(engine.SystemRandom{})
	e, err := h.TakeJoin(n.Join(id2), 200)
	if err != nil {
		t.Fatal(err)
	}
	if e.SigningKey != id2.Public().SigningKey || e.Number != 2 {
		t.Fatalf("entry %+v", e)
	}
	next, err := engine.NextDeviceList(k, l1, e)
	if err != nil {
		t.Fatal(err)
	}
	sealed, err := h.Package(wire.LinkPackageData{AccountKey: k.Public(), List: next,
		Contacts: []wire.LinkContact{{Address: "bob/1", Name: "Bob"}}, Linker: 1})
	if err != nil {
		t.Fatal(err)
	}
	p, err := n.TakePackage(sealed)
	if err != nil {
		t.Fatal(err)
	}
	if p.List.Generation != 2 || len(p.Contacts) != 1 || p.Linker != 1 {
		t.Fatalf("package %+v", p)
	}
	// A linker the list does not name active, or the new device itself,
	// is refused: group states from it would all be refused.
	for _, linker := range []uint32{3, 2} {
		sealed, _ := h.Package(wire.LinkPackageData{AccountKey: k.Public(), List: next, Linker: linker})
		if _, err := n.TakePackage(sealed); !errors.Is(err, engine.ErrLinkBroken) {
			t.Errorf("a package naming linker %d: %v, want ErrLinkBroken", linker, err)
		}
	}
	if err := h.TakeDone(n.Done()); err != nil {
		t.Fatal(err)
	}
	// A package for someone else's entry is refused.
	other, _ := engine.NewIdentity(engine.SystemRandom{})
	wrong, _ := engine.NextDeviceList(k, l1, engine.DeviceEntryFor(other, "alice", k.Public(), 2, 200))
	sealed, _ = h.Package(wire.LinkPackageData{AccountKey: k.Public(), List: wrong})
	if _, err := n.TakePackage(sealed); !errors.Is(err, engine.ErrLinkBroken) {
		t.Errorf("a package not naming the new device: %v, want ErrLinkBroken", err)
	}
}

// TestLinkTampering: a swapped hello, a changed byte of a sealed step, a
// code from another exchange: each is ErrLinkBroken.
func TestLinkTampering(t *testing.T) {
	n, _, code, k, _ := linkPair(t)
	other, _ := engine.NewLinkNew(engine.SystemRandom{})
	if _, err := engine.NewLinkHost(engine.SystemRandom{}, code, other.Hello(), engine.LinkOfferData{User: "alice", AccountKey: k.Public(), Number: 2}); !errors.Is(err, engine.ErrLinkBroken) {
		t.Errorf("a hello not matching the code: %v, want ErrLinkBroken", err)
	}
	_, h, _, _, _ := linkPair(t) // a host of another exchange
	if _, _, err := n.TakeOffer(h.Offer()); !errors.Is(err, engine.ErrLinkBroken) {
		t.Errorf("an offer of another exchange: %v, want ErrLinkBroken", err)
	}
	n, h, _, _, _ = linkPair(t)
	offer := h.Offer()
	bad := bytes.Clone(offer)
	bad[len(bad)-1] ^= 1
	if _, _, err := n.TakeOffer(bad); !errors.Is(err, engine.ErrLinkBroken) {
		t.Errorf("a flipped byte of the offer: %v, want ErrLinkBroken", err)
	}
	if _, _, err := n.TakeOffer(offer); err != nil {
		t.Fatal(err)
	}
	id2, _ := engine.NewIdentity(engine.SystemRandom{})
	join := n.Join(id2)
	join[len(join)-1] ^= 1
	if _, err := h.TakeJoin(join, 1); !errors.Is(err, engine.ErrLinkBroken) {
		t.Errorf("a flipped byte of the join: %v, want ErrLinkBroken", err)
	}
	if _, err := engine.ParseLinkCode("not a code"); !errors.Is(err, engine.ErrLinkCode) {
		t.Errorf("ParseLinkCode of junk: %v", err)
	}
}
