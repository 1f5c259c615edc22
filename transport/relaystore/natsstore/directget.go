package natsstore

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
)

// A lease reads a mailbox's next rows with one batch direct get
// ($JS.API.DIRECT.GET.<stream>, a batch of messages of one subject from a
// sequence on, then an end-of-batch status), which the Go client has no
// call for: where the stream's GetMsg costs a request per row, and one
// more that finds nothing, each answered in JSON with the envelope in
// base64. The mailbox streams allow direct gets (AllowDirect), so any
// replica answers, a follower too, which may not have applied the newest
// messages yet: a lease that knows of a row past what the batch returned
// (this relay appended it, or another relay's wake-up named it) reads the
// rest from the stream's leader (Store.Lease).

// directGets carries batch direct gets over one subscription of the
// store's connection, each request under its own reply subject.
type directGets struct {
	nc     *nats.Conn
	prefix string // the reply subjects' prefix, with the trailing dot
	sub    *nats.Subscription

	mu      sync.Mutex
	next    uint64
	waiting map[string]chan *nats.Msg
}

func newDirectGets(nc *nats.Conn) (*directGets, error) {
	d := &directGets{nc: nc, prefix: nc.NewRespInbox() + ".", waiting: make(map[string]chan *nats.Msg)}
	sub, err := nc.Subscribe(d.prefix+"*", func(m *nats.Msg) {
		d.mu.Lock()
		ch := d.waiting[m.Subject[len(d.prefix):]]
		d.mu.Unlock()
		if ch != nil {
			select {
			case ch <- m:
			default: // more than asked for: not from the stream
			}
		}
	})
	if err != nil {
		return nil, err
	}
	d.sub = sub
	return d, nil
}

// directGetRequest is the request's JSON (the server's JSApiMsgGetRequest).
type directGetRequest struct {
	Seq     uint64 `json:"seq"`
	NextFor string `json:"next_by_subj"`
	Batch   int    `json:"batch"`
}

// directMsg is one message a batch direct get returned.
type directMsg struct {
	seq    uint64
	at     time.Time
	data   []byte
	header nats.Header
}

// batch returns up to n messages of subject from sequence from on, in
// stream order, read from any replica of stream.
func (d *directGets) batch(ctx context.Context, stream, subject string, from uint64, n int) ([]directMsg, error) {
	req, err := json.Marshal(directGetRequest{Seq: from, NextFor: subject, Batch: n})
	if err != nil {
		return nil, err
	}
	ch := make(chan *nats.Msg, n+1)
	d.mu.Lock()
	d.next++
	token := strconv.FormatUint(d.next, 36)
	d.waiting[token] = ch
	d.mu.Unlock()
	defer func() {
		d.mu.Lock()
		delete(d.waiting, token)
		d.mu.Unlock()
	}()
	if err := d.nc.PublishRequest("$JS.API.DIRECT.GET."+stream, d.prefix+token, req); err != nil {
		return nil, err
	}
	var out []directMsg
	for {
		select {
		case m := <-ch:
			switch status := m.Header.Get("Status"); status {
			case "":
			case "404", "204": // nothing from there; the end of the batch
				return out, nil
			default:
				return out, fmt.Errorf("direct get from %s: status %s %s", stream, status, m.Header.Get("Description"))
			}
			seq, err := strconv.ParseUint(m.Header.Get("Nats-Sequence"), 10, 64)
			if err != nil {
				return out, fmt.Errorf("direct get from %s: sequence %q", stream, m.Header.Get("Nats-Sequence"))
			}
			at, _ := time.Parse(time.RFC3339Nano, m.Header.Get("Nats-Time-Stamp"))
			out = append(out, directMsg{seq: seq, at: at, data: m.Data, header: m.Header})
		case <-ctx.Done():
			return out, fmt.Errorf("direct get from %s: %w", stream, ctx.Err())
		}
	}
}
