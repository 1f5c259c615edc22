package wire_test

import (
	"errors"
	"slices"
	"testing"

	"github.com/parley-chat/parley/wire"
)

var linkMessageFormat = format[wire.LinkMessage]{
	file:   "link-message.txt",
	title:  "link message (frame kind 12)",
	fuzz:   "FuzzDecodeLinkMessage",
	encode: wire.EncodeLinkMessage,
	decode: wire.DecodeLinkMessage,
}

var linkPackageFormat = format[wire.LinkPackageData]{
	file:   "link-package.txt",
	title:  "link package (frame kind 13)",
	fuzz:   "FuzzDecodeLinkPackage",
	encode: wire.EncodeLinkPackage,
	decode: wire.DecodeLinkPackage,
}

var linkPackageLinkerFormat = format[wire.LinkPackageData]{
	file:   "link-package-v3.txt",
	title:  "link package naming its linker (frame kind 13, version 3)",
	fuzz:   "FuzzDecodeLinkPackage",
	encode: wire.EncodeLinkPackage,
	decode: wire.DecodeLinkPackage,
}

func linkPackageLinkerVectors() []vector[wire.LinkPackageData] {
	return []vector[wire.LinkPackageData]{
		{name: "linker", doc: `account key bytes a0.., the list one-device of device-list.txt, no contacts, none blocked,
				requests on; linked by device 3, no history`,
			v: wire.LinkPackageData{AccountKey: seq32(0xa0), List: oneDeviceList(), Linker: 3}},
		{name: "linker-history", doc: `account key bytes a0.., the list three-devices of device-list.txt; contact bob/1 "Bob";
				blocked mallory/1; accept everyone; linked by device 2147483647; history: archive id bytes 10..,
				archive key bytes 30.., 42 records, manifest "history" of 1000 bytes, application/octet-stream,
				chunk 1024, 1 chunk, key bytes 60.., blob bytes 70.., digest bytes 90..`,
			v: wire.LinkPackageData{AccountKey: seq32(0xa0), List: threeDeviceList(),
				Contacts: []wire.LinkContact{{Address: "bob/1", Name: "Bob"}}, Blocked: []string{"mallory/1"}, AcceptAll: true,
				Linker:  2147483647,
				History: &wire.LinkHistory{Archive: seq16(0x10), Key: seq32(0x30), Records: 42, Manifest: historyManifest()}}},
	}
}

func linkMessageVectors() []vector[wire.LinkMessage] {
	return []vector[wire.LinkMessage]{
		{name: "hello", doc: `step 1 (hello), body bytes 10.. (8 bytes)`, v: wire.LinkMessage{Step: wire.LinkHello, Body: seq(0x10, 8)}},
		{name: "done-empty", doc: `step 5 (done), empty body`, v: wire.LinkMessage{Step: wire.LinkDone}},
	}
}

func linkPackageVectors() []vector[wire.LinkPackageData] {
	return []vector[wire.LinkPackageData]{
		{name: "bare", doc: `account key bytes a0.., the list one-device of device-list.txt, no contacts, none blocked, requests on`,
			v: wire.LinkPackageData{AccountKey: seq32(0xa0), List: oneDeviceList()}},
		{name: "full", doc: `account key bytes a0.., the list three-devices of device-list.txt;
				contacts bob/1 "Bob", carol/2 "Carol ☕"; blocked mallory/1; accept everyone`,
			v: wire.LinkPackageData{AccountKey: seq32(0xa0), List: threeDeviceList(),
				Contacts: []wire.LinkContact{{Address: "bob/1", Name: "Bob"}, {Address: "carol/2", Name: "Carol ☕"}},
				Blocked:  []string{"mallory/1"}, AcceptAll: true}},
	}
}

func TestLinkVectors(t *testing.T) {
	checkVectors(t, linkMessageFormat, linkMessageVectors())
	checkVectors(t, linkPackageFormat, linkPackageVectors())
	checkVectors(t, linkPackageLinkerFormat, linkPackageLinkerVectors())
}

