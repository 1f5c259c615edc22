package relayserver

import (
	"errors"
	"net/http"
	"net/netip"
	"strings"
	"testing"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/transport"
	"github.com/parley-chat/parley/wire"
)

// account is a test account: its key and the devices it lists.
type account struct {
	tb  testing.TB
	key *engine.AccountKey
}

func newAccount(tb testing.TB) *account {
	k, err := engine.NewAccountKey(engine.SystemRandom{})
	if err != nil {
		tb.Fatal(err)
	}
	return &account{tb: tb, key: k}
}

// list signs the list after prev (nil: generation 1) naming devs, active.
func (a *account) list(prev *wire.DeviceList, devs ...*device) wire.DeviceList {
	a.tb.Helper()
	l := wire.DeviceList{User: devs[0].addr.User, Generation: 1}
	if prev != nil {
		d, err := engine.DeviceListDigest(*prev)
		if err != nil {
			a.tb.Fatal(err)
		}
		l.Generation, l.Parent = prev.Generation+1, d
	}
	for _, d := range devs {
		l.Entries = append(l.Entries, engine.DeviceEntryFor(d.id, d.addr.User, a.key.Public(), d.addr.Device, 1700000000))
	}
	l, err := a.key.SignDeviceList(l)
	if err != nil {
		a.tb.Fatal(err)
	}
	return l
}

// publishList publishes l and returns the reply.
func (r *raw) publishList(req uint32, l wire.DeviceList) wire.RelayMessage {
	r.tb.Helper()
	r.send(req, wire.PublishDeviceList{List: l})
	return r.reply(req)
}

func wantRefusal(tb testing.TB, m wire.RelayMessage, want wire.DeviceListRefusal) wire.DeviceListRefused {
	tb.Helper()
	f, ok := m.(wire.DeviceListRefused)
	if !ok || f.Reason != want {
		tb.Fatalf("got %+v, want a refusal: %s", m, want)
	}
	return f
}

// TestDeviceLists: a device publishes generation 1 of its account's list
// (again: Done), anyone fetches it, a device not in the list is refused at
// authentication with the cause, and is let in once generation 2 names it;
// stale, invalid and foreign lists are refused by cause.
func TestDeviceLists(t *testing.T) {
	r := startRelay(t, Config{DeviceLists: true})
	acc := newAccount(t)
	a1, a2, bob := newDevice(t, "alice/1"), newDevice(t, "alice/2"), newDevice(t, "bob/1")

	c1 := dialRaw(t, r)
	c1.login(a1)
	g1 := acc.list(nil, a1)
	for i := range 2 {
		if m := c1.publishList(uint32(10+i), g1); m.RelayKind() != wire.RelayDone {
			t.Fatalf("publish generation 1 (time %d): %+v", i+1, m)
		}
	}
	// The features came before the first reply.
	if len(c1.features) == 0 || !c1.features[0].Set.Has(wire.FeatureDeviceLists) {
		t.Fatalf("features %v: want device lists", c1.features)
	}
	cb := dialRaw(t, r)
	cb.login(bob)
	cb.send(20, wire.FetchDeviceList{User: "alice"})
	if m, ok := cb.reply(20).(wire.DeviceListReply); !ok || m.List.Generation != 1 || m.List.Signature != g1.Signature {
		t.Fatalf("fetch: %+v, want generation 1", m)
	}
	cb.send(21, wire.FetchDeviceList{User: "carol"})
	cb.expectError(21, wire.ErrorNotFound)
	if m := cb.publishList(22, g1); m.RelayKind() != wire.RelayDeviceListRefused {
		t.Fatalf("bob publishes alice's list: %+v", m)
	} else {
		wantRefusal(t, m, wire.DeviceListNotYours)
	}

	// alice/2 is not in the list: refused at authentication, with why.
	c2 := dialRaw(t, r)
	c2.send(1, signAuth(c2.challenge(), a2))
	e := c2.expectError(1, wire.ErrorAuthFailed)
	if !strings.Contains(e.Message, "alice/2 is not an active device") || strings.Contains(e.Message, "\n") {
		t.Fatalf("refusal %q: want one line naming the cause", e.Message)
	}
	if n := r.metric(t, `parley_relay_auth_failures_total{reason="not_in_device_list"}`); n != 1 {
		t.Fatalf("not_in_device_list refusals: %v, want 1", n)
	}

	// A list naming a device with another key: refused as not the list.
	other := dialRaw(t, r)
	impostor := newDevice(t, "alice/1")
	other.send(1, signAuth(other.challenge(), impostor))
	other.expectError(1, wire.ErrorAuthFailed)

	g2 := acc.list(&g1, a1, a2)
	bad := g2
	bad.Signature[0] ^= 1
	wantRefusal(t, c1.publishList(30, bad), wire.DeviceListInvalid)
	skip := acc.list(&g2, a1, a2)
	f := wantRefusal(t, c1.publishList(31, skip), wire.DeviceListStale)
	if f.Current == nil || f.Current.Generation != 1 {
		t.Fatalf("stale refusal carries %+v, want generation 1", f.Current)
	}
	if m := c1.publishList(32, g2); m.RelayKind() != wire.RelayDone {
		t.Fatalf("publish generation 2: %+v", m)
	}
	f = wantRefusal(t, c1.publishList(33, acc.list(&g1, a1)), wire.DeviceListStale)
	if f.Current == nil || f.Current.Generation != 2 {
		t.Fatalf("stale refusal carries %+v, want generation 2", f.Current)
	}
	c2 = dialRaw(t, r)
	c2.login(a2)
	if n := r.metric(t, `parley_relay_device_lists_refused_total{reason="stale"}`); n != 2 {
		t.Fatalf("stale refusals: %v, want 2", n)
	}
	if n := r.metric(t, `parley_relay_device_lists_stored_total`); n != 2 {
		t.Fatalf("lists stored: %v, want 2", n)
	}
}

