package relayserver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/parley-chat/parley/transport/relaystore"
	"github.com/parley-chat/parley/wire"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// scrape returns the whole /metrics response body and its content type.
func (r *testRelay) scrape(tb testing.TB) (body, contentType string) {
	tb.Helper()
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := client.Get("http://" + r.addr + "/metrics")
	if err != nil {
		tb.Fatalf("GET /metrics: %v", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		tb.Fatalf("GET /metrics: %s", resp.Status)
	}
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		tb.Fatalf("GET /metrics: %v", err)
	}
	return string(b), resp.Header.Get("Content-Type")
}

// TestMetricsExposition checks that a fresh relay shows every documented
// series, each label value at 0, with its type, and that two relays in one
// process count apart.
func TestMetricsExposition(t *testing.T) {
	r1, r2 := startRelay(t, Config{}), startRelay(t, Config{})
	body, ctype := r2.scrape(t)
	if !strings.HasPrefix(ctype, "text/plain") {
		t.Errorf("Content-Type %q, want text/plain", ctype)
	}
	var zero []string
	types := map[string]string{}
	one := func(name, typ string) {
		zero = append(zero, name)
		types[name] = typ
	}
	vec := func(name, label string, values ...string) {
		types[name] = "counter"
		for _, v := range values {
			zero = append(zero, fmt.Sprintf("%s{%s=%q}", name, label, v))
		}
	}
	one("parley_relay_connections_total", "counter")
	vec("parley_relay_auth_failures_total", "reason", "malformed", "bad_signature", "expired", "address_taken", "timeout", "protocol", "internal", "rate_limited")
	vec("parley_relay_disconnects_total", "reason", "peer_closed", "frame_too_large", "read_timeout", "slow_reader", "write_failed", "protocol", "reregistered", "shutdown")
	one("parley_relay_envelopes_accepted_total", "counter")
	vec("parley_relay_envelopes_refused_total", "reason", "too_large", "mailbox_full", "unknown_recipient", "rate_limited", "malformed", "wrong_sender", "not_authenticated", "sender_share", "store_full")
	one("parley_relay_envelopes_delivered_total", "counter")
	one("parley_relay_envelopes_acknowledged_total", "counter")
	one("parley_relay_fault_dropped_total", "counter")
	one("parley_relay_fault_duplicated_total", "counter")
	vec("parley_relay_rate_limited_total", "bucket", "messages", "bytes")
	vec("parley_relay_limited_total", "limit", "connections", "handshakes", "ip_connections", "ip_handshakes", "address_connections", "ip_registrations_hour",
		"ip_registrations_total", "fetches_by_requester", "fetches_of_target", "one_time_prekeys_of_target", "sender_share", "ip_share", "store_full")
	one("parley_relay_bundles_published_total", "counter")
	one("parley_relay_bundles_fetched_total", "counter")
	one("parley_relay_one_time_prekeys_handed_out_total", "counter")
	one("parley_relay_registrations", "gauge")
	one("parley_relay_mailbox_envelopes", "gauge")
	one("parley_relay_mailbox_bytes", "gauge")
	types["parley_relay_connections"] = "gauge"
	zero = append(zero, `parley_relay_connections{state="authenticated"}`, `parley_relay_connections{state="unauthenticated"}`)
	for _, s := range zero {
		if !strings.Contains(body, "\n"+s+" 0\n") {
			t.Errorf("fresh relay: no %q", s+" 0")
		}
	}
	for name, typ := range types {
		if !strings.Contains(body, fmt.Sprintf("# TYPE %s %s\n", name, typ)) {
			t.Errorf("no TYPE %s %s", name, typ)
		}
	}
	if strings.Contains(body, "go_") || strings.Contains(body, "process_") {
		t.Errorf("runtime or process series in the relay's metrics:\n%s", body)
	}

	alice, bob := newDevice(t, "alice/1"), newDevice(t, "bob/1")
	ca, _ := dial(t, r1, alice), dial(t, r1, bob)
	mustSubmit(t, ca, envelope(alice, bob, "hi"))
	c := dialRaw(t, r1)
	c.challenge()
	c.send(3, wire.Submit{Envelope: []byte{1}})
	c.reply(3)
	c.expectClose(websocket.ClosePolicyViolation)
	// A connection counts as authenticated once its goroutine is past the
	// answer its client waits for: on a loaded machine, give it that moment.
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if r1.metric(t, `parley_relay_connections{state="authenticated"}`) == 2 {
			break
		}
	}
	for _, m := range []struct {
		series string
		want   float64
	}{
		{"parley_relay_connections_total", 3},
		{`parley_relay_connections{state="authenticated"}`, 2},
		{"parley_relay_envelopes_accepted_total", 1},
		{"parley_relay_registrations", 2},
		{"parley_relay_mailbox_envelopes", 1},
		{`parley_relay_auth_failures_total{reason="protocol"}`, 1},
	} {
		if got := r1.metric(t, m.series); got != m.want {
			t.Errorf("relay 1: %s = %v, want %v", m.series, got, m.want)
		}
		if got := r2.metric(t, m.series); got != 0 {
			t.Errorf("relay 2: %s = %v, want 0", m.series, got)
		}
	}
	if got := r1.metric(t, "parley_relay_mailbox_bytes"); got <= 0 {
		t.Errorf("relay 1: parley_relay_mailbox_bytes = %v, want > 0", got)
	}
}

