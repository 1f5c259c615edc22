package natsstore

import "time"

// Requests counts the messages the store's connection sent (each request to
// the cluster is one), for tests of what an operation costs.
func (s *Store) Requests() uint64 { return s.nc.Stats().OutMsgs }

// SenderUsageKnown reports whether the store would check what sender holds
// in recipient's mailbox from its own last write, without a read.
func (s *Store) SenderUsageKnown(recipient, sender string) bool {
	_, ok := s.usageW.known(senderKey(recipient, sender), time.Now())
	return ok
}

// IPUsageKnown reports whether the store would check what ip holds from
// its own last write, without a read.
func (s *Store) IPUsageKnown(ip string) bool {
	_, ok := s.usageW.known(ipKey(ip), time.Now())
	return ok
}