// TestDeviceListsOff: by default the relay keeps no lists: it does not
// announce them, answers a publish as a bad request, and lets any device
// in.
func TestDeviceListsOff(t *testing.T) {
	r := startRelay(t, Config{})
	a1 := newDevice(t, "alice/1")
	c := dialRaw(t, r)
	c.login(a1)
	c.send(5, wire.PublishDeviceList{List: newAccount(t).list(nil, a1)})
	c.expectError(5, wire.ErrorBadRequest)
	if len(c.features) == 0 || c.features[0].Set.Has(wire.FeatureDeviceLists) {
		t.Fatalf("features %v: want no device lists", c.features)
	}
}

// TestDeviceListQuotaSparesVictim: behind a trusted proxy, one IP starts
// the lists it may and is refused the next; a victim on another IP still
// starts its own list, and the refusal is counted.
func TestDeviceListQuotaSparesVictim(t *testing.T) {
	cfg := Config{DeviceLists: true, TrustedProxies: []netip.Prefix{netip.MustParsePrefix("127.0.0.2/32")}}
	cfg.Limits.Limits.DeviceListsPerIP = 2
	r := startRelay(t, cfg)
	via := func(ip string) *raw {
		ws, resp, err := from("127.0.0.2").Dial(r.url+wire.WebSocketPath, http.Header{"X-Forwarded-For": {ip}})
		if resp != nil && resp.Body != nil {
			resp.Body.Close()
		}
		if err != nil {
			t.Fatal(err)
		}
		ws.SetReadLimit(wire.MaxRelayMessageSize)
		t.Cleanup(func() { ws.Close() })
		return &raw{tb: t, ws: ws}
	}
	publish := func(ip, user string) wire.RelayMessage {
		d := newDevice(t, user+"/1")
		c := via(ip)
		c.login(d)
		return c.publishList(7, newAccount(t).list(nil, d))
	}
	for _, user := range []string{"sybil0", "sybil1"} {
		if m := publish("198.51.100.7", user); m.RelayKind() != wire.RelayDone {
			t.Fatalf("%s: %+v", user, m)
		}
	}
	wantRefusal(t, publish("198.51.100.7", "sybil2"), wire.DeviceListQuota)
	if m := publish("203.0.113.9", "victim"); m.RelayKind() != wire.RelayDone {
		t.Fatalf("the victim's list: %+v", m)
	}
	if n := r.metric(t, `parley_relay_limited_total{limit="ip_device_lists"}`); n != 1 {
		t.Fatalf("ip_device_lists refusals: %v, want 1", n)
	}
}

// TestDeviceListClient: through transport.Conn, device 1 publishes
// generation 1 (twice: the second is Done too), fetches it back, and a
// stale list comes back as a *DeviceListRefusedError carrying the list
// held; against a relay without device lists the calls say so.
func TestDeviceListClient(t *testing.T) {
	r := startRelay(t, Config{DeviceLists: true})
	acc := newAccount(t)
	a1 := newDevice(t, "alice/1")
	c := dial(t, r, a1)
	ctx := ctxT(t)
	g1 := acc.list(nil, a1)
	for range 2 {
		if err := c.PublishDeviceList(ctx, g1); err != nil {
			t.Fatal(err)
		}
	}
	got, err := c.FetchDeviceList(ctx, "alice")
	if err != nil || got.Signature != g1.Signature {
		t.Fatalf("fetch: %+v, %v", got, err)
	}
	var refused *transport.DeviceListRefusedError
	err = c.PublishDeviceList(ctx, acc.list(nil, a1, newDevice(t, "alice/2")))
	if !errors.As(err, &refused) || refused.Reason != wire.DeviceListStale || refused.Current == nil || refused.Current.Signature != g1.Signature {
		t.Fatalf("stale publish: %v, want a refusal carrying generation 1", err)
	}
	var se *transport.ServerError
	if _, err := c.FetchDeviceList(ctx, "nobody"); !errors.As(err, &se) || se.Code != wire.ErrorNotFound {
		t.Fatalf("fetch of nobody: %v, want not found", err)
	}

	off := startRelay(t, Config{})
	c2 := dial(t, off, newDevice(t, "bob/1"))
	if err := c2.PublishDeviceList(ctx, g1); !errors.Is(err, transport.ErrDeviceListsUnsupported) {
		t.Fatalf("publish to a relay without device lists: %v", err)
	}
}

