package relayserver

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/parley-chat/parley/transport"
	"github.com/parley-chat/parley/wire"
)

// openMailbox opens (a zero id) or joins a mailbox at r from ip.
func openMailbox(tb testing.TB, r *testRelay, ip string, id wire.MailboxID) (*transport.Provisioning, error) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	p, err := transport.OpenProvisioning(ctx, r.url, id, transport.ClientOptions{Dialer: from(ip)})
	if err == nil {
		tb.Cleanup(func() { p.Close() })
	}
	return p, err
}

func mustOpenMailbox(tb testing.TB, r *testRelay, ip string, id wire.MailboxID) *transport.Provisioning {
	tb.Helper()
	p, err := openMailbox(tb, r, ip, id)
	if err != nil {
		tb.Fatalf("open mailbox from %s: %v", ip, err)
	}
	return p
}

func receivePayload(tb testing.TB, p *transport.Provisioning) []byte {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	b, err := p.Receive(ctx)
	if err != nil {
		tb.Fatalf("receive: %v", err)
	}
	return b
}

// TestProvisionMailbox: the new device opens a mailbox and says something
// before anyone joined; the joiner hears it, and both talk; a second
// joiner is refused as if the mailbox did not exist; when one side leaves
// the other hears so and the mailbox is gone.
func TestProvisionMailbox(t *testing.T) {
	r := startRelay(t, Config{DeviceLists: true})
	ctx := ctxT(t)
	opener := mustOpenMailbox(t, r, "127.0.0.1", wire.MailboxID{})
	if opener.Mailbox() == (wire.MailboxID{}) {
		t.Fatal("the relay opened the zero mailbox")
	}
	if left := time.Until(opener.Expires()); left < 9*time.Minute || left > 11*time.Minute {
		t.Errorf("mailbox expires in %v, want about ten minutes", left)
	}
	if err := opener.Send(ctx, []byte("before")); err != nil {
		t.Fatalf("send before the joiner: %v", err)
	}
	if n := r.metric(t, "parley_relay_provisioning_mailboxes"); n != 1 {
		t.Errorf("open mailboxes %v, want 1", n)
	}
	joiner := mustOpenMailbox(t, r, "127.0.0.1", opener.Mailbox())
	if got := receivePayload(t, joiner); string(got) != "before" {
		t.Fatalf("joiner heard %q, want the held payload", got)
	}
	if err := joiner.Send(ctx, []byte("to opener")); err != nil {
		t.Fatal(err)
	}
	if got := receivePayload(t, opener); string(got) != "to opener" {
		t.Fatalf("opener heard %q", got)
	}
	big := bytes.Repeat([]byte{7}, wire.MaxProvisionPayload)
	if err := opener.Send(ctx, big); err != nil {
		t.Fatal(err)
	}
	if got := receivePayload(t, joiner); !bytes.Equal(got, big) {
		t.Fatalf("joiner heard %d bytes, want %d", len(got), len(big))
	}
	var se *transport.ServerError
	if _, err := openMailbox(t, r, "127.0.0.1", opener.Mailbox()); !errors.As(err, &se) || se.Code != wire.ErrorNotFound {
		t.Fatalf("second joiner: %v, want not found", err)
	}
	if _, err := openMailbox(t, r, "127.0.0.1", wire.MailboxID{1}); !errors.As(err, &se) || se.Code != wire.ErrorNotFound {
		t.Fatalf("unknown mailbox: %v, want not found", err)
	}
	joiner.Close()
	_, err := opener.Receive(ctx)
	var closed *transport.ProvisionClosedError
	if !errors.As(err, &closed) || closed.Reason != wire.ProvisionPeerLeft {
		t.Fatalf("opener after the joiner left: %v, want peer left", err)
	}
	r.waitMetric(t, "parley_relay_provisioning_mailboxes", 0)
	if n := r.metric(t, "parley_relay_provisioning_mailboxes_opened_total"); n != 1 {
		t.Errorf("mailboxes opened %v, want 1", n)
	}
}

