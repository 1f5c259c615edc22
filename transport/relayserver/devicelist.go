package relayserver

import (
	"errors"
	"fmt"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/transport/relaystore"
	"github.com/parley-chat/parley/wire"
)

// Device lists (issue 33): with Config.DeviceLists the relay keeps the
// latest list of each account (wire.FeatureDeviceLists), hands it to anyone
// authenticated, and lets a device authenticate as one of an account's
// addresses only when the list it holds names that device as active with
// the key it signs with.
//
// A publish is accepted only when (in this order):
//
//  1. the list is of the publisher's user, and names the publisher's
//     device as active with the key it authenticated with (else
//     DeviceListNotYours);
//  2. engine.VerifyDeviceList accepts it after the list held (else
//     DeviceListStale, with the held list, or DeviceListInvalid);
//  3. the store takes it by compare-and-set (a racing publisher's win
//     makes it DeviceListStale), within the IP's quota of first lists
//     (DeviceListQuota).
//
// A list that is the one held already is answered Done, so that a client
// may publish at every connection.

// Joining (Config.DeviceListJoins). A device that is not in its account's held list cannot
// authenticate, so a new device cannot publish the list that adds it
// itself: linking has device 1 publish it, but a restore from a backup
// (issue 34) has no other device at hand. So a device whose number is
// above every number the held list has used (never in the list, so never
// revoked) authenticates as joining: it is not registered, nothing is
// delivered to it, and it may only publish a list (which rule 1 below
// makes name it, and the account key must sign) or fetch one. Once a list
// naming it is held, it authenticates as any device of the list.

// mayJoin reports whether address may authenticate as joining.
func (s *Server) mayJoin(c *conn, address string) bool {
	a, err := engine.ParseAddress(address)
	if err != nil || !s.cfg.DeviceListJoins {
		return false
	}
	l, _, err := s.heldDeviceList(c, a.User)
	return err == nil && l != nil && a.Device >= engine.NextDeviceNumber(*l)
}

// heldDeviceList returns the list held for user, nil when none is.
func (s *Server) heldDeviceList(c *conn, user string) (*wire.DeviceList, [32]byte, error) {
	held, err := s.store.DeviceList(c.ctx, user)
	switch {
	case errors.Is(err, relaystore.ErrNoDeviceList):
		return nil, [32]byte{}, nil
	case err != nil:
		return nil, [32]byte{}, err
	}
	l, err := wire.DecodeDeviceList(held.Encoded)
	if err != nil {
		return nil, [32]byte{}, fmt.Errorf("held device list of %s: %w", user, err)
	}
	return &l, held.Digest, nil
}

// publishDeviceList serves PublishDeviceList.
func (c *conn) publishDeviceList(req uint32, m wire.PublishDeviceList) bool {
	s := c.s
	refuse := func(r wire.DeviceListRefusal, cur *wire.DeviceList) bool {
		s.metrics.deviceListRefused(r)
		return c.reply(encode(req, wire.DeviceListRefused{Reason: r, Current: cur}))
	}
	self, err := engine.ParseAddress(c.addr)
	if err != nil {
		return c.reply(errorMsg(req, wire.ErrorInternal, "the relay could not read the connection's address"))
	}
	l := m.List
	if l.User != self.User || !engine.ActiveDevice(l, self.Device, c.key) {
		return refuse(wire.DeviceListNotYours, nil)
	}
	if msg := c.overWrites(); msg != "" {
		return c.limitedBy(req, msg)
	}
	internal := func(what string, err error) bool {
		s.log.Error(what, "err", cause(err))
		return c.reply(errorMsg(req, wire.ErrorInternal, "the relay could not keep the device list"))
	}
	prev, prevDigest, err := s.heldDeviceList(c, l.User)
	if err != nil {
		return internal("read device list", err)
	}
	digest, err := engine.DeviceListDigest(l)
	if err != nil {
		return refuse(wire.DeviceListInvalid, nil)
	}
	if prev != nil && digest == prevDigest {
		return c.reply(encode(req, wire.Done{})) // held already
	}
	if err := engine.VerifyDeviceList(l, prev); err != nil {
		if errors.Is(err, engine.ErrDeviceListStale) {
			return refuse(wire.DeviceListStale, prev)
		}
		return refuse(wire.DeviceListInvalid, nil)
	}
	enc, err := wire.EncodeDeviceList(l)
	if err != nil {
		return refuse(wire.DeviceListInvalid, nil)
	}
	err = s.store.PutDeviceList(c.ctx, l.User, relaystore.HeldDeviceList{Generation: l.Generation, Parent: l.Parent, Digest: digest, Encoded: enc}, c.ip)
	switch {
	case errors.Is(err, relaystore.ErrDeviceListStale):
		cur, _, err := s.heldDeviceList(c, l.User)
		if err != nil {
			return internal("read device list", err)
		}
		return refuse(wire.DeviceListStale, cur)
	case errors.Is(err, relaystore.ErrDeviceListQuota):
		s.metrics.limitedBy(limitIPDeviceLists)
		return refuse(wire.DeviceListQuota, nil)
	case err != nil:
		return internal("store device list", err)
	}
	s.metrics.deviceListsStored.Inc()
	// A device the list removes is refused from now on: it cannot
	// authenticate (deviceAllowed), and its connections here close.
	for _, d := range engine.RevokedSince(prev, l) {
		s.evictRemoved(d.String(), removedText(d, l))
	}
	return c.reply(encode(req, wire.Done{}))
}

