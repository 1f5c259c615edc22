package natsstore

import "github.com/parley-chat/parley/transport/relaystore"

// Requests counts the messages the store's connection sent (each request to
// the cluster is one), for tests of what an operation costs.
func (s *Store) Requests() uint64 { return s.nc.Stats().OutMsgs }

// ReturnGrants returns every grant this relay holds of the usage counts, as
// it does once they fall idle.
func (s *Store) ReturnGrants() {
	l := s.ledger
	l.mu.Lock()
	var keys []string
	for k, c := range l.counts {
		if c.granted != (relaystore.Usage{}) {
			keys = append(keys, k)
		}
	}
	l.mu.Unlock()
	l.each(keys, func(k string) { l.tend(k, true) })
}

// SenderGrant is what this relay holds granted of sender's count in
// recipient's mailbox, spent or not.
func (s *Store) SenderGrant(recipient, sender string) relaystore.Usage {
	s.ledger.mu.Lock()
	defer s.ledger.mu.Unlock()
	if c := s.ledger.counts[senderKey(recipient, sender)]; c != nil {
		return c.granted
	}
	return relaystore.Usage{}
}

// Crash ends the store without returning its grants, as a relay killed
// with SIGKILL would: they stay in the records until they expire.
func (s *Store) Crash() {
	s.ledger.sub.Unsubscribe()
	close(s.ledger.stop)
	<-s.ledger.done
	s.ledger.sub = nil // Close returns nothing then
	s.Close()
}
