package natsstore

// Requests counts the messages the store's connection sent (each request to
// the cluster is one), for tests of what an operation costs.
func (s *Store) Requests() uint64 { return s.nc.Stats().OutMsgs }
