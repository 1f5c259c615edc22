package relayserver

import (
	"time"

	"github.com/gorilla/websocket"
	"github.com/parley-chat/parley/wire"
)

// work is what the writer is asked to do besides writing queued replies.
type work uint8

const (
	workFill work = 1 << iota // lease rows into the window
	workTick                  // expire unacknowledged rows, then fill
	workPing                  // send a ping
)

// startWriter lets the writer run, once the connection is authenticated,
// and arms the ping and lease timers. The lease tick expires unacknowledged
// rows and also looks for rows that no notification announced (released by
// another connection, say).
func (c *conn) startWriter() {
	lim := c.s.lim
	c.wmu.Lock()
	c.on = true
	c.ping = time.AfterFunc(lim.PingInterval, func() { c.ask(workPing) })
	c.tick = time.AfterFunc(tickInterval(lim), func() { c.ask(workTick) })
	c.wmu.Unlock()
	c.ask(workFill)
}

func tickInterval(lim Limits) time.Duration {
	return max(lim.LeaseTimeout/4, 10*time.Millisecond)
}

// enqueue queues b for the writer, unless the queue is full or the writer
// has ended.
func (c *conn) enqueue(b []byte) bool {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.ended || len(c.queue) >= c.s.lim.SendQueue {
		return false
	}
	c.queue = append(c.queue, b)
	c.schedule()
	return true
}

// ask adds w to the writer's work and makes sure a writer runs.
func (c *conn) ask(w work) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.work |= w
	c.schedule()
}

// schedule starts a writer goroutine if the writer may run and none is
// running. The caller holds wmu.
func (c *conn) schedule() {
	if c.on && !c.running && !c.ended {
		c.running = true
		go c.writeLoop()
	}
}

// writeLoop does the writer's work until there is none left, then exits; the
// next piece of work starts another. It ends the writer for good after the
// goodbye or a failed write.
func (c *conn) writeLoop() {
	for {
		select {
		case <-c.quit:
			c.goodbye()
			c.endWriter()
			return
		default:
		}
		b, ok := c.dequeue()
		if ok {
			if !c.write(b) {
				c.endWriter()
				return
			}
			continue
		}
		c.wmu.Lock()
		w := c.work
		c.work = 0
		if w == 0 {
			c.running = false
			c.wmu.Unlock()
			return
		}
		c.wmu.Unlock()
		if w&workPing != 0 {
			if err := c.ws.WriteControl(websocket.PingMessage, nil, time.Now().Add(c.s.lim.WriteTimeout)); err != nil {
				c.abort(dropWrite)
				c.endWriter()
				return
			}
			c.ping.Reset(c.s.lim.PingInterval)
		}
		if w&workTick != 0 {
			c.expire()
			c.tick.Reset(tickInterval(c.s.lim))
		}
		if w&(workFill|workTick) != 0 && !c.fill() {
			c.endWriter()
			return
		}
	}
}

// dequeue takes the oldest queued reply.
func (c *conn) dequeue() ([]byte, bool) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if len(c.queue) == 0 {
		return nil, false
	}
	b := c.queue[0]
	c.queue[0] = nil
	c.queue = c.queue[1:]
	if len(c.queue) == 0 {
		c.queue = nil // let an idle connection keep no queue
	}
	return b, true
}

// endWriter ends the writer for good: its timers stop, what is queued is
// dropped, and run may go on to release the connection's leases.
func (c *conn) endWriter() {
	c.wmu.Lock()
	c.ended, c.running, c.queue = true, false, nil
	c.ping.Stop()
	c.tick.Stop()
	c.wmu.Unlock()
	close(c.writerDone)
}

// write writes one message under the write deadline.
func (c *conn) write(b []byte) bool {
	c.ws.SetWriteDeadline(time.Now().Add(c.s.lim.WriteTimeout))
	if err := c.ws.WriteMessage(websocket.BinaryMessage, b); err != nil {
		c.abort(dropWrite)
		return false
	}
	return true
}

// flush writes the replies already queued: they go before deliveries.
func (c *conn) flush() bool {
	for {
		b, ok := c.dequeue()
		if !ok {
			return true
		}
		if !c.write(b) {
			return false
		}
	}
}

// fill leases rows into the free part of the window and delivers them in
// FIFO order.
func (c *conn) fill() bool {
	s := c.s
	for {
		c.mu.Lock()
		free := s.lim.Window - len(c.outstanding)
		c.mu.Unlock()
		if free <= 0 {
			return true
		}
		n := min(free, s.lim.Page)
		now := s.now()
		until := now.Add(s.lim.LeaseTimeout)
		rows, err := s.store.Lease(c.ctx, c.addr, c.holder, n, now, until)
		if err != nil {
			s.log.Error("lease", "err", cause(err))
			return true // the lease tick tries again
		}
		if len(rows) == 0 {
			return true
		}
		c.mu.Lock()
		wall := time.Now()
		for _, r := range rows {
			c.outstanding[r.ID] = leased{at: wall, until: until}
		}
		c.mu.Unlock()
		for _, r := range rows {
			if !c.flush() {
				return false
			}
			select {
			case <-c.quit:
				return true // the rows stay leased until the connection releases them
			default:
			}
			if !c.write(encode(0, wire.Deliver{Row: r.ID, Envelope: r.Envelope})) {
				return false
			}
			s.metrics.delivered.Inc()
			if !r.Accepted.IsZero() {
				s.metrics.acceptToDeliver.Observe(time.Since(r.Accepted).Seconds())
			}
		}
		if len(rows) < n {
			return true
		}
	}
}

// expire forgets rows whose lease ran out; the next fill leases them again.
func (c *conn) expire() {
	now := c.s.now()
	c.mu.Lock()
	defer c.mu.Unlock()
	for r, l := range c.outstanding {
		if !now.Before(l.until) {
			delete(c.outstanding, r)
		}
	}
}

// goodbye writes what is queued, the final message and the close frame, and
// gives the peer closeGrace to answer.
func (c *conn) goodbye() {
	lim := c.s.lim
	if !c.flush() {
		return
	}
	if c.final != nil && !c.write(c.final) {
		return
	}
	if c.closeCode != 0 {
		c.ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(c.closeCode, c.closeText), time.Now().Add(lim.WriteTimeout))
	}
	c.ws.SetReadDeadline(time.Now().Add(closeGrace))
}
