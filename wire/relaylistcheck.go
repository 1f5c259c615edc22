package wire

import (
	"encoding/binary"
	"fmt"
)

// Kind 48 (issue 33): a sender that just stored a message to a person asks
// the relay whether the device list it holds of them is the latest. A relay
// that serves it announces FeatureDeviceListCheck; a client that does not
// see it asks nothing (and learns a newer list at its next connection).
//
// Layout (docs/wire-format.md): a u8 length and a user, then the u64
// generation the sender holds (at least 1). The relay answers Done when it
// holds no later generation (or none), DeviceListReply (kind 42) carrying
// its list when it holds a later one.

// RelayCheckDeviceList is the kind of CheckDeviceList (client → server).
const RelayCheckDeviceList RelayKind = 48

// FeatureDeviceListCheck: the relay answers CheckDeviceList.
const FeatureDeviceListCheck FeatureSet = 1 << 10

// CheckDeviceList asks whether the relay holds a list of User later than
// Generation, the one the sender holds.
type CheckDeviceList struct {
	User       string
	Generation uint64
}

// RelayKind implements RelayMessage.
func (CheckDeviceList) RelayKind() RelayKind { return RelayCheckDeviceList }

func (CheckDeviceList) isRelayMessage() {}

func appendCheckDeviceList(b []byte, m CheckDeviceList) ([]byte, error) {
	if err := checkUser(m.User); err != nil {
		return nil, err
	}
	if m.Generation == 0 {
		return nil, fmt.Errorf("device list check of generation 0: %w", ErrMalformed)
	}
	b = append(b, byte(len(m.User)))
	b = append(b, m.User...)
	return binary.BigEndian.AppendUint64(b, m.Generation), nil
}

func (r *reader) checkDeviceList() RelayMessage {
	user := string(r.take(int(r.u8("user length")), "user"))
	if r.err == nil {
		if err := checkUser(user); err != nil {
			r.fail(err)
		}
	}
	gen := r.u64("generation")
	if r.err == nil && gen == 0 {
		r.fail(fmt.Errorf("device list check of generation 0: %w", ErrMalformed))
	}
	return ok(r, CheckDeviceList{User: user, Generation: gen})
}
