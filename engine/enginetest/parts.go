package enginetest

import (
	"bytes"
	"context"
	"errors"
	"time"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/wire"
)

// The parts of engine.Relay that the in-process network answers plainly: it
// never wakes the loop (the engine polls), knows no connection epochs,
// announces no features (no envelope status, no lifetime), keeps no blobs
// (a test that sends files sets engine.FileConfig.Blobs to a Blobs) and takes
// blocks without keeping them (Blocker records them). A wrapper that changes
// Submit must change SubmitBatch too (SubmitEach).

// Wake implements engine.RelayLink: no wake-ups, the loop polls.
func (e *Endpoint) Wake() <-chan struct{} { return nil }

// Link implements engine.RelayLink: up unless the network set this device
// down.
func (e *Endpoint) Link() engine.Link {
	e.n.mu.Lock()
	defer e.n.mu.Unlock()
	if e.n.down[e.self] {
		return engine.Link{Err: ErrRelayDown}
	}
	return engine.Link{Up: true}
}

// OneTimePreKeyPool implements engine.PreKeyPool: the network does not tell.
func (e *Endpoint) OneTimePreKeyPool() (int, bool) { return 0, false }

// RelayFeatures implements engine.EnvelopeNews: none announced.
func (e *Endpoint) RelayFeatures() (wire.FeatureSet, bool) { return 0, false }

// EnvelopeStatuses implements engine.EnvelopeNews: none.
func (e *Endpoint) EnvelopeStatuses() []wire.EnvelopeStatus { return nil }

// EnvelopeLifetime implements engine.EnvelopeNews: none announced.
func (e *Endpoint) EnvelopeLifetime() (time.Duration, bool) { return 0, false }

// SubmitBatch implements engine.BatchSubmitter, one envelope at a time.
func (e *Endpoint) SubmitBatch(ctx context.Context, envs []wire.Envelope) []error {
	return SubmitEach(ctx, e.Submit, envs)
}

// SubmitEach hands envs to submit one at a time, in order: SubmitBatch for a
// relay, or a wrapper of one, that has no batch of its own.
func SubmitEach(ctx context.Context, submit func(context.Context, wire.Envelope) error, envs []wire.Envelope) []error {
	errs := make([]error, len(envs))
	for i, env := range envs {
		errs[i] = submit(ctx, env)
	}
	return errs
}

// CreateBlob implements engine.BlobRelay: the network keeps no blobs.
func (e *Endpoint) CreateBlob(context.Context, int64) (wire.BlobID, error) {
	return wire.BlobID{}, engine.ErrNoBlobStore
}

// BlobHeld implements engine.BlobRelay: the network keeps no blobs.
func (e *Endpoint) BlobHeld(context.Context, wire.BlobID) (int64, int64, error) {
	return 0, 0, engine.ErrNoBlobStore
}

// PutBlob implements engine.BlobRelay: the network keeps no blobs.
func (e *Endpoint) PutBlob(context.Context, wire.BlobID, int64, []byte) error {
	return engine.ErrNoBlobStore
}

// GetBlob implements engine.BlobRelay: the network keeps no blobs.
func (e *Endpoint) GetBlob(context.Context, wire.BlobID, int64, int) ([]byte, error) {
	return nil, engine.ErrNoBlobStore
}

// BlockSender implements engine.SenderBlocker: taken, not kept (the
// network's mailboxes deliver blocked senders' envelopes, which the engine
// then drops unopened).
func (e *Endpoint) BlockSender(context.Context, engine.Address, bool) error { return nil }

// SubmitBatch implements engine.BatchSubmitter through this endpoint's own
// Submit, which saves the network.
func (e *FileEndpoint) SubmitBatch(ctx context.Context, envs []wire.Envelope) []error {
	return SubmitEach(ctx, e.Submit, envs)
}

// PublishDeviceList implements engine.DeviceListPublisher. A network that
// keeps no lists (none was set) says so; one that keeps lists takes l by
// the relay's rules: the list held again is done, a first list or the
// held list's successor (engine.VerifyDeviceList) is held, a stale one is
// refused with the list held, any other refused as invalid.
func (e *Endpoint) PublishDeviceList(_ context.Context, l wire.DeviceList) error {
	e.n.mu.Lock()
	defer e.n.mu.Unlock()
	if len(e.n.lists) == 0 {
		return engine.ErrDeviceListsUnsupported
	}
	enc, err := wire.EncodeDeviceList(l)
	if err != nil {
		return &engine.DeviceListRefusedError{Reason: wire.DeviceListInvalid}
	}
	var prev *wire.DeviceList
	if b, ok := e.n.lists[l.User]; ok {
		if bytes.Equal(b, enc) {
			return nil
		}
		held, err := wire.DecodeDeviceList(b)
		if err != nil {
			return err
		}
		prev = &held
	}
	switch err := engine.VerifyDeviceList(l, prev); {
	case errors.Is(err, engine.ErrDeviceListStale):
		return &engine.DeviceListRefusedError{Reason: wire.DeviceListStale, Current: prev}
	case err != nil:
		return &engine.DeviceListRefusedError{Reason: wire.DeviceListInvalid}
	}
	e.n.lists[l.User] = enc
	return nil
}

// PublishDeviceList implements engine.DeviceListPublisher, saving the
// network after a list it took.
func (e *FileEndpoint) PublishDeviceList(ctx context.Context, l wire.DeviceList) error {
	if err := e.Endpoint.PublishDeviceList(ctx, l); err != nil {
		return err
	}
	return e.Save()
}

// FetchDeviceList implements engine.DeviceListReader: the list a test
// set (Network.SetDeviceList); a network that has none keeps no lists, and
// one that has some holds none for another user.
func (e *Endpoint) FetchDeviceList(_ context.Context, user string) (wire.DeviceList, error) {
	e.n.mu.Lock()
	b, ok := e.n.lists[user]
	any := len(e.n.lists) > 0
	e.n.mu.Unlock()
	switch {
	case ok:
		return wire.DecodeDeviceList(b)
	case any:
		return wire.DeviceList{}, engine.ErrNoDeviceList
	}
	return wire.DeviceList{}, engine.ErrDeviceListsUnsupported
}

// CheckDeviceList implements engine.DeviceListReader: the network answers
// as a relay with FeatureDeviceListCheck would, from the lists it keeps.
func (e *Endpoint) CheckDeviceList(_ context.Context, user string, generation uint64) (*wire.DeviceList, error) {
	e.n.mu.Lock()
	b, ok := e.n.lists[user]
	any := len(e.n.lists) > 0
	e.n.mu.Unlock()
	if !any {
		return nil, engine.ErrDeviceListsUnsupported
	}
	if !ok {
		return nil, nil
	}
	l, err := wire.DecodeDeviceList(b)
	if err != nil || l.Generation <= generation {
		return nil, err
	}
	return &l, nil
}