// fetchDeviceList serves FetchDeviceList.
func (c *conn) fetchDeviceList(req uint32, m wire.FetchDeviceList) bool {
	l, _, err := c.s.heldDeviceList(c, m.User)
	switch {
	case err != nil:
		c.s.log.Error("read device list", "err", cause(err))
		return c.reply(errorMsg(req, wire.ErrorInternal, "the relay could not read the device list"))
	case l == nil:
		return c.reply(errorMsg(req, wire.ErrorNotFound, "no device list for "+m.User))
	}
	return c.reply(encode(req, wire.DeviceListReply{List: *l}))
}

// checkDeviceList serves CheckDeviceList, the stale-list answer: Done when
// the relay holds no list of the user later than the generation the
// sender holds (or none), else the list it holds, so that the sender adds
// the lanes it lacks without waiting for its next connection.
func (c *conn) checkDeviceList(req uint32, m wire.CheckDeviceList) bool {
	l, _, err := c.s.heldDeviceList(c, m.User)
	switch {
	case err != nil:
		c.s.log.Error("read device list", "err", cause(err))
		return c.reply(errorMsg(req, wire.ErrorInternal, "the relay could not read the device list"))
	case l == nil || l.Generation <= m.Generation:
		return c.reply(encode(req, wire.Done{}))
	}
	c.s.metrics.staleListAnswered.Inc()
	return c.reply(encode(req, wire.DeviceListReply{List: *l}))
}

// deviceAllowed reports, at authentication, whether address may
// authenticate with key: always when the relay keeps no lists or holds
// none for its user; otherwise only an active device of the list, with the
// list's key. A refusal's text names the cause in one line.
func (s *Server) deviceAllowed(c *conn, address string, key [32]byte) (string, error) {
	if !s.cfg.DeviceLists {
		return "", nil
	}
	a, err := engine.ParseAddress(address)
	if err != nil {
		return "", err
	}
	l, _, err := s.heldDeviceList(c, a.User)
	if err != nil || l == nil {
		return "", err
	}
	if e, ok := entryOf(*l, a.Device); ok && e.State == wire.DeviceRevoked {
		return removedText(a, *l), nil
	}
	if !engine.ActiveDevice(*l, a.Device, key) {
		if _, listed := entryOf(*l, a.Device); listed && s.cfg.AllowReregister {
			return "", nil // a takeover, as Register allows it (Config.AllowReregister)
		}
		return fmt.Sprintf("%s is not an active device in the device list of %s (generation %d)", address, a.User, l.Generation), nil
	}
	return "", nil
}

// removedText is the one line a removed device reads when it is refused.
func removedText(d engine.Address, l wire.DeviceList) string {
	return fmt.Sprintf("%s was removed from the devices of %s (device list generation %d): it can no longer connect as %s", d, d.User, l.Generation, d.User)
}

// entryOf returns the entry of device number in l.
func entryOf(l wire.DeviceList, number uint32) (wire.DeviceEntry, bool) {
	for _, e := range l.Entries {
		if e.Number == number {
			return e, true
		}
	}
	return wire.DeviceEntry{}, false
}