// TestLinkPackageLinkerRejects: version 3's linker number and history
// byte, broken once each; a version the build does not know is refused as
// a newer format; a package without a linker stays version 1 or 2.
func TestLinkPackageLinkerRejects(t *testing.T) {
	base := wire.LinkPackageData{AccountKey: seq32(1), List: oneDeviceList(), Linker: 3}
	b := mustEncode(wire.EncodeLinkPackage, base)
	if b[0] != wire.LinkPackageLinkerVersion {
		t.Fatalf("a package naming its linker is version %d", b[0])
	}
	n := len(b)
	set := func(f func(c []byte)) []byte {
		c := append([]byte(nil), b...)
		f(c)
		return c
	}
	for name, c := range map[string]struct {
		b    []byte
		want error
	}{
		"version 4":                     {set(func(c []byte) { c[0] = 4 }), wire.ErrUnsupportedVersion},
		"version 0":                     {set(func(c []byte) { c[0] = 0 }), wire.ErrUnsupportedVersion},
		"linker 0":                      {set(func(c []byte) { copy(c[n-5:], []byte{0, 0, 0, 0}) }), wire.ErrMalformed},
		"linker 2^31":                   {set(func(c []byte) { copy(c[n-5:], []byte{0x80, 0, 0, 0}) }), wire.ErrMalformed},
		"history 2":                     {set(func(c []byte) { c[n-1] = 2 }), wire.ErrMalformed},
		"history 1 without its section": {set(func(c []byte) { c[n-1] = 1 }), wire.ErrMalformed},
		"as version 1":                  {set(func(c []byte) { c[0] = 1 }), wire.ErrMalformed},
		"truncated":                     {b[:n-1], wire.ErrMalformed},
		"trailing":                      {append(append([]byte(nil), b...), 0), wire.ErrMalformed},
	} {
		if _, err := wire.DecodeLinkPackage(c.b); !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", name, err, c.want)
		}
	}
	over := base
	over.Linker = 1 << 31
	if _, err := wire.EncodeLinkPackage(over); !errors.Is(err, wire.ErrMalformed) {
		t.Errorf("encode linker 2^31: %v", err)
	}
	if p, err := wire.DecodeLinkPackage(b); err != nil || p.Linker != 3 || p.History != nil {
		t.Errorf("decode: %+v, %v", p, err)
	}
	none := base
	none.Linker = 0
	if v := mustEncode(wire.EncodeLinkPackage, none)[0]; v != wire.LinkVersion {
		t.Errorf("a package without a linker or history is version %d, want %d", v, wire.LinkVersion)
	}
	none.History = &wire.LinkHistory{Archive: seq16(0x10), Key: seq32(0x30), Records: 1, Manifest: historyManifest()}
	if v := mustEncode(wire.EncodeLinkPackage, none)[0]; v != wire.LinkPackageHistoryVersion {
		t.Errorf("a package with history and no linker is version %d, want %d", v, wire.LinkPackageHistoryVersion)
	}
}