// failingStats is a store whose Stats fails.
type failingStats struct{ relaystore.Store }

func (failingStats) Stats(context.Context) (relaystore.Stats, error) {
	return relaystore.Stats{}, errors.New("stats unavailable")
}

// TestMetricsStatsError checks that a failing Stats leaves the store's
// gauges out and the rest of the scrape intact.
func TestMetricsStatsError(t *testing.T) {
	r := startStoreRelay(t, "127.0.0.1:0", failingStats{relaystore.NewMemory(relaystore.Limits{})}, Config{})
	body, _ := r.scrape(t)
	for _, s := range []string{"parley_relay_registrations", "parley_relay_mailbox_envelopes", "parley_relay_mailbox_bytes"} {
		if strings.Contains(body, s) {
			t.Errorf("%s shown though Stats failed", s)
		}
	}
	for _, s := range []string{`parley_relay_connections{state="authenticated"} 0`, "parley_relay_connections_total 0"} {
		if !strings.Contains(body, s+"\n") {
			t.Errorf("no %q", s)
		}
	}
}

// TestLatencyHistograms: after a round trip, /metrics parses as the
// exposition format and holds both latency histograms, each with one
// observation, its buckets rising to it.
func TestLatencyHistograms(t *testing.T) {
	r := startRelay(t, Config{})
	alice, bob := newDevice(t, "alice/1"), newDevice(t, "bob/1")
	ca, cb := dial(t, r, alice), dial(t, r, bob)
	mustSubmit(t, ca, envelope(alice, bob, "timed"))
	got := receiveN(t, cb, 1)
	if err := cb.Release(ctxT(t), rowsOf(got)); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		body, _ := r.scrape(t)
		p := expfmt.NewTextParser(model.LegacyValidation)
		fams, err := p.TextToMetricFamilies(strings.NewReader(body))
		if err != nil {
			t.Fatalf("/metrics does not parse: %v", err)
		}
		done := true
		for _, name := range []string{"parley_relay_accept_to_deliver_seconds", "parley_relay_lease_to_ack_seconds"} {
			f := fams[name]
			if f == nil || f.GetType() != dto.MetricType_HISTOGRAM || len(f.GetMetric()) != 1 {
				t.Fatalf("%s: %v, want one histogram", name, f)
			}
			h := f.GetMetric()[0].GetHistogram()
			if h.GetSampleCount() != 1 {
				done = false
				continue
			}
			if h.GetSampleSum() <= 0 || h.GetSampleSum() > 5 {
				t.Fatalf("%s: sum %v s for one local round trip", name, h.GetSampleSum())
			}
			last := uint64(0)
			for _, b := range h.GetBucket() {
				if b.GetCumulativeCount() < last {
					t.Fatalf("%s: buckets fall", name)
				}
				last = b.GetCumulativeCount()
			}
			if last != 1 {
				t.Fatalf("%s: the last bucket holds %d, want 1", name, last)
			}
		}
		if done {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the histograms did not count the round trip")
		}
		time.Sleep(20 * time.Millisecond)
	}
}
