package transport

import (
	"context"
	"errors"
	"fmt"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/wire"
)

// Device lists (issue 33): the client's side of kinds 40 to 43. The
// engine publishes its list at every connection to a relay that keeps
// them (engine.DeviceListPublisher); the relay serves them only with
// --device-lists.

// ErrDeviceListsUnsupported means the relay of the current connection did
// not announce wire.FeatureDeviceLists (engine.ErrDeviceListsUnsupported).
var ErrDeviceListsUnsupported = engine.ErrDeviceListsUnsupported

// DeviceListRefusedError is the relay's refusal of a published list
// (engine.DeviceListRefusedError). When Reason is wire.DeviceListStale,
// Current is the list the relay holds.
type DeviceListRefusedError = engine.DeviceListRefusedError

// deviceListsSupported checks the relay's features when they are known;
// a request sent before they are is settled by its reply.
func (c *Conn) deviceListsSupported() error {
	if f, known := c.RelayFeatures(); known && !f.Has(wire.FeatureDeviceLists) {
		return ErrDeviceListsUnsupported
	}
	return nil
}

// PublishDeviceList asks the relay to hold l as its account's latest list.
// It returns nil once the relay holds l (also when it held it already), a
// *DeviceListRefusedError naming the cause, ErrDeviceListsUnsupported, or
// another error when the outcome is unknown (publishing again is safe).
func (c *Conn) PublishDeviceList(ctx context.Context, l wire.DeviceList) error {
	if err := c.deviceListsSupported(); err != nil {
		return fmt.Errorf("publish device list: %w", err)
	}
	r, err := c.call(ctx, wire.PublishDeviceList{List: l})
	if err != nil {
		if c.deviceListsSupported() != nil {
			err = ErrDeviceListsUnsupported
		}
		return fmt.Errorf("publish device list: %w", err)
	}
	switch r := r.(type) {
	case wire.Done:
		return nil
	case wire.DeviceListRefused:
		return &DeviceListRefusedError{Reason: r.Reason, Current: r.Current}
	}
	return unexpected(wire.RelayPublishDeviceList, r)
}

// FetchDeviceList returns the list the relay holds for user; an
// engine.ErrNoDeviceList (wrapping the relay's *ServerError with
// wire.ErrorNotFound) when it holds none.
func (c *Conn) FetchDeviceList(ctx context.Context, user string) (wire.DeviceList, error) {
	if err := c.deviceListsSupported(); err != nil {
		return wire.DeviceList{}, fmt.Errorf("fetch device list: %w", err)
	}
	r, err := c.call(ctx, wire.FetchDeviceList{User: user})
	var se *ServerError
	if errors.As(err, &se) && se.Code == wire.ErrorNotFound {
		return wire.DeviceList{}, &noDeviceList{user: user, err: se}
	}
	if err != nil {
		return wire.DeviceList{}, fmt.Errorf("fetch device list of %s: %w", user, err)
	}
	if l, ok := r.(wire.DeviceListReply); ok {
		return l.List, nil
	}
	return wire.DeviceList{}, unexpected(wire.RelayFetchDeviceList, r)
}

// noDeviceList is the relay's answer that it holds no list for user.
type noDeviceList struct {
	user string
	err  *ServerError
}

func (e *noDeviceList) Error() string {
	return fmt.Sprintf("%s: %v", e.user, engine.ErrNoDeviceList)
}

func (e *noDeviceList) Is(target error) bool { return target == engine.ErrNoDeviceList }

func (e *noDeviceList) Unwrap() error { return e.err }

// CheckDeviceList asks whether the relay holds a list of user later than
// generation, the one held here: nil when it does not, else the later list.
// A relay known not to announce wire.FeatureDeviceListCheck is not asked
// (ErrDeviceListsUnsupported); one asked before its features came and
// refusing the request is taken as not serving it.
func (c *Conn) CheckDeviceList(ctx context.Context, user string, generation uint64) (*wire.DeviceList, error) {
	if f, known := c.RelayFeatures(); known && !f.Has(wire.FeatureDeviceListCheck) {
		return nil, fmt.Errorf("check device list: %w", ErrDeviceListsUnsupported)
	}
	r, err := c.call(ctx, wire.CheckDeviceList{User: user, Generation: generation})
	if err != nil {
		// A request sent before the features came is settled by them.
		if f, known := c.RelayFeatures(); known && !f.Has(wire.FeatureDeviceListCheck) {
			err = ErrDeviceListsUnsupported
		}
		return nil, fmt.Errorf("check device list of %s: %w", user, err)
	}
	switch r := r.(type) {
	case wire.Done:
		return nil, nil
	case wire.DeviceListReply:
		return &r.List, nil
	}
	return nil, unexpected(wire.RelayCheckDeviceList, r)
}
