package engine

import (
	"context"

	"github.com/parley-chat/parley/wire"
)

// Sender chains in plans and in the store (docs/protocol.md, "Sender
// chains"; docs/storage.md). A group send that goes by a chain carries the
// chain advanced past its message (OwnChainWrite) and, for each member that
// was never announced the chain, its announcement, stored pending on a lane
// of its own (ChainAnnouncement), in the transaction that stores the lanes.
// A receive that opened a chain message, or took an announcement, carries
// the received chain as it leaves it (ReceivedChainWrite).

// OwnChainWrite stores this device's sender chain for a group at a
// generation; it replaces the chain kept there (a rotation), and the
// announcements of a replaced chain are forgotten with it.
type OwnChainWrite struct {
	Group      wire.GroupID
	Generation uint64
	Chain      wire.ChainID
	Record     []byte // session.SenderChain.MarshalBinary
}

// ChainAnnouncement is the announcement of the plan's own chain to one
// member device: a frame of kind 8 stored pending on its own lane of the
// group (acknowledged like a message), recorded as announced to that member
// and not yet acknowledged.
type ChainAnnouncement struct {
	Recipient Address
	ID        wire.LogicalID
	Frame     []byte // wire.EncodeChainAnnounce
}

// ReceivedChainWrite stores a chain another device announced here, as a
// receive leaves it (advanced past an opened message, or as announced).
type ReceivedChainWrite struct {
	Sender     Address
	Chain      wire.ChainID
	Group      wire.GroupID
	Generation uint64
	Record     []byte // session.ReceiverChain.MarshalBinary
}

// ChainMember is a member device's announcement of an own chain: its
// logical ID and whether the member acknowledged it.
type ChainMember struct {
	Member     Address
	AnnounceID wire.LogicalID
	Acked      bool
}

// OwnChain is this device's chain for a group at a generation, as kept.
type OwnChain struct {
	Group      wire.GroupID
	Generation uint64
	Chain      wire.ChainID
	Record     []byte
	Members    []ChainMember
}

// ReceivedChain is a chain another device announced here, as kept.
type ReceivedChain struct {
	Group      wire.GroupID
	Generation uint64
	Record     []byte
}

// ChainStore is the read side of sender chains, a part of Store.
type ChainStore interface {
	// OwnChain returns this device's chain for the group at the
	// generation with its members' announcements, and whether there is one.
	OwnChain(ctx context.Context, group wire.GroupID, generation uint64) (OwnChain, bool, error)
	// ReceivedChain returns the chain sender announced here under that ID,
	// and whether there is one.
	ReceivedChain(ctx context.Context, sender Address, chain wire.ChainID) (ReceivedChain, bool, error)
	// OwnChainByID returns this device's chain of that ID, as OwnChain
	// does, and whether there is one (a need-chain request names a chain
	// only by its ID).
	OwnChainByID(ctx context.Context, chain wire.ChainID) (OwnChain, bool, error)
}
