package relayserver

import (
	"errors"
	"io"
	"net"
	"net/http"
	"testing"

	"github.com/parley-chat/parley/transport"
)

// TestNewClientWaitsForRelay checks that a client made while the relay is
// down reports its failed attempts, refuses requests at once, and connects
// when the relay appears.
func TestNewClientWaitsForRelay(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there for now
	alice := newDevice(t, "alice/1")
	c, err := transport.NewConn("ws://"+addr, alice.addr, alice.id, fastClient)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	waitState(t, c, transport.StateDisconnected)
	if st := c.State(); st.Err == nil || st.Final {
		t.Fatalf("state while the relay is down: %+v", st)
	}
	if err := c.Submit(ctxT(t), envelope(alice, alice, "x")); !errors.Is(err, transport.ErrNotConnected) {
		t.Fatalf("Submit while the relay is down: got %v, want transport.ErrNotConnected", err)
	}
	r := startRelayOn(t, addr, Config{})
	waitState(t, c, transport.StateConnected)
	if c.RelayID() != r.srv.RelayID() {
		t.Fatal("RelayID is not the relay's")
	}
	mustSubmit(t, c, envelope(alice, alice, "to myself"))
	receiveN(t, c, 1)
}

// TestPinnedRelayID checks that a client pinned to one relay refuses another.
func TestPinnedRelayID(t *testing.T) {
	r := startRelay(t, Config{})
	alice := newDevice(t, "alice/1")
	opts := fastClient
	opts.RelayID = r.srv.RelayID()
	dialOpts(t, r, alice, opts).Close()
	opts.RelayID[0] ^= 1
	if _, err := transport.Dial(ctxT(t), r.url, alice.addr, alice.id, opts); !errors.Is(err, transport.ErrRelayChanged) {
		t.Fatalf("another relay ID: got %v, want transport.ErrRelayChanged", err)
	}
}

func TestHealthz(t *testing.T) {
	r := startRelay(t, Config{})
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := client.Get("http://" + r.addr + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || string(body) != "ok\n" {
		t.Fatalf("/healthz: %d %q", resp.StatusCode, body)
	}
	if r.srv.Addr().String() != r.addr {
		t.Fatalf("Addr() = %v, want %s", r.srv.Addr(), r.addr)
	}
}
