package wire

import "fmt"

// Kinds 40 to 43, added after version 1 was frozen: the relay keeps the
// latest device list of each account (devicelist.go) and hands it out. A
// relay that serves them announces FeatureDeviceLists in Features; a client
// that does not see it publishes nothing.
//
// Layout (docs/wire-format.md): PublishDeviceList and DeviceListReply are a
// u32 length and an encoded device list; FetchDeviceList is a u8 length and
// a user; DeviceListRefused is a reason byte, a presence byte and, when it
// is 1, a u32 length and the list the relay holds.

// Device list relay kinds.
const (
	RelayPublishDeviceList RelayKind = 40 // client → server
	RelayFetchDeviceList   RelayKind = 41 // client → server
	RelayDeviceListReply   RelayKind = 42 // server → client
	RelayDeviceListRefused RelayKind = 43 // server → client

	relayDeviceFirst = RelayPublishDeviceList
	relayDeviceLast  = RelayDeviceListRefused
)

// FeatureDeviceLists: the relay serves the device list kinds and holds
// every account with a list to it: a device not active in its account's
// list is refused at authentication.
const FeatureDeviceLists FeatureSet = 1 << 8

// maxDeviceListMessageSize is the largest device list relay message: a
// refusal carrying the held list.
const maxDeviceListMessageSize = relayHeaderSize + 1 + 1 + 4 + MaxDeviceListSize

// PublishDeviceList asks the relay to hold List as its account's latest.
// The relay answers Done or DeviceListRefused.
type PublishDeviceList struct {
	List DeviceList
}

// FetchDeviceList asks for the latest list the relay holds for User. The
// relay answers DeviceListReply, or Error{not found} when it holds none.
type FetchDeviceList struct {
	User string
}

// DeviceListReply carries the list the relay holds.
type DeviceListReply struct {
	List DeviceList
}

// DeviceListRefused tells a publisher its list is not held, and why. When
// the cause is DeviceListStale, Current is the list the relay holds.
type DeviceListRefused struct {
	Reason  DeviceListRefusal
	Current *DeviceList
}

// DeviceListRefusal says why the relay refused a device list.
type DeviceListRefusal uint8

// Device list refusals.
const (
	// DeviceListStale: the list is not the generation after the held one
	// or does not name its digest (or generation 1 when one is held).
	DeviceListStale DeviceListRefusal = 1
	// DeviceListInvalid: a signature does not verify or the list breaks
	// a rule of the chain (docs/protocol.md).
	DeviceListInvalid DeviceListRefusal = 2
	// DeviceListNotYours: the list is of another user than the
	// publisher's address, or does not name the publisher as an active
	// device with the key it authenticated with.
	DeviceListNotYours DeviceListRefusal = 3
	// DeviceListQuota: the publisher's IP started all the lists it may.
	DeviceListQuota DeviceListRefusal = 4
)

var deviceListRefusalNames = [...]string{
	DeviceListStale:    "stale device list",
	DeviceListInvalid:  "invalid device list",
	DeviceListNotYours: "device list not the publisher's",
	DeviceListQuota:    "too many device lists from this IP",
}

// String returns a short lowercase phrase such as "stale device list".
func (r DeviceListRefusal) String() string {
	if r.valid() {
		return deviceListRefusalNames[r]
	}
	return fmt.Sprintf("device list refusal %d", uint8(r))
}

func (r DeviceListRefusal) valid() bool { return r >= DeviceListStale && r <= DeviceListQuota }

// RelayKind implements RelayMessage.
func (PublishDeviceList) RelayKind() RelayKind { return RelayPublishDeviceList }

// RelayKind implements RelayMessage.
func (FetchDeviceList) RelayKind() RelayKind { return RelayFetchDeviceList }

// RelayKind implements RelayMessage.
func (DeviceListReply) RelayKind() RelayKind { return RelayDeviceListReply }

// RelayKind implements RelayMessage.
func (DeviceListRefused) RelayKind() RelayKind { return RelayDeviceListRefused }

func (PublishDeviceList) isRelayMessage() {}
func (FetchDeviceList) isRelayMessage()   {}
func (DeviceListReply) isRelayMessage()   {}
func (DeviceListRefused) isRelayMessage() {}

var relayDeviceKindNames = [...]string{
	"publish device list", "fetch device list", "device list reply", "device list refused",
}

func isRelayDevice(m RelayMessage) bool {
	switch m.(type) {
	case PublishDeviceList, FetchDeviceList, DeviceListReply, DeviceListRefused:
		return true
	}
	return false
}

// appendSizedDeviceList appends a u32 length and the encoded list.
func appendSizedDeviceList(b []byte, l DeviceList) ([]byte, error) {
	enc, err := EncodeDeviceList(l)
	if err != nil {
		return nil, err
	}
	b = append(b, byte(len(enc)>>24), byte(len(enc)>>16), byte(len(enc)>>8), byte(len(enc)))
	return append(b, enc...), nil
}

func appendRelayDevice(b []byte, m RelayMessage) ([]byte, error) {
	switch m := m.(type) {
	case PublishDeviceList:
		return appendSizedDeviceList(b, m.List)
	case DeviceListReply:
		return appendSizedDeviceList(b, m.List)
	case FetchDeviceList:
		if err := checkUser(m.User); err != nil {
			return nil, err
		}
		b = append(b, byte(len(m.User)))
		return append(b, m.User...), nil
	case DeviceListRefused:
		if !m.Reason.valid() {
			return nil, fmt.Errorf("unknown %s: %w", m.Reason, ErrMalformed)
		}
		b = append(b, byte(m.Reason))
		if m.Current == nil {
			return append(b, 0), nil
		}
		return appendSizedDeviceList(append(b, 1), *m.Current)
	}
	return nil, fmt.Errorf("unsupported type %T: %w", m, ErrMalformed)
}

// sizedDeviceList reads a u32 length and a device list of that length.
func (r *reader) sizedDeviceList() DeviceList {
	p := r.sized("device list", 1, MaxDeviceListSize)
	if r.err != nil {
		return DeviceList{}
	}
	l, err := DecodeDeviceList(p)
	if err != nil {
		r.fail(err)
	}
	return l
}

func (r *reader) relayDevice(kind RelayKind) RelayMessage {
	switch kind {
	case RelayPublishDeviceList:
		return ok(r, PublishDeviceList{List: r.sizedDeviceList()})
	case RelayDeviceListReply:
		return ok(r, DeviceListReply{List: r.sizedDeviceList()})
	case RelayFetchDeviceList:
		user := string(r.take(int(r.u8("user length")), "user"))
		if r.err == nil {
			if err := checkUser(user); err != nil {
				r.fail(err)
			}
		}
		return ok(r, FetchDeviceList{User: user})
	case RelayDeviceListRefused:
		var f DeviceListRefused
		f.Reason = DeviceListRefusal(r.u8("reason"))
		if r.err == nil && !f.Reason.valid() {
			r.fail(fmt.Errorf("unknown %s: %w", f.Reason, ErrMalformed))
		}
		if r.flag("current present") {
			l := r.sizedDeviceList()
			f.Current = &l
		}
		return ok(r, f)
	}
	r.fail(fmt.Errorf("kind %d: %w", kind, ErrUnknownRelayKind))
	return nil
}
