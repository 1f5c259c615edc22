package transport

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/gorilla/websocket"
	"github.com/parley-chat/parley/wire"
)

// socket is one authenticated websocket of a Conn: a reader goroutine
// that routes replies to their requests and deliveries to the receive
// buffer, and a writer goroutine that does every write.
type socket struct {
	c    *Conn
	ws   *websocket.Conn
	out  chan []byte
	done chan struct{} // closed when the reader has ended
	quit chan struct{} // closed by close: the writer says goodbye
	wg   sync.WaitGroup

	closeOnce sync.Once

	mu      sync.Mutex
	err     error // why the reader ended
	pushed  error // an Error the relay pushed before closing
	pending map[uint32]chan<- wire.RelayMessage
}

func startSocket(c *Conn, ws *websocket.Conn) *socket {
	cc := &socket{c: c, ws: ws, out: make(chan []byte, c.opts.SendQueue), done: make(chan struct{}),
		quit: make(chan struct{}), pending: make(map[uint32]chan<- wire.RelayMessage)}
	ws.SetPongHandler(func(string) error {
		ws.SetReadDeadline(time.Now().Add(c.opts.ReadTimeout))
		return nil
	})
	cc.wg.Add(2)
	go cc.readLoop()
	go cc.writeLoop()
	return cc
}

// await registers a request's reply channel; false when the connection has
// ended.
func (cc *socket) await(req uint32, reply chan<- wire.RelayMessage) bool {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	if cc.pending == nil {
		return false
	}
	cc.pending[req] = reply
	return true
}

func (cc *socket) forget(req uint32) {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	delete(cc.pending, req)
}

// cause is why the connection ended: the relay's parting Error if it sent
// one, else the read error.
func (cc *socket) cause() error {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	if cc.pushed != nil {
		return cc.pushed
	}
	return cc.err
}

// lost is the error of a request whose connection ended under it.
func (cc *socket) lost() error {
	return fmt.Errorf("%w: %v", ErrConnectionLost, cc.cause())
}

func (cc *socket) readLoop() {
	defer cc.wg.Done()
	var err error
	for {
		var data []byte
		if _, data, err = cc.ws.ReadMessage(); err != nil {
			break
		}
		cc.ws.SetReadDeadline(time.Now().Add(cc.c.opts.ReadTimeout))
		req, m, derr := wire.DecodeRelay(data)
		if errors.Is(derr, wire.ErrUnknownRelayKind) && len(data) >= 6 && binary.BigEndian.Uint32(data[2:6]) == 0 {
			// A push of a kind added after this build: a newer relay
			// announces it in Features, and a client that did not ask
			// for it goes on without it.
			continue
		}
		if derr != nil {
			err = fmt.Errorf("relay sent a malformed message: %w", derr)
			break
		}
		if req != 0 {
			cc.mu.Lock()
			reply := cc.pending[req]
			delete(cc.pending, req)
			cc.mu.Unlock()
			if reply != nil {
				reply <- m // buffered: one reply per request
			}
			continue
		}
		switch m := m.(type) {
		case wire.Deliver:
			cc.c.deliver(m)
		case wire.PrekeyPool:
			cc.c.setPool(int(m.Count))
		case wire.Features:
			cc.c.setFeatures(m.Set)
		case wire.EnvelopeLifetime:
			cc.c.setLifetime(m.Lifetime)
		case wire.EnvelopeStatus:
			cc.c.addStatus(m)
		case wire.Error:
			cc.mu.Lock()
			cc.pushed = &ServerError{Code: m.Code, Message: m.Message}
			cc.mu.Unlock()
		}
	}
	cc.mu.Lock()
	cc.err = err
	cc.pending = nil
	cc.mu.Unlock()
	close(cc.done)
	cc.ws.NetConn().Close()
}

// closeGrace is how long a closing client waits for the relay's close frame
// after sending its own.
const closeGrace = time.Second

func (cc *socket) writeLoop() {
	defer cc.wg.Done()
	o := cc.c.opts
	ping := time.NewTicker(o.PingInterval)
	defer ping.Stop()
	for {
		select {
		case b := <-cc.out:
			cc.ws.SetWriteDeadline(time.Now().Add(o.WriteTimeout))
			if err := cc.ws.WriteMessage(websocket.BinaryMessage, b); err != nil {
				cc.ws.NetConn().Close()
				return
			}
		case <-ping.C:
			if err := cc.ws.WriteControl(websocket.PingMessage, nil, time.Now().Add(o.WriteTimeout)); err != nil {
				cc.ws.NetConn().Close()
				return
			}
		case <-cc.quit:
			// A normal close; the relay answers with its own close frame,
			// which ends the reader, or closeGrace runs out.
			cc.ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""), time.Now().Add(o.WriteTimeout))
			cc.ws.SetReadDeadline(time.Now().Add(closeGrace))
			return
		case <-cc.done:
			return
		}
	}
}

// close ends the connection and waits for its goroutines.
func (cc *socket) close() {
	cc.closeOnce.Do(func() { close(cc.quit) })
	cc.wg.Wait()
	cc.ws.Close()
}