// TestLinkRejects: each bound and rule, broken once.
func TestLinkRejects(t *testing.T) {
	if _, err := wire.EncodeLinkMessage(wire.LinkMessage{Step: 0}); !errors.Is(err, wire.ErrMalformed) {
		t.Errorf("step 0: %v", err)
	}
	if _, err := wire.EncodeLinkMessage(wire.LinkMessage{Step: 6}); !errors.Is(err, wire.ErrMalformed) {
		t.Errorf("step 6: %v", err)
	}
	if _, err := wire.EncodeLinkMessage(wire.LinkMessage{Step: 1, Body: make([]byte, wire.MaxLinkBody+1)}); !errors.Is(err, wire.ErrMessageTooLarge) {
		t.Errorf("body over the bound: %v", err)
	}
	if _, err := wire.EncodeLinkMessage(wire.LinkMessage{Step: 1, Body: make([]byte, wire.MaxLinkBody)}); err != nil {
		t.Errorf("body at the bound: %v", err)
	}
	b := mustEncode(wire.EncodeLinkMessage, wire.LinkMessage{Step: 1, Body: []byte{1}})
	for name, c := range map[string]struct {
		b    []byte
		want error
	}{
		"version 2": {append([]byte{2}, b[1:]...), wire.ErrUnsupportedVersion},
		"kind 13":   {append([]byte{1, 13}, b[2:]...), wire.ErrMalformed},
		"step 9":    {append([]byte{1, 12, 9}, b[3:]...), wire.ErrMalformed},
		"trailing":  {append(append([]byte(nil), b...), 0), wire.ErrMalformed},
		"truncated": {b[:len(b)-1], wire.ErrMalformed},
	} {
		if _, err := wire.DecodeLinkMessage(c.b); !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", name, err, c.want)
		}
	}
	base := wire.LinkPackageData{AccountKey: seq32(1), List: oneDeviceList()}
	many := base
	many.Contacts = make([]wire.LinkContact, wire.MaxLinkContacts+1)
	for i := range many.Contacts {
		many.Contacts[i] = wire.LinkContact{Address: "bob/1", Name: "b"}
	}
	if _, err := wire.EncodeLinkPackage(many); !errors.Is(err, wire.ErrMessageTooLarge) {
		t.Errorf("contacts over the bound: %v", err)
	}
	many.Contacts = many.Contacts[:wire.MaxLinkContacts]
	for i := range many.Contacts {
		many.Contacts[i] = wire.LinkContact{Address: "a-user-with-a-name-of-sixty-four-characters-to-fill-the-field-xx/2147483647", Name: string(make([]byte, wire.MaxLinkNameSize))}
	}
	many.Blocked = make([]string, wire.MaxLinkBlocked)
	for i := range many.Blocked {
		many.Blocked[i] = many.Contacts[0].Address
	}
	many.List = threeDeviceList()
	if enc, err := wire.EncodeLinkPackage(many); err != nil || len(enc) > wire.MaxLinkBody-64 {
		t.Errorf("package at every bound: %d bytes, %v; want it to fit a sealed link message", len(enc), err)
	}
	for name, change := range map[string]func(*wire.LinkPackageData){
		"empty name": func(p *wire.LinkPackageData) { p.Contacts = []wire.LinkContact{{Address: "bob/1"}} },
		"long name": func(p *wire.LinkPackageData) {
			p.Contacts = []wire.LinkContact{{Address: "bob/1", Name: string(make([]byte, 65))}}
		},
		"bad utf-8":   func(p *wire.LinkPackageData) { p.Contacts = []wire.LinkContact{{Address: "bob/1", Name: "\xff"}} },
		"bad address": func(p *wire.LinkPackageData) { p.Blocked = []string{"a b"} },
		"bad list":    func(p *wire.LinkPackageData) { p.List.Generation = 0 },
	} {
		p := base
		change(&p)
		if _, err := wire.EncodeLinkPackage(p); !errors.Is(err, wire.ErrMalformed) {
			t.Errorf("%s: %v, want ErrMalformed", name, err)
		}
	}
	pb := mustEncode(wire.EncodeLinkPackage, base)
	pb[len(pb)-1] = 2
	if _, err := wire.DecodeLinkPackage(pb); !errors.Is(err, wire.ErrMalformed) {
		t.Errorf("unknown flag: %v", err)
	}
}

// FuzzDecodeLinkMessage: an error returns nothing, a success re-encodes to
// exactly the input.
func FuzzDecodeLinkMessage(f *testing.F) {
	for _, v := range linkMessageVectors() {
		f.Add(mustEncode(wire.EncodeLinkMessage, v.v))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		fuzzRoundTrip(t, b, wire.DecodeLinkMessage, wire.EncodeLinkMessage)
	})
}

// FuzzDecodeLinkPackage: the same for the package.
func FuzzDecodeLinkPackage(f *testing.F) {
	for _, v := range slices.Concat(linkPackageVectors(), linkPackageHistoryVectors(), linkPackageLinkerVectors()) {
		f.Add(mustEncode(wire.EncodeLinkPackage, v.v))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		fuzzRoundTrip(t, b, wire.DecodeLinkPackage, wire.EncodeLinkPackage)
	})
}
