package wire_test

import (
	"errors"
	"testing"

	"github.com/parley-chat/parley/wire"
)

var archiveKeyedHeaderFormat = format[wire.ArchiveKeyedHeader]{
	file:   "archive-keyed-header.txt",
	title:  "keyed archive header (version 2: history at link time)",
	fuzz:   "FuzzDecodeArchiveKeyedHeader",
	encode: wire.EncodeArchiveKeyedHeader,
	decode: wire.DecodeArchiveKeyedHeader,
}

var archiveKeyedHeaderV4Format = format[wire.ArchiveKeyedHeader]{
	file:   "archive-keyed-header-v4.txt",
	title:  "keyed archive header (version 4: records may include kind 11)",
	fuzz:   "FuzzDecodeArchiveKeyedHeader",
	encode: wire.EncodeArchiveKeyedHeader,
	decode: wire.DecodeArchiveKeyedHeader,
}

func archiveKeyedHeaderV4Vectors() []vector[wire.ArchiveKeyedHeader] {
	return []vector[wire.ArchiveKeyedHeader]{
		{name: "keyed-v4", doc: `version 4; id bytes 20.., check bytes 40..`, v: wire.ArchiveKeyedHeader{Version: 4, ID: seq16(0x20), Check: seq32(0x40)}},
	}
}

var archiveKeyedRecordFormat = format[wire.ArchiveRecord]{
	file:   "archive-record-keyed.txt",
	title:  "archive record plaintexts only keyed archives hold (version 2)",
	fuzz:   "FuzzDecodeArchiveRecord",
	encode: wire.EncodeArchiveRecord,
	decode: wire.DecodeArchiveRecord,
}

var linkPackageHistoryFormat = format[wire.LinkPackageData]{
	file:   "link-package-v2.txt",
	title:  "link package with history (frame kind 13, version 2)",
	fuzz:   "FuzzDecodeLinkPackage",
	encode: wire.EncodeLinkPackage,
	decode: wire.DecodeLinkPackage,
}

func archiveKeyedHeaderVectors() []vector[wire.ArchiveKeyedHeader] {
	return []vector[wire.ArchiveKeyedHeader]{
		{name: "keyed", doc: `id bytes 20.., check bytes 40..`, v: wire.ArchiveKeyedHeader{Version: 2, ID: seq16(0x20), Check: seq32(0x40)}},
	}
}

func archiveKeyedRecordVectors() []vector[wire.ArchiveRecord] {
	return []vector[wire.ArchiveRecord]{
		{name: "staged", doc: `staged from bob/1, id bytes 00.., received at 14, digest bytes 80.., frame bytes 01.. (5)`,
			v: wire.ArchiveStaged{Sender: "bob/1", ID: seq16(0), ReceivedAt: 14, Digest: seq32(0x80), Frame: seq(1, 5)}},
	}
}

func historyManifest() wire.FileManifest {
	return wire.FileManifest{Name: "history", Size: 1000, MediaType: "application/octet-stream", ChunkSize: 1024, Chunks: 1,
		Key: seq32(0x60), Blob: wire.BlobID(seq16(0x70)), Digest: seq32(0x90)}
}

func linkPackageHistoryVectors() []vector[wire.LinkPackageData] {
	return []vector[wire.LinkPackageData]{
		{name: "history", doc: `account key bytes a0.., the list one-device of device-list.txt, no contacts, none blocked, requests on;
				history: archive id bytes 10.., archive key bytes 30.., 42 records, manifest "history" of 1000 bytes,
				application/octet-stream, chunk 1024, 1 chunk, key bytes 60.., blob bytes 70.., digest bytes 90..`,
			v: wire.LinkPackageData{AccountKey: seq32(0xa0), List: oneDeviceList(),
				History: &wire.LinkHistory{Archive: seq16(0x10), Key: seq32(0x30), Records: 42, Manifest: historyManifest()}}},
	}
}

func TestArchiveKeyedVectors(t *testing.T) {
	checkVectors(t, archiveKeyedHeaderFormat, archiveKeyedHeaderVectors())
	checkVectors(t, archiveKeyedHeaderV4Format, archiveKeyedHeaderV4Vectors())
	checkVectors(t, archiveKeyedRecordFormat, archiveKeyedRecordVectors())
	checkVectors(t, linkPackageHistoryFormat, linkPackageHistoryVectors())
}

// TestArchiveKeyedRejects: each rule of the keyed formats, broken once.
func TestArchiveKeyedRejects(t *testing.T) {
	h := mustEncode(wire.EncodeArchiveKeyedHeader, archiveKeyedHeaderVectors()[0].v)
	for name, c := range map[string]struct {
		change func([]byte)
		want   error
	}{
		"magic":   {func(b []byte) { b[1] = 'a' }, wire.ErrMalformed},
		"version": {func(b []byte) { b[8] = 3 }, wire.ErrUnsupportedVersion},
		"v1":      {func(b []byte) { b[8] = 1 }, wire.ErrUnsupportedVersion},
	} {
		b := append([]byte(nil), h...)
		c.change(b)
		if _, err := wire.DecodeArchiveKeyedHeader(b); !errors.Is(err, c.want) {
			t.Errorf("%s: got %v, want %v", name, err, c.want)
		}
	}
	// A keyed header is not a version 1 header.
	if _, err := wire.DecodeArchiveHeader(h); !errors.Is(err, wire.ErrUnsupportedVersion) {
		t.Errorf("keyed header as version 1: %v", err)
	}
	for name, rec := range map[string]wire.ArchiveRecord{
		"no frame":    wire.ArchiveStaged{Sender: "bob/1"},
		"bad sender":  wire.ArchiveStaged{Sender: "b b", Frame: []byte{1}},
		"large frame": wire.ArchiveStaged{Sender: "bob/1", Frame: make([]byte, wire.MaxArchiveFrame+1)},
	} {
		if _, err := wire.EncodeArchiveRecord(rec); !errors.Is(err, wire.ErrMalformed) {
			t.Errorf("encode %s: %v", name, err)
		}
	}
	p := linkPackageHistoryVectors()[0].v
	b := mustEncode(wire.EncodeLinkPackage, p)
	for name, c := range map[string]struct {
		b    []byte
		want error
	}{
		"version 4":      {append([]byte{4}, b[1:]...), wire.ErrUnsupportedVersion},
		"v1 with extras": {append([]byte{1}, b[1:]...), wire.ErrMalformed},
		"no manifest":    {b[:len(b)-1], wire.ErrMalformed},
	} {
		if _, err := wire.DecodeLinkPackage(c.b); !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", name, err, c.want)
		}
	}
	p.History.Records = 0
	if _, err := wire.EncodeLinkPackage(p); !errors.Is(err, wire.ErrMalformed) {
		t.Errorf("no records: %v", err)
	}
	// The largest package with history fits a link message's body.
	if wire.MaxLinkPackageSize+64 > wire.MaxLinkBody {
		t.Errorf("MaxLinkPackageSize %d and a seal over MaxLinkBody %d", wire.MaxLinkPackageSize, wire.MaxLinkBody)
	}
}

func FuzzDecodeArchiveKeyedHeader(f *testing.F) {
	for _, v := range archiveKeyedHeaderVectors() {
		f.Add(mustEncode(wire.EncodeArchiveKeyedHeader, v.v))
	}
	f.Add([]byte("PARLEYBK\x03"))
	f.Fuzz(func(t *testing.T, b []byte) {
		fuzzRoundTrip(t, b, wire.DecodeArchiveKeyedHeader, wire.EncodeArchiveKeyedHeader)
	})
}
