package relayserver

import (
	"sync"

	"github.com/parley-chat/parley/wire"
)

// A connection's blob puts are committed by a goroutine of their own, so
// that the reader goes on reading while one is written: the puts of one
// upload that arrive meanwhile are written together, in one durable write
// (BlobStore.PutBlobs: one transaction and one fsync on SQLite), each
// answered once that write is done. Any other request waits until every
// put before it is answered, so a connection's requests still take effect
// in the order it sent them.

// maxPutsQueued bounds a connection's puts that wait for the store or are
// being written: 4 of at most 256 KiB, 1 MiB per uploading connection, as
// many as a client keeps in flight (transport's blobWindow). Past it the
// reader waits, and the client's further puts wait in its socket.
const maxPutsQueued = 4

// putQueue is a connection's puts waiting for the store.
type putQueue struct {
	mu      sync.Mutex
	cond    *sync.Cond // signalled when a put leaves the queue or the worker ends
	puts    []queuedPut
	running bool // a worker goroutine is writing
}

type queuedPut struct {
	req uint32
	m   wire.BlobPut
}

// queuePut hands a put to the connection's put worker, starting it if
// none runs, and waits while maxPutsQueued are queued.
func (c *conn) queuePut(req uint32, m wire.BlobPut) {
	q := &c.putq
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.cond == nil {
		q.cond = sync.NewCond(&q.mu)
	}
	for len(q.puts) >= maxPutsQueued {
		q.cond.Wait()
	}
	q.puts = append(q.puts, queuedPut{req: req, m: m})
	if !q.running {
		q.running = true
		go c.putLoop()
	}
}

// waitPuts returns once every queued put is answered.
func (c *conn) waitPuts() {
	q := &c.putq
	q.mu.Lock()
	defer q.mu.Unlock()
	for q.running {
		q.cond.Wait()
	}
}

// putLoop writes the queued puts until none is left: each time the leading
// run of puts to one blob at consecutive offsets, together.
func (c *conn) putLoop() {
	q := &c.putq
	for {
		q.mu.Lock()
		if len(q.puts) == 0 {
			q.running = false
			q.cond.Broadcast()
			q.mu.Unlock()
			return
		}
		n := 1
		for n < len(q.puts) && q.puts[n].m.ID == q.puts[0].m.ID &&
			q.puts[n].m.Offset == q.puts[n-1].m.Offset+int64(len(q.puts[n-1].m.Data)) {
			n++
		}
		group := append([]queuedPut(nil), q.puts[:n]...)
		q.mu.Unlock()
		c.putGroup(group)
		q.mu.Lock()
		q.puts = q.puts[n:]
		q.cond.Broadcast()
		q.mu.Unlock()
	}
}

// putGroup writes puts to one blob at consecutive offsets in one write and
// answers each; those after a refused one are served one by one, as if
// they had come alone.
func (c *conn) putGroup(group []queuedPut) {
	s := c.s
	now := s.now()
	chunks := make([][]byte, len(group))
	for i, p := range group {
		chunks[i] = p.m.Data
	}
	id := group[0].m.ID
	infos, err := s.blobs.PutBlobs(c.ctx, id, c.addr, group[0].m.Offset, chunks, now)
	s.blobMetrics.putGroup.Observe(float64(len(infos)))
	for i, p := range group {
		switch {
		case i < len(infos):
			s.blobMetrics.received.Add(float64(len(p.m.Data)))
			c.reply(encode(p.req, wire.BlobHeld{ID: id, Held: infos[i].Held, Size: infos[i].Size}))
		case i == len(infos) && err != nil:
			c.blobFailed(p.req, id, "put blob", err)
		default:
			c.putOne(p.req, p.m)
		}
	}
}

// putOne writes one put and answers it.
func (c *conn) putOne(req uint32, m wire.BlobPut) bool {
	s := c.s
	info, err := s.blobs.PutBlob(c.ctx, m.ID, c.addr, m.Offset, m.Data, s.now())
	if err != nil {
		return c.blobFailed(req, m.ID, "put blob", err)
	}
	s.blobMetrics.received.Add(float64(len(m.Data)))
	return c.reply(encode(req, wire.BlobHeld{ID: m.ID, Held: info.Held, Size: info.Size}))
}
