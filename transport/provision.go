package transport

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/gorilla/websocket"
	"github.com/parley-chat/parley/wire"
)

// Provisioning is the client's side of a provisioning mailbox (kinds 44 to
// 47): a connection that never authenticates, through which a new device
// and a device of the account it joins pass sealed payloads while they
// link. It lives as long as the mailbox: the relay ends it when either side
// leaves or the mailbox expires.
type Provisioning struct {
	ws      *websocket.Conn
	mailbox wire.MailboxID
	expires time.Time
	relayID [32]byte

	wmu  sync.Mutex // one request at a time
	next uint32

	in      chan []byte         // pushed payloads
	replies chan provisionReply // answers to Send
	done    chan struct{}       // closed when the reader ends
	mu      sync.Mutex
	err     error // why the reader ended
}

// ErrProvisionUnsupported means the relay answered ProvisionOpen as a
// request it does not know: it keeps no provisioning mailboxes.
var ErrProvisionUnsupported = errors.New("the relay keeps no provisioning mailboxes")

// ProvisionClosedError says the relay ended the mailbox.
type ProvisionClosedError struct {
	Reason wire.ProvisionCloseReason
}

func (e *ProvisionClosedError) Error() string {
	return "provisioning mailbox ended: " + e.Reason.String()
}

// OpenProvisioning opens a new mailbox at the relay at rawURL (a zero
// mailbox) or joins an open one. opts gives the dialer and its CA (other
// fields are ignored). A mailbox the relay does not have (never, expired,
// or joined already) is a *ServerError with wire.ErrorNotFound.
func OpenProvisioning(ctx context.Context, rawURL string, mailbox wire.MailboxID, opts ClientOptions) (*Provisioning, error) {
	u, err := parseURL(rawURL)
	if err != nil {
		return nil, err
	}
	opts = opts.withDefaults()
	ws, resp, err := opts.Dialer.DialContext(ctx, u.String(), nil)
	if resp != nil && resp.Body != nil {
		resp.Body.Close()
	}
	if err != nil {
		return nil, unreachable{fmt.Errorf("dial relay %s: %w", u, err)}
	}
	p := &Provisioning{ws: ws, next: 1, in: make(chan []byte, 16), replies: make(chan provisionReply, 1), done: make(chan struct{})}
	if err := p.open(ctx, mailbox, opts.HandshakeTimeout); err != nil {
		ws.Close()
		return nil, err
	}
	go p.readLoop()
	return p, nil
}

// open sends ProvisionOpen in answer to the challenge and reads the answer.
func (p *Provisioning) open(ctx context.Context, mailbox wire.MailboxID, timeout time.Duration) error {
	ws := p.ws
	ws.SetReadLimit(wire.MaxRelayMessageSize)
	deadline := time.Now().Add(timeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	ws.SetReadDeadline(deadline)
	ws.SetWriteDeadline(deadline)
	stop := context.AfterFunc(ctx, func() { ws.NetConn().Close() })
	defer stop()
	read := func() (wire.RelayMessage, error) {
		_, data, err := ws.ReadMessage()
		if err != nil {
			if ctx.Err() != nil {
				return nil, fmt.Errorf("open provisioning mailbox: %w", ctx.Err())
			}
			return nil, fmt.Errorf("open provisioning mailbox: %w", err)
		}
		_, m, err := wire.DecodeRelay(data)
		if err != nil {
			return nil, fmt.Errorf("open provisioning mailbox: %w", err)
		}
		return m, nil
	}
	m, err := read()
	if err != nil {
		return err
	}
	ch, ok := m.(wire.Challenge)
	if !ok {
		return fmt.Errorf("open provisioning mailbox: expected a challenge, got %s", m.RelayKind())
	}
	p.relayID = ch.RelayID
	b, err := wire.EncodeRelay(p.nextReq(), wire.ProvisionOpen{Mailbox: mailbox})
	if err != nil {
		return err
	}
	if err := ws.WriteMessage(websocket.BinaryMessage, b); err != nil {
		return fmt.Errorf("open provisioning mailbox: %w", err)
	}
	m, err = read()
	if err != nil {
		return err
	}
	switch m := m.(type) {
	case wire.ProvisionOpened:
		p.mailbox, p.expires = m.Mailbox, time.Unix(m.Expires, 0)
		ws.SetReadDeadline(time.Time{})
		ws.SetWriteDeadline(time.Time{})
		return nil
	case wire.Error:
		if m.Code == wire.ErrorBadRequest || m.Code == wire.ErrorAuthFailed {
			return fmt.Errorf("open provisioning mailbox: %w (%s)", ErrProvisionUnsupported, wire.EscapeControls(m.Message))
		}
		return &ServerError{Code: m.Code, Message: m.Message}
	}
	return fmt.Errorf("open provisioning mailbox: unexpected %s", m.RelayKind())
}

func (p *Provisioning) nextReq() uint32 {
	r := p.next
	p.next++
	return r
}

// Mailbox returns the mailbox's ID.
func (p *Provisioning) Mailbox() wire.MailboxID { return p.mailbox }

// Expires returns when the relay ends the mailbox.
func (p *Provisioning) Expires() time.Time { return p.expires }

// RelayID returns the ID the relay presented.
func (p *Provisioning) RelayID() [32]byte { return p.relayID }

// readLoop reads pushes and replies until the connection ends.
func (p *Provisioning) readLoop() {
	defer close(p.done)
	for {
		_, data, err := p.ws.ReadMessage()
		if err != nil {
			p.fail(fmt.Errorf("provisioning connection: %w", err))
			return
		}
		req, m, err := wire.DecodeRelay(data)
		if err != nil {
			p.fail(fmt.Errorf("provisioning connection: %w", err))
			return
		}
		switch m := m.(type) {
		case wire.ProvisionMessage:
			if req == 0 {
				select {
				case p.in <- m.Payload:
				default:
					p.fail(errors.New("provisioning connection: the other device sent more than was read"))
					return
				}
				continue
			}
		case wire.ProvisionClosed:
			p.fail(&ProvisionClosedError{Reason: m.Reason})
			return
		}
		if req != 0 {
			select {
			case p.replies <- provisionReply{req: req, m: m}:
			default:
			}
			continue
		}
		if e, ok := m.(wire.Error); ok {
			p.fail(&ServerError{Code: e.Code, Message: e.Message})
			return
		}
	}
}

func (p *Provisioning) fail(err error) {
	p.mu.Lock()
	if p.err == nil {
		p.err = err
	}
	p.mu.Unlock()
}

// cause is why the connection ended.
func (p *Provisioning) cause() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.err == nil {
		return errors.New("provisioning connection closed")
	}
	return p.err
}

