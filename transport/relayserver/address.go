package relayserver

import (
	"context"

	"github.com/gorilla/websocket"
	"github.com/parley-chat/parley/transport/relaystore"
	"github.com/parley-chat/parley/wire"
)

// The connections of each authenticated address, and the news they are
// told: mail to lease, the one-time prekey pool, an eviction. The same news
// reaches the relays sharing the store through its Notifier.

// addressFull reports whether address has all the connections it may.
func (s *Server) addressFull(address string) bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.byAddr[address]) >= s.lim.MaxConnectionsPerAddress
}

// attach lists an authenticated connection under its address, within the
// per-address cap; it reports why not otherwise.
func (s *Server) attach(c *conn) (ok, full bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.shutdown {
		return false, false
	}
	if len(s.byAddr[c.addr]) >= s.lim.MaxConnectionsPerAddress {
		return false, true
	}
	set := s.byAddr[c.addr]
	if set == nil {
		set = make(map[*conn]struct{})
		s.byAddr[c.addr] = set
		// The first connection of the address here: hear what other
		// relays sharing the store say of it.
		if n, ok := s.store.(relaystore.Notifier); ok {
			addr := c.addr
			stop, err := n.Watch(addr, func(sig relaystore.Signal) {
				if sig.Mail {
					s.pokeLocal(addr)
				}
				if sig.Pool >= 0 {
					s.tellPoolLocal(addr, sig.Pool)
				}
				if len(sig.Statuses) > 0 {
					s.tellStatusLocal(addr, sig.Statuses)
				}
			})
			if err != nil {
				s.log.Error("watch for other relays", "err", cause(err))
			} else {
				s.watches[addr] = stop
			}
		}
	}
	set[c] = struct{}{}
	return true, false
}

func (s *Server) detach(c *conn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if set := s.byAddr[c.addr]; set != nil {
		delete(set, c)
		if len(set) == 0 {
			delete(s.byAddr, c.addr)
			if stop := s.watches[c.addr]; stop != nil {
				stop()
				delete(s.watches, c.addr)
			}
		}
	}
}

// notifyPool tells every connection of address, on this relay and on the
// others sharing the store, how many one-time prekeys the relay holds for
// it.
func (s *Server) notifyPool(address string, count int) {
	s.tellPoolLocal(address, count)
	s.signal(address, relaystore.Signal{Pool: count})
}

func (s *Server) tellPoolLocal(address string, count int) {
	msg := encode(0, wire.PrekeyPool{Count: uint32(max(count, 0))})
	s.mu.RLock()
	defer s.mu.RUnlock()
	for c := range s.byAddr[address] {
		c.push(msg)
	}
}

// notify wakes every connection of address, on this relay and on the others
// sharing the store, to lease what is new.
func (s *Server) notify(address string) {
	s.pokeLocal(address)
	s.signal(address, relaystore.Signal{Mail: true, Pool: -1})
}

func (s *Server) pokeLocal(address string) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	for c := range s.byAddr[address] {
		c.poke()
	}
}

// signal tells the other relays sharing the store, if any.
func (s *Server) signal(address string, sig relaystore.Signal) {
	if n, ok := s.store.(relaystore.Notifier); ok {
		if err := n.Notify(context.Background(), address, sig); err != nil {
			s.log.Error("signal other relays", "err", cause(err))
		}
	}
}

// evict closes the connections of address authenticated with another key
// than key: the address was registered again.
func (s *Server) evict(address string, key [32]byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for c := range s.byAddr[address] {
		if c.key != key {
			c.finish(dropKicked, errorMsg(0, wire.ErrorAuthFailed, address+" was registered to another identity"), websocket.ClosePolicyViolation, "registered to another identity")
		}
	}
}

// evictRemoved closes the connections of address, a device its account's
// list now revokes, with why as the last word they read.
func (s *Server) evictRemoved(address, why string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for c := range s.byAddr[address] {
		c.finish(dropRemoved, errorMsg(0, wire.ErrorAuthFailed, why), websocket.ClosePolicyViolation, "device removed")
	}
}
