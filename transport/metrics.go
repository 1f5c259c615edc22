package transport

import (
	"bufio"
	"fmt"
	"io"
	"slices"
	"sync/atomic"

	"github.com/parley-chat/parley/transport/relaystore"
	"github.com/parley-chat/parley/wire"
)

// metrics are the relay's Prometheus series, written in the text exposition
// format (version 0.0.4) that every Prometheus scraper reads. Each server has
// its own set. Labels never carry an address: the metrics endpoint must not
// tell who talks to whom.
type metrics struct {
	connectionsTotal atomic.Uint64
	authFailures     *counterVec
	accepted         atomic.Uint64
	refused          *counterVec
	delivered        atomic.Uint64
	acknowledged     atomic.Uint64
	dropped          atomic.Uint64
	duplicated       atomic.Uint64
	rateLimited      *counterVec
	disconnects      *counterVec
	bundlesPublished atomic.Uint64
	bundlesFetched   atomic.Uint64
	oneTimeHandedOut atomic.Uint64
}

// Label values.
const (
	authMalformed    = "malformed"
	authBadSignature = "bad_signature"
	authExpired      = "expired"
	authTaken        = "address_taken"
	authTimeout      = "timeout"
	authProtocol     = "protocol"
	authInternal     = "internal"

	dropPeer      = "peer_closed"
	dropReadLimit = "frame_too_large"
	dropTimeout   = "read_timeout"
	dropSlow      = "slow_reader"
	dropWrite     = "write_failed"
	dropProtocol  = "protocol"
	dropKicked    = "reregistered"
	dropShutdown  = "shutdown"

	bucketMessages = "messages"
	bucketBytes    = "bytes"
	bucketFetches  = "fetches"
)

func newMetrics() *metrics {
	reasons := make([]string, 0, 8)
	for r := wire.RefuseTooLarge; r <= wire.RefuseNotAuthenticated; r++ {
		reasons = append(reasons, refuseLabel(r))
	}
	return &metrics{
		authFailures: newCounterVec(authMalformed, authBadSignature, authExpired, authTaken, authTimeout, authProtocol, authInternal),
		refused:      newCounterVec(reasons...),
		rateLimited:  newCounterVec(bucketMessages, bucketBytes, bucketFetches),
		disconnects:  newCounterVec(dropPeer, dropReadLimit, dropTimeout, dropSlow, dropWrite, dropProtocol, dropKicked, dropShutdown),
	}
}

// refuseLabel names a refusal reason in snake_case.
func refuseLabel(r wire.RefuseReason) string {
	switch r {
	case wire.RefuseTooLarge:
		return "too_large"
	case wire.RefuseMailboxFull:
		return "mailbox_full"
	case wire.RefuseUnknownRecipient:
		return "unknown_recipient"
	case wire.RefuseRateLimited:
		return "rate_limited"
	case wire.RefuseMalformed:
		return "malformed"
	case wire.RefuseWrongSender:
		return "wrong_sender"
	case wire.RefuseNotAuthenticated:
		return "not_authenticated"
	}
	panic(fmt.Sprintf("transport: unknown refuse reason %d", r))
}

// counterVec is a counter with one label whose values are fixed up front, so
// that counting takes no lock.
type counterVec struct {
	labels []string
	values map[string]*atomic.Uint64
}

func newCounterVec(labels ...string) *counterVec {
	v := &counterVec{labels: slices.Clone(labels), values: make(map[string]*atomic.Uint64, len(labels))}
	for _, l := range labels {
		v.values[l] = new(atomic.Uint64)
	}
	return v
}

func (v *counterVec) inc(label string) {
	c, ok := v.values[label]
	if !ok {
		panic("transport: unknown metric label " + label)
	}
	c.Add(1)
}

func (v *counterVec) get(label string) uint64 { return v.values[label].Load() }

// gauges are read when the metrics are scraped.
type gauges struct {
	connections, unauthenticated int64
	stats                        relaystore.Stats
	statsErr                     error
}

// write writes every series in the text exposition format.
func (m *metrics) write(w io.Writer, g gauges) error {
	b := bufio.NewWriter(w)
	head := func(name, typ, help string) {
		fmt.Fprintf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, typ)
	}
	one := func(name, typ, help string, v any) {
		head(name, typ, help)
		fmt.Fprintf(b, "%s %v\n", name, v)
	}
	vec := func(name, label, help string, v *counterVec) {
		head(name, "counter", help)
		for _, l := range v.labels {
			fmt.Fprintf(b, "%s{%s=%q} %d\n", name, label, l, v.get(l))
		}
	}
	head("parley_relay_connections", "gauge", "Open websocket connections.")
	fmt.Fprintf(b, "parley_relay_connections{state=\"authenticated\"} %d\n", g.connections-g.unauthenticated)
	fmt.Fprintf(b, "parley_relay_connections{state=\"unauthenticated\"} %d\n", g.unauthenticated)
	one("parley_relay_connections_total", "counter", "Websocket connections accepted.", m.connectionsTotal.Load())
	vec("parley_relay_auth_failures_total", "reason", "Connections refused at authentication.", m.authFailures)
	vec("parley_relay_disconnects_total", "reason", "Connections ended, by cause.", m.disconnects)
	one("parley_relay_envelopes_accepted_total", "counter", "Envelopes accepted (faults included).", m.accepted.Load())
	vec("parley_relay_envelopes_refused_total", "reason", "Envelopes refused.", m.refused)
	one("parley_relay_envelopes_delivered_total", "counter", "Deliver messages sent (redeliveries included).", m.delivered.Load())
	one("parley_relay_envelopes_acknowledged_total", "counter", "Mailbox rows deleted by acknowledgement.", m.acknowledged.Load())
	one("parley_relay_fault_dropped_total", "counter", "Accepted envelopes dropped by fault injection.", m.dropped.Load())
	one("parley_relay_fault_duplicated_total", "counter", "Accepted envelopes stored twice by fault injection.", m.duplicated.Load())
	vec("parley_relay_rate_limited_total", "bucket", "Messages refused by a per-connection token bucket.", m.rateLimited)
	one("parley_relay_bundles_published_total", "counter", "Bundles published.", m.bundlesPublished.Load())
	one("parley_relay_bundles_fetched_total", "counter", "Bundles handed out.", m.bundlesFetched.Load())
	one("parley_relay_one_time_prekeys_handed_out_total", "counter", "One-time prekeys handed out (each once).", m.oneTimeHandedOut.Load())
	if g.statsErr == nil {
		one("parley_relay_registrations", "gauge", "Addresses registered.", g.stats.Registrations)
		one("parley_relay_mailbox_envelopes", "gauge", "Envelopes waiting in all mailboxes.", g.stats.Envelopes)
		one("parley_relay_mailbox_bytes", "gauge", "Bytes of the envelopes waiting in all mailboxes.", g.stats.Bytes)
	}
	return b.Flush()
}