// Send hands payload to the other side, or holds it at the relay until the
// other side joins; it returns once the relay answered.
func (p *Provisioning) Send(ctx context.Context, payload []byte) error {
	p.wmu.Lock()
	defer p.wmu.Unlock()
	req := p.nextReq()
	b, err := wire.EncodeRelay(req, wire.ProvisionMessage{Payload: payload})
	if err != nil {
		return fmt.Errorf("provisioning send: %w", err)
	}
	// The answer to an earlier Send that gave up (its context ended) may
	// be waiting: it is not this one's.
	for stale := true; stale; {
		select {
		case <-p.replies:
		default:
			stale = false
		}
	}
	p.ws.SetWriteDeadline(time.Now().Add(10 * time.Second))
	if err := p.ws.WriteMessage(websocket.BinaryMessage, b); err != nil {
		return fmt.Errorf("provisioning send: %w", err)
	}
	for {
		select {
		case r := <-p.replies:
			if r.req == req {
				return sendReply(r.m)
			}
		case <-p.done:
			// The relay may answer and close at once (a spent mailbox):
			// the reader queued the answer before it ended, and the
			// answer says more than the closed connection.
			select {
			case r := <-p.replies:
				if r.req == req {
					return sendReply(r.m)
				}
			default:
			}
			return fmt.Errorf("provisioning send: %w", p.cause())
		case <-ctx.Done():
			return fmt.Errorf("provisioning send: %w", ctx.Err())
		}
	}
}

// provisionReply is the relay's answer to request req.
type provisionReply struct {
	req uint32
	m   wire.RelayMessage
}

// sendReply turns the relay's answer to a Send into its result.
func sendReply(m wire.RelayMessage) error {
	switch m := m.(type) {
	case wire.Done:
		return nil
	case wire.Error:
		return fmt.Errorf("provisioning send: %w", &ServerError{Code: m.Code, Message: m.Message})
	}
	return fmt.Errorf("provisioning send: unexpected %s", m.RelayKind())
}

// Receive returns the next payload from the other side; when the
// connection ended, its cause (a *ProvisionClosedError when the relay
// ended the mailbox).
func (p *Provisioning) Receive(ctx context.Context) ([]byte, error) {
	select {
	case b := <-p.in:
		return b, nil
	default:
	}
	select {
	case b := <-p.in:
		return b, nil
	case <-p.done:
		select {
		case b := <-p.in:
			return b, nil
		default:
		}
		return nil, p.cause()
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Close ends the connection (and so the mailbox).
func (p *Provisioning) Close() error {
	err := p.ws.Close()
	<-p.done
	return err
}