// TestDeviceListJoin: with DeviceListJoins, a device whose number the held
// list never used authenticates as joining: it is served nothing but
// publishing and fetching lists, publishes the list that adds it (not one
// that leaves it out), and is then a device like the others. A used number
// with another key is still refused.
func TestDeviceListJoin(t *testing.T) {
	r := startRelay(t, Config{DeviceLists: true, DeviceListJoins: true})
	acc := newAccount(t)
	a1, a2 := newDevice(t, "alice/1"), newDevice(t, "alice/2")
	c1 := dialRaw(t, r)
	c1.login(a1)
	g1 := acc.list(nil, a1)
	if m := c1.publishList(10, g1); m.RelayKind() != wire.RelayDone {
		t.Fatalf("publish generation 1: %+v", m)
	}
	other := dialRaw(t, r)
	other.send(1, signAuth(other.challenge(), newDevice(t, "alice/1")))
	other.expectError(1, wire.ErrorAuthFailed)

	c2 := dialRaw(t, r)
	c2.login(a2)
	c2.send(5, wire.AckRows{Rows: []uint64{1}})
	if e := c2.expectError(5, wire.ErrorAuthFailed); !strings.Contains(e.Message, "not in its account's device list yet") {
		t.Fatalf("a joining device's ack: %q", e.Message)
	}
	wantRefusal(t, c2.publishList(6, acc.list(&g1, a1)), wire.DeviceListNotYours)
	if m := c2.publishList(7, acc.list(&g1, a1, a2)); m.RelayKind() != wire.RelayDone {
		t.Fatalf("the joining device publishes the list that adds it: %+v", m)
	}
	c3 := dialRaw(t, r)
	c3.login(a2)
	c3.send(8, wire.AckRows{Rows: []uint64{1}})
	if m := c3.reply(8); m.RelayKind() != wire.RelayDone {
		t.Fatalf("alice/2 listed: ack got %+v, want done", m)
	}
}

// TestDeviceListRemoval: once the list held revokes alice/2, its open
// connection reads one line saying it was removed and closes, it cannot
// authenticate again (not even as joining: its number was used), and a
// list that makes it active again is refused; alice/1 goes on.
func TestDeviceListRemoval(t *testing.T) {
	r := startRelay(t, Config{DeviceLists: true, DeviceListJoins: true})
	acc := newAccount(t)
	a1, a2 := newDevice(t, "alice/1"), newDevice(t, "alice/2")
	c1 := dialRaw(t, r)
	c1.login(a1)
	g1 := acc.list(nil, a1)
	g2 := acc.list(&g1, a1, a2)
	for i, l := range []wire.DeviceList{g1, g2} {
		if m := c1.publishList(uint32(10+i), l); m.RelayKind() != wire.RelayDone {
			t.Fatalf("publish generation %d: %+v", l.Generation, m)
		}
	}
	c2 := dialRaw(t, r)
	c2.login(a2)

	g3, err := engine.RemovedDeviceList(acc.key, g2, 2)
	if err != nil {
		t.Fatal(err)
	}
	if m := c1.publishList(20, g3); m.RelayKind() != wire.RelayDone {
		t.Fatalf("publish generation 3 (alice/2 removed): %+v", m)
	}
	const said = "alice/2 was removed from the devices of alice"
	_, m := c2.read()
	if e, ok := m.(wire.Error); !ok || e.Code != wire.ErrorAuthFailed || !strings.Contains(e.Message, said) || strings.Contains(e.Message, "\n") {
		t.Fatalf("alice/2's connection read %+v, want one line saying it was removed", m)
	}
	c2.expectClose(0)
	// The relay counts the disconnect once its writer has ended, which may
	// be after the client read the close.
	r.waitMetric(t, `parley_relay_disconnects_total{reason="removed"}`, 1)
	if n := r.metric(t, `parley_relay_disconnects_total{reason="removed"}`); n != 1 {
		t.Errorf("disconnects of removed devices: %v, want 1", n)
	}

	again := dialRaw(t, r)
	again.send(1, signAuth(again.challenge(), a2))
	if e := again.expectError(1, wire.ErrorAuthFailed); !strings.Contains(e.Message, said) {
		t.Fatalf("alice/2 authenticating again: %q, want it told it was removed", e.Message)
	}
	// Active again in a list the account signs: refused as invalid.
	back := acc.list(&g3, a1, a2)
	wantRefusal(t, c1.publishList(21, back), wire.DeviceListInvalid)
	c1.send(22, wire.FetchDeviceList{User: "alice"})
	if m, ok := c1.reply(22).(wire.DeviceListReply); !ok || m.List.Generation != 3 {
		t.Fatalf("alice/1 fetches its list: %+v, want generation 3", m)
	}
}

