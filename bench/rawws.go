package bench

import (
	"context"
	"errors"
	"net"
	"net/http"
	"time"

	"github.com/gorilla/websocket"
)

// rawWebsocket measures one websocket connection on loopback, with no
// parley in it: a client sends total bytes as binary messages of size
// bytes to a server that reads and drops them. Streamed, the server
// answers once at the end; one at a time, it answers each message (16
// bytes) before the client sends the next, as a blob chunk's put waits
// for the relay's reply. Both rates are in MB/s (10^6 bytes).
func rawWebsocket(ctx context.Context, size int, total int64) (stream, roundTrip float64, err error) {
	up := websocket.Upgrader{ReadBufferSize: 64 << 10, WriteBufferSize: 64 << 10}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := up.Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer c.Close()
		c.SetReadLimit(int64(size) + 1)
		each := r.URL.Query().Get("mode") == "each"
		reply := make([]byte, 16)
		for {
			_, m, err := c.ReadMessage()
			if err != nil {
				return
			}
			if each || len(m) == 1 {
				if c.WriteMessage(websocket.BinaryMessage, reply) != nil {
					return
				}
			}
		}
	})}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, 0, err
	}
	go srv.Serve(ln)
	defer srv.Close()
	url := "ws://" + ln.Addr().String() + "/"
	n := int(max(total/int64(size), 1))
	// Each is run twice and the better kept: the first run of a fresh
	// connection pays for the TCP window and the buffers growing.
	for range 2 {
		s, err := rawRun(ctx, url+"?mode=stream", size, n, false)
		if err != nil {
			return 0, 0, err
		}
		r, err := rawRun(ctx, url+"?mode=each", size, n, true)
		if err != nil {
			return 0, 0, err
		}
		stream, roundTrip = max(stream, s), max(roundTrip, r)
	}
	return stream, roundTrip, nil
}

// rawRun sends n messages of size bytes and returns the rate in MB/s.
func rawRun(ctx context.Context, url string, size, n int, each bool) (float64, error) {
	d := websocket.Dialer{ReadBufferSize: 64 << 10, WriteBufferSize: 64 << 10}
	c, _, err := d.DialContext(ctx, url, nil)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	msg := make([]byte, size)
	start := time.Now()
	for i := 0; i < n; i++ {
		if err := c.WriteMessage(websocket.BinaryMessage, msg); err != nil {
			return 0, err
		}
		if each {
			if _, _, err := c.ReadMessage(); err != nil {
				return 0, err
			}
		}
	}
	if !each { // a one-byte message asks for the end-of-stream answer
		if err := c.WriteMessage(websocket.BinaryMessage, []byte{0}); err != nil {
			return 0, err
		}
		if _, _, err := c.ReadMessage(); err != nil {
			return 0, err
		}
	}
	el := time.Since(start).Seconds()
	if el <= 0 {
		return 0, errors.New("no time passed")
	}
	return float64(n) * float64(size) / 1e6 / el, nil
}
