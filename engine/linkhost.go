package engine

import (
	"context"
	"errors"
	"fmt"

	"github.com/parley-chat/parley/wire"
)

// The holder's side of linking as two steps, so that a person can look at
// the six digits between them: BeginLink takes the new device's code and
// returns once the digits are known; Finish, called only once the person
// confirmed them, links. Nothing in the profile changes before Finish: a
// ceremony abandoned after BeginLink (its mailbox closed) leaves both
// profiles as they were. `parley device add` and the chat's devices panel
// both run it.

// LinkMailbox is one side of a provisioning mailbox on the relay: the
// ceremony's payloads, in order, each way. The transport's provisioning
// connection implements it; tests pass one in memory.
type LinkMailbox interface {
	Send(ctx context.Context, payload []byte) error
	Receive(ctx context.Context) ([]byte, error)
}

// HostLink is a link ceremony begun on the device holding the account
// key, waiting for the person to compare the six digits.
type HostLink struct {
	c     *Client
	box   LinkMailbox
	host  *LinkHost
	offer LinkOfferData
}

// LinkResult is what a finished link did: the device it added, the list
// that names it, and what history went with its package.
type LinkResult struct {
	Device  Address
	List    wire.DeviceList
	History BackupSummary
	// ArchiveLeftOut, with HistoryNone, says why the archive did not go
	// (ErrArchiveLeftOut): the device is linked without it. Nil when it
	// went, or had nothing to carry.
	ArchiveLeftOut error
}

// BeginLink starts linking the new device whose code is code, on box (the
// mailbox the code names, opened by the caller): it checks that this
// device may link one (LinkOffer), reads the new device's hello, and
// sends the offer. The six digits are then HostLink.Check.
func (c *Client) BeginLink(ctx context.Context, code LinkCode, box LinkMailbox) (*HostLink, error) {
	offer, err := c.LinkOffer(ctx)
	if err != nil {
		return nil, err
	}
	hello, err := box.Receive(ctx)
	if err != nil {
		return nil, fmt.Errorf("waiting for the new device: %w", err)
	}
	h, err := NewLinkHost(c.cfg.Random, code, hello, offer)
	if err != nil {
		return nil, err
	}
	if err := box.Send(ctx, h.Offer()); err != nil {
		return nil, fmt.Errorf("send the offer to the new device: %w", err)
	}
	return &HostLink{c: c, box: box, host: h, offer: offer}, nil
}

// Check returns the six digits both screens show.
func (l *HostLink) Check() string { return l.host.Check() }

// Device is the address the new device gets once linked.
func (l *HostLink) Device() Address { return Address{User: l.offer.User, Device: l.offer.Number} }

// Finish links, once the person confirmed the digits: it takes the new
// device's join, signs and publishes the list that adds it (the profile's
// one change), sends the package with the history chosen (progress
// reports its stages; nil reports nothing), and waits for the new device
// to say it stored it. acceptAll is the profile's setting for strangers,
// which the package carries.
func (l *HostLink) Finish(ctx context.Context, choice HistoryChoice, acceptAll bool, progress LinkHistoryProgress) (LinkResult, error) {
	if progress == nil {
		progress = func(string, int64, int64) {}
	}
	join, err := l.box.Receive(ctx)
	if err != nil {
		return LinkResult{}, fmt.Errorf("waiting for the new device to join: %w", err)
	}
	entry, err := l.host.TakeJoin(join, l.c.cfg.Now().Unix())
	if err != nil {
		return LinkResult{}, err
	}
	list, err := l.c.LinkDevice(ctx, entry, choice)
	if err != nil {
		return LinkResult{}, err
	}
	res := LinkResult{Device: Address{User: list.User, Device: entry.Number}, List: list}
	pkg, err := l.c.LinkPackage(ctx, list, acceptAll)
	if err != nil {
		return res, err
	}
	hist, sum, err := l.c.LinkHistory(ctx, entry.Number, progress)
	if errors.Is(err, ErrArchiveLeftOut) {
		res.ArchiveLeftOut, err = err, nil
	}
	if err != nil {
		return res, fmt.Errorf("%s is in the account's list, but its history did not go out: %w", res.Device, err)
	}
	res.History = sum
	pkg.History = hist
	sealed, err := l.host.Package(pkg)
	if err != nil {
		return res, err
	}
	if err := l.box.Send(ctx, sealed); err != nil {
		return res, fmt.Errorf("%s is in the account's list, but its package did not go out: %w", res.Device, err)
	}
	done, err := l.box.Receive(ctx)
	if err != nil {
		return res, fmt.Errorf("%s is in the account's list, but did not say it stored its package: %w", res.Device, err)
	}
	if err := l.host.TakeDone(done); err != nil {
		return res, err
	}
	return res, nil
}