// TestDeviceListCheck: the stale-list answer (kind 48). A sender holding
// an older generation gets the list held back; one holding the latest, or
// asking of a user without a list, gets Done. Through transport.Conn the
// same answers are nil and the later list.
func TestDeviceListCheck(t *testing.T) {
	r := startRelay(t, Config{DeviceLists: true})
	acc := newAccount(t)
	a1, a2 := newDevice(t, "alice/1"), newDevice(t, "alice/2")
	c1 := dialRaw(t, r)
	c1.login(a1)
	g1 := acc.list(nil, a1)
	g2 := acc.list(&g1, a1, a2)
	for i, l := range []wire.DeviceList{g1, g2} {
		if m := c1.publishList(uint32(10+i), l); m.RelayKind() != wire.RelayDone {
			t.Fatalf("publish generation %d: %+v", l.Generation, m)
		}
	}
	if len(c1.features) == 0 || !c1.features[0].Set.Has(wire.FeatureDeviceListCheck) {
		t.Fatalf("features %v: want the device list check", c1.features)
	}
	c1.send(20, wire.CheckDeviceList{User: "alice", Generation: 1})
	if m, ok := c1.reply(20).(wire.DeviceListReply); !ok || m.List.Generation != 2 {
		t.Fatalf("check with generation 1: %+v, want generation 2 back", m)
	}
	for i, c := range []wire.CheckDeviceList{{User: "alice", Generation: 2}, {User: "alice", Generation: 9}, {User: "carol", Generation: 1}} {
		c1.send(uint32(21+i), c)
		if m := c1.reply(uint32(21 + i)); m.RelayKind() != wire.RelayDone {
			t.Fatalf("check %+v: %+v, want done", c, m)
		}
	}
	if n := r.metric(t, `parley_relay_stale_device_lists_total`); n != 1 {
		t.Errorf("stale answers: %v, want 1", n)
	}

	bob := dial(t, r, newDevice(t, "bob/1"))
	ctx := ctxT(t)
	if l, err := bob.CheckDeviceList(ctx, "alice", 2); err != nil || l != nil {
		t.Fatalf("client check with the latest: %v, %v", l, err)
	}
	if l, err := bob.CheckDeviceList(ctx, "alice", 1); err != nil || l == nil || l.Generation != 2 {
		t.Fatalf("client check with generation 1: %v, %v; want generation 2", l, err)
	}
	off := dial(t, startRelay(t, Config{}), newDevice(t, "bob/1"))
	if _, err := off.CheckDeviceList(ctx, "alice", 1); !errors.Is(err, transport.ErrDeviceListsUnsupported) {
		t.Fatalf("check at a relay without lists: %v", err)
	}
}

// TestReregisterTakesOverAListedDevice: with AllowReregister (the demo's
// reinstall), a new key for a device the held list names authenticates,
// as its registration takes the address over; its new account's first
// list is refused as stale and the held one stays. Without it the same
// key is refused (TestDeviceLists), and a device the list never named
// still is.
func TestReregisterTakesOverAListedDevice(t *testing.T) {
	r := startRelay(t, Config{DeviceLists: true, AllowReregister: true})
	acc := newAccount(t)
	a1 := newDevice(t, "alice/1")
	c1 := dialRaw(t, r)
	c1.login(a1)
	g1 := acc.list(nil, a1)
	if m := c1.publishList(10, g1); m.RelayKind() != wire.RelayDone {
		t.Fatalf("publish generation 1: %+v", m)
	}

	again := newDevice(t, "alice/1") // reinstalled: a new key, a new account
	c := dialRaw(t, r)
	c.login(again)
	f := wantRefusal(t, c.publishList(11, newAccount(t).list(nil, again)), wire.DeviceListStale)
	if f.Current == nil || f.Current.Signature != g1.Signature {
		t.Fatalf("the stale refusal carries %+v, want the held generation 1", f.Current)
	}

	stranger := dialRaw(t, r)
	stranger.send(1, signAuth(stranger.challenge(), newDevice(t, "alice/2")))
	stranger.expectError(1, wire.ErrorAuthFailed)
}
