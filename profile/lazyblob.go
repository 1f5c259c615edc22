package profile

import (
	"context"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/wire"
)

// The blob store and the sender block go through the lazy connection like
// everything else: a command that sends a file or blocks a sender connects
// on first use.

// CreateBlob implements engine.BlobRelay.
func (l *lazyRelay) CreateBlob(ctx context.Context, size int64) (wire.BlobID, error) {
	c, err := l.get(ctx)
	if err != nil {
		return wire.BlobID{}, err
	}
	return c.CreateBlob(ctx, size)
}

// BlobHeld implements engine.BlobRelay.
func (l *lazyRelay) BlobHeld(ctx context.Context, id wire.BlobID) (held, size int64, err error) {
	c, err := l.get(ctx)
	if err != nil {
		return 0, 0, err
	}
	return c.BlobHeld(ctx, id)
}

// PutBlob implements engine.BlobRelay.
func (l *lazyRelay) PutBlob(ctx context.Context, id wire.BlobID, offset int64, data []byte) error {
	c, err := l.get(ctx)
	if err != nil {
		return err
	}
	return c.PutBlob(ctx, id, offset, data)
}

// GetBlob implements engine.BlobRelay.
func (l *lazyRelay) GetBlob(ctx context.Context, id wire.BlobID, offset int64, n int) ([]byte, error) {
	c, err := l.get(ctx)
	if err != nil {
		return nil, err
	}
	return c.GetBlob(ctx, id, offset, n)
}

// BlockSender implements engine.SenderBlocker.
func (l *lazyRelay) BlockSender(ctx context.Context, sender engine.Address, blocked bool) error {
	c, err := l.get(ctx)
	if err != nil {
		return err
	}
	return c.BlockSender(ctx, sender, blocked)
}

// PublishDeviceList implements engine.DeviceListPublisher.
func (l *lazyRelay) PublishDeviceList(ctx context.Context, list wire.DeviceList) error {
	c, err := l.get(ctx)
	if err != nil {
		return err
	}
	return c.PublishDeviceList(ctx, list)
}

// FetchDeviceList implements engine.DeviceListReader.
func (l *lazyRelay) FetchDeviceList(ctx context.Context, user string) (wire.DeviceList, error) {
	c, err := l.get(ctx)
	if err != nil {
		return wire.DeviceList{}, err
	}
	return c.FetchDeviceList(ctx, user)
}

// CheckDeviceList implements engine.DeviceListReader.
func (l *lazyRelay) CheckDeviceList(ctx context.Context, user string, generation uint64) (*wire.DeviceList, error) {
	c, err := l.get(ctx)
	if err != nil {
		return nil, err
	}
	return c.CheckDeviceList(ctx, user, generation)
}