// TestProvisionMailboxExpires: past its lifetime a mailbox ends, and its
// sides hear that it expired.
func TestProvisionMailboxExpires(t *testing.T) {
	cfg := Config{DeviceLists: true}
	cfg.Limits.ProvisioningLifetime = 2 * time.Second
	r := startRelay(t, cfg)
	opener := mustOpenMailbox(t, r, "127.0.0.1", wire.MailboxID{})
	joiner := mustOpenMailbox(t, r, "127.0.0.1", opener.Mailbox())
	var closed *transport.ProvisionClosedError
	for _, p := range []*transport.Provisioning{opener, joiner} {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_, err := p.Receive(ctx)
		cancel()
		if errors.Is(err, context.DeadlineExceeded) {
			t.Fatal("the mailbox outlived its lifetime")
		}
		if errors.As(err, &closed) && closed.Reason != wire.ProvisionExpired {
			t.Errorf("closed for %v, want expired", closed.Reason)
		}
	}
	r.waitMetric(t, "parley_relay_provisioning_mailboxes", 0)
}

// TestProvisionPerIPSparesVictim: one IP opens the mailboxes it may and is
// refused the next; a victim on another IP opens its own and uses it, and
// the refusal is counted.
func TestProvisionPerIPSparesVictim(t *testing.T) {
	r := startRelay(t, Config{DeviceLists: true})
	for range DefaultProvisioningPerIP {
		mustOpenMailbox(t, r, "127.0.0.3", wire.MailboxID{})
	}
	var se *transport.ServerError
	if _, err := openMailbox(t, r, "127.0.0.3", wire.MailboxID{}); !errors.As(err, &se) || se.Code != wire.ErrorRateLimited {
		t.Fatalf("mailbox past the IP's bound: %v, want rate limited", err)
	}
	victim := mustOpenMailbox(t, r, "127.0.0.4", wire.MailboxID{})
	peer := mustOpenMailbox(t, r, "127.0.0.3", victim.Mailbox()) // joining is not opening
	if err := victim.Send(ctxT(t), []byte("hi")); err != nil {
		t.Fatal(err)
	}
	if got := receivePayload(t, peer); string(got) != "hi" {
		t.Fatalf("heard %q", got)
	}
	if n := r.metric(t, `parley_relay_limited_total{limit="ip_provisioning"}`); n != 1 {
		t.Fatalf("ip_provisioning refusals: %v, want 1", n)
	}
}

// TestProvisionNeedsDeviceLists: a relay without device lists refuses a
// provisioning connection as a request it does not serve.
func TestProvisionNeedsDeviceLists(t *testing.T) {
	r := startRelay(t, Config{})
	if _, err := openMailbox(t, r, "127.0.0.1", wire.MailboxID{}); !errors.Is(err, transport.ErrProvisionUnsupported) {
		t.Fatalf("open at a relay without device lists: %v, want ErrProvisionUnsupported", err)
	}
}

// TestProvisionMailboxBudget: before the joiner comes a mailbox holds a few
// KiB, not four full payloads; and a mailbox whose opener joins it itself
// carries provisionMessages payloads, then ends, instead of serving as a
// tunnel between two connections that never authenticated.
func TestProvisionMailboxBudget(t *testing.T) {
	r := startRelay(t, Config{DeviceLists: true})
	ctx := ctxT(t)
	opener := mustOpenMailbox(t, r, "127.0.0.1", wire.MailboxID{})
	err := opener.Send(ctx, bytes.Repeat([]byte{1}, provisionHeldBytes+1))
	if err == nil || !strings.Contains(err.Error(), "holds all it may") {
		t.Fatalf("a payload over the held bytes before the joiner: %v, want refused", err)
	}
	hello := bytes.Repeat([]byte{2}, 1300)
	if err := opener.Send(ctx, hello); err != nil {
		t.Fatalf("a hello-sized payload before the joiner: %v", err)
	}
	joiner := mustOpenMailbox(t, r, "127.0.0.1", opener.Mailbox())
	if got := receivePayload(t, joiner); !bytes.Equal(got, hello) {
		t.Fatalf("joiner heard %d bytes, want the hello", len(got))
	}
	sent := 1
	for ; sent < provisionMessages; sent++ {
		if err := joiner.Send(ctx, []byte("x")); err != nil {
			t.Fatalf("payload %d of %d: %v", sent+1, provisionMessages, err)
		}
		receivePayload(t, opener)
	}
	err = joiner.Send(ctx, []byte("one more"))
	if err == nil || !strings.Contains(err.Error(), "carried all a linking needs") {
		t.Fatalf("payload %d: %v, want refused", provisionMessages+1, err)
	}
	if _, err := opener.Receive(ctx); err == nil {
		t.Fatal("the opener still hears after the mailbox was spent")
	}
}
