package relayserver

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/parley-chat/parley/transport/relaystore"
	"github.com/parley-chat/parley/wire"
	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the relay's Prometheus series. Each server has its own
// registry, never the global default one, so that two relays in one process
// (tests, an embedded relay) count apart. Labels never carry an address: the
// metrics endpoint must not tell who talks to whom.
type metrics struct {
	reg *prometheus.Registry

	connectionsTotal prometheus.Counter
	authFailures     *prometheus.CounterVec
	accepted         prometheus.Counter
	refused          *prometheus.CounterVec
	delivered        prometheus.Counter
	acknowledged     prometheus.Counter
	dropped          prometheus.CounterFunc // read from the store's FaultCounter
	duplicated       prometheus.CounterFunc
	rateLimited      *prometheus.CounterVec
	limitedByBucket  map[string]prometheus.Counter // rateLimited's series, looked up once
	disconnects      *prometheus.CounterVec
	bundlesPublished prometheus.Counter
	bundlesFetched   prometheus.Counter
	oneTimeHandedOut prometheus.Counter
	limited          *prometheus.CounterVec
	acceptToDeliver  prometheus.Histogram
	leaseToAck       prometheus.Histogram
	statuses         *prometheus.CounterVec
	expired          prometheus.Counter
	blockedDiscarded prometheus.Counter // envelopes of blocked senders, answered Accepted
	blockChanges     *prometheus.CounterVec
	// Device lists (devicelist.go): stored, and refused by cause.
	deviceListsStored prometheus.Counter
	staleListAnswered prometheus.Counter
	// provisioningOpened counts mailboxes opened; provisioningOpen is
	// how many are open now.
	provisioningOpened prometheus.Counter
	provisioningOpen   prometheus.Gauge
	deviceListsRefused *prometheus.CounterVec
	acceptRecorded     prometheus.Counter
	acceptForgotten    prometheus.Counter
	submitBatch        prometheus.Histogram // envelopes per SubmitBatch (submit.go)
	submitMulti        prometheus.Histogram // mailboxes per SubmitMulti (submit.go)
	appendGroup        prometheus.Histogram // envelopes per append to the store
}

// authFailure is why a connection was refused at authentication: the
// reason label of parley_relay_auth_failures_total.
type authFailure string

// Authentication failures; their values are the metric's label values.
const (
	authMalformed    authFailure = "malformed"
	authBadSignature authFailure = "bad_signature"
	authExpired      authFailure = "expired"
	authTaken        authFailure = "address_taken"
	authTimeout      authFailure = "timeout"
	authProtocol     authFailure = "protocol"
	authInternal     authFailure = "internal"
	authRateLimited  authFailure = "rate_limited"
	authControl      authFailure = "control_frame" // a ping or pong before the Auth
	authNotInList    authFailure = "not_in_device_list"
)

var authFailures = []authFailure{authMalformed, authBadSignature, authExpired, authTaken, authTimeout, authProtocol, authInternal, authRateLimited,
	authControl, authNotInList}

// authFailed counts a connection refused at authentication for r.
func (m *metrics) authFailed(r authFailure) {
	m.authFailures.WithLabelValues(string(r)).Inc()
}

// limitedBy counts a request refused (or served without a one-time prekey)
// by l.
func (m *metrics) limitedBy(l limit) {
	m.limited.WithLabelValues(string(l)).Inc()
}

// Label values of parley_relay_rate_limited_total.
const (
	bucketMessages = "messages"
	bucketBytes    = "bytes"
	bucketControl  = "control" // pings and pongs, on top of the other two
)

// rateLimitedIn counts a message or control frame refused by a bucket: on
// the path of a flood, so the series is not looked up by its label.
func (m *metrics) rateLimitedIn(bucket string) {
	m.limitedByBucket[bucket].Inc()
}

// dropReason is why a connection ended: the reason label of
// parley_relay_disconnects_total.
type dropReason string

// Drop reasons; their values are the metric's label values.
const (
	dropPeer      dropReason = "peer_closed"
	dropReadLimit dropReason = "frame_too_large"
	dropTimeout   dropReason = "read_timeout"
	dropSlow      dropReason = "slow_reader"
	dropWrite     dropReason = "write_failed"
	dropProtocol  dropReason = "protocol"
	dropKicked    dropReason = "reregistered"
	dropRemoved   dropReason = "removed"
	dropShutdown  dropReason = "shutdown"
	// dropOverBudget: frames refused by the buckets past the connection's
	// refusal allowance (Limits.RefusalRate).
	dropOverBudget dropReason = "over_budget"
)

// dropReasons lists every drop reason, so that each series shows from the
// first scrape.
var dropReasons = []dropReason{dropPeer, dropReadLimit, dropTimeout, dropSlow, dropWrite, dropProtocol, dropKicked, dropRemoved, dropShutdown, dropOverBudget}

// disconnected counts a connection that ended for reason.
func (m *metrics) disconnected(reason dropReason) {
	m.disconnects.WithLabelValues(string(reason)).Inc()
}

// newMetrics makes a registry holding the relay's counters and g, which
// reads the gauges at each scrape. The fault counters read faults, the
// store when it injects faults (relaystore.WithFaults), and stay at 0
// otherwise.
func newMetrics(g *gaugeCollector, faults relaystore.Store) *metrics {
	reasons := make([]string, 0, 8)
	for r := wire.RefuseTooLarge; r <= wire.RefuseStoreFull; r++ {
		reasons = append(reasons, refuseLabel(r))
	}
	fc, _ := faults.(relaystore.FaultCounter)
	dropped := func() float64 {
		if fc == nil {
			return 0
		}
		d, _ := fc.FaultCounts()
		return float64(d)
	}
	duplicated := func() float64 {
		if fc == nil {
			return 0
		}
		_, d := fc.FaultCounts()
		return float64(d)
	}
	m := &metrics{
		reg:              prometheus.NewRegistry(),
		connectionsTotal: counter("parley_relay_connections_total", "Websocket connections accepted."),
		authFailures:     counterVec("parley_relay_auth_failures_total", "Connections refused at authentication.", "reason", labels(authFailures)...),
		disconnects:      counterVec("parley_relay_disconnects_total", "Connections ended, by cause.", "reason", labels(dropReasons)...),
		accepted:         counter("parley_relay_envelopes_accepted_total", "Envelopes accepted (faults included)."),
		refused:          counterVec("parley_relay_envelopes_refused_total", "Envelopes refused.", "reason", reasons...),
		delivered:        counter("parley_relay_envelopes_delivered_total", "Deliver messages sent (redeliveries included)."),
		acknowledged:     counter("parley_relay_envelopes_acknowledged_total", "Mailbox rows deleted by acknowledgement."),
		dropped: prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "parley_relay_fault_dropped_total",
			Help: "Accepted envelopes dropped by fault injection."}, dropped),
		duplicated: prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "parley_relay_fault_duplicated_total",
			Help: "Accepted envelopes stored twice by fault injection."}, duplicated),
		rateLimited: counterVec("parley_relay_rate_limited_total", "Messages and control frames refused by a per-connection token bucket.", "bucket",
			bucketMessages, bucketBytes, bucketControl),
		acceptToDeliver: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "parley_relay_accept_to_deliver_seconds",
			Help: "From an envelope's acceptance to each delivery of it.", Buckets: latencyBuckets}),
		leaseToAck: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "parley_relay_lease_to_ack_seconds",
			Help: "From a row's delivery to its recipient's acknowledgement (the recipient staged it durably).", Buckets: latencyBuckets}),
		limited:          counterVec("parley_relay_limited_total", "Requests refused (or, for one-time prekeys, served without) by a limit per IP, address or target, or by a storage quota.", "limit", labels(limits)...),
		bundlesPublished: counter("parley_relay_bundles_published_total", "Bundles published."),
		bundlesFetched:   counter("parley_relay_bundles_fetched_total", "Bundles handed out."),
		oneTimeHandedOut: counter("parley_relay_one_time_prekeys_handed_out_total", "One-time prekeys handed out (each once)."),
		expired:          counter("parley_relay_envelopes_expired_total", "Envelopes deleted unacknowledged at the end of their lifetime."),
		blockedDiscarded: counter("parley_relay_envelopes_blocked_total", "Envelopes of senders their recipient blocks: answered Accepted and discarded."),
		blockChanges:     counterVec("parley_relay_sender_blocks_total", "SenderBlock requests served, by what they asked.", "change", "block", "unblock"),
		acceptRecorded: counter("parley_relay_accepted_peers_recorded_total",
			"Writes of an accepted peer (an owner's envelope to a peer, recorded at most once an hour per pair and relay process)."),
		acceptForgotten: counter("parley_relay_accepted_peers_forgotten_total", "Accepted peers forgotten: past the per-address bound (least recently seen first) or the accepted lifetime."),
		submitBatch: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "parley_relay_submit_batch_envelopes",
			Help: "Envelopes per SubmitBatch received (at most 64).", Buckets: []float64{1, 2, 4, 8, 16, 32, 64}}),
		submitMulti: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "parley_relay_submit_multi_mailboxes",
			Help: "Mailboxes per SubmitMulti received (at most 64).", Buckets: []float64{1, 2, 4, 8, 16, 32, 64}}),
		appendGroup: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "parley_relay_append_group_envelopes",
			Help: "Envelopes of one connection appended to the store together (its consecutive Submits and SubmitBatches, at most 64).", Buckets: []float64{1, 2, 4, 8, 16, 32, 64}}),
		deviceListsStored:  counter("parley_relay_device_lists_stored_total", "Device lists stored (a new generation of an account's list)."),
		staleListAnswered:  counter("parley_relay_stale_device_lists_total", "Device list checks answered with a later list than the sender held."),
		provisioningOpened: counter("parley_relay_provisioning_mailboxes_opened_total", "Provisioning mailboxes opened (linking a device)."),
		provisioningOpen: prometheus.NewGauge(prometheus.GaugeOpts{Name: "parley_relay_provisioning_mailboxes",
			Help: "Provisioning mailboxes open now (each lives at most ten minutes)."}),
		deviceListsRefused: counterVec("parley_relay_device_lists_refused_total", "Device lists refused, by cause.", "reason",
			deviceListRefusalLabels()...),
		statuses: counterVec("parley_relay_envelope_status_total", "Envelope statuses told to senders (best effort), by state.", "state",
			wire.EnvelopeTaken.String(), wire.EnvelopeExpired.String()),
	}
	m.limitedByBucket = make(map[string]prometheus.Counter)
	for _, b := range []string{bucketMessages, bucketBytes, bucketControl} {
		m.limitedByBucket[b] = m.rateLimited.WithLabelValues(b)
	}
	m.reg.MustRegister(
		m.connectionsTotal, m.authFailures, m.disconnects, m.accepted, m.refused, m.delivered, m.acknowledged,
		m.dropped, m.duplicated, m.rateLimited, m.bundlesPublished, m.bundlesFetched, m.oneTimeHandedOut, m.limited,
		m.acceptToDeliver, m.leaseToAck, m.statuses, m.expired, m.blockedDiscarded, m.blockChanges, m.acceptRecorded, m.acceptForgotten,
		m.submitBatch, m.submitMulti, m.appendGroup, m.deviceListsStored, m.staleListAnswered, m.deviceListsRefused,
		m.provisioningOpened, m.provisioningOpen, g,
	)
	return m
}

// labels turns typed label values into the strings Prometheus takes.
func labels[T ~string](values []T) []string {
	out := make([]string, len(values))
	for i, v := range values {
		out[i] = string(v)
	}
	return out
}

// latencyBuckets run from 0.5 ms to about 65 s, doubling.
var latencyBuckets = prometheus.ExponentialBuckets(0.0005, 2, 18)

func counter(name, help string) prometheus.Counter {
	return prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: help})
}

// counterVec makes a counter with one label and creates the series of each
// of values, so that every one shows from the first scrape, at 0.
func counterVec(name, help, label string, values ...string) *prometheus.CounterVec {
	v := prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, []string{label})
	for _, l := range values {
		v.WithLabelValues(l)
	}
	return v
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
	case wire.RefuseSenderQuota:
		return "sender_share"
	case wire.RefuseStoreFull:
		return "store_full"
	}
	panic(fmt.Sprintf("relayserver: unknown refuse reason %d", r))
}

// gaugeCollector reads the gauges when the metrics are scraped: the open
// connections, and what the store holds (at most one Stats call at a time). When
// Stats fails it logs the error and leaves the store's series out.
type gaugeCollector struct {
	conns, unauth *atomic.Int64 // open websockets; of those, not yet authenticated
	sockets       *atomic.Int64 // open TCP connections
	store         relaystore.Store
	timeout       time.Duration // for Stats
	log           *slog.Logger

	connections, socketsDesc, registrations, envelopes, bytes *prometheus.Desc

	refresh sync.Mutex // held by the scrape reading Stats
	mu      sync.Mutex
	ok      bool
	cached  relaystore.Stats
}

func newGaugeCollector(conns, unauth, sockets *atomic.Int64, store relaystore.Store, timeout time.Duration, log *slog.Logger) *gaugeCollector {
	return &gaugeCollector{
		conns: conns, unauth: unauth, sockets: sockets, store: store, timeout: timeout, log: log,
		socketsDesc:   prometheus.NewDesc("parley_relay_sockets", "Open TCP connections, whatever they carry, counted where they are accepted.", nil, nil),
		connections:   prometheus.NewDesc("parley_relay_connections", "Open websocket connections.", []string{"state"}, nil),
		registrations: prometheus.NewDesc("parley_relay_registrations", "Addresses registered.", nil, nil),
		envelopes:     prometheus.NewDesc("parley_relay_mailbox_envelopes", "Envelopes waiting in all mailboxes.", nil, nil),
		bytes:         prometheus.NewDesc("parley_relay_mailbox_bytes", "Bytes of the envelopes waiting in all mailboxes.", nil, nil),
	}
}

// Describe implements prometheus.Collector.
func (g *gaugeCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- g.connections
	ch <- g.socketsDesc
	ch <- g.registrations
	ch <- g.envelopes
	ch <- g.bytes
}

// Collect implements prometheus.Collector. The store's figures are its
// running totals (Stats never scans: memory and SQLite keep counts, NATS
// caches them); concurrent scrapes share one Stats call, the others taking
// the figures the last one read.
func (g *gaugeCollector) Collect(ch chan<- prometheus.Metric) {
	conns, unauth := g.conns.Load(), g.unauth.Load()
	ch <- prometheus.MustNewConstMetric(g.connections, prometheus.GaugeValue, float64(conns-unauth), "authenticated")
	ch <- prometheus.MustNewConstMetric(g.connections, prometheus.GaugeValue, float64(unauth), "unauthenticated")
	ch <- prometheus.MustNewConstMetric(g.socketsDesc, prometheus.GaugeValue, float64(g.sockets.Load()))

	st, ok := g.stats()
	if !ok {
		return
	}
	ch <- prometheus.MustNewConstMetric(g.registrations, prometheus.GaugeValue, float64(st.Registrations))
	ch <- prometheus.MustNewConstMetric(g.envelopes, prometheus.GaugeValue, float64(st.Envelopes))
	ch <- prometheus.MustNewConstMetric(g.bytes, prometheus.GaugeValue, float64(st.Bytes))
}

// stats reads the store's figures unless another scrape is reading them,
// then returns the last figures read; false when there are none (Stats
// failed).
func (g *gaugeCollector) stats() (relaystore.Stats, bool) {
	if g.refresh.TryLock() {
		defer g.refresh.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), g.timeout)
		st, err := g.store.Stats(ctx)
		cancel()
		g.mu.Lock()
		g.ok, g.cached = err == nil, st
		g.mu.Unlock()
		if err != nil {
			g.log.Error("relay stats", "err", cause(err))
		}
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.cached, g.ok
}

// deviceListRefusalLabels are the label values of
// parley_relay_device_lists_refused_total: "stale", "invalid", "not_yours"
// and "quota".
func deviceListRefusalLabels() []string {
	out := make([]string, 0, 4)
	for r := wire.DeviceListStale; r <= wire.DeviceListQuota; r++ {
		out = append(out, deviceListRefusalLabel(r))
	}
	return out
}

func deviceListRefusalLabel(r wire.DeviceListRefusal) string {
	switch r {
	case wire.DeviceListStale:
		return "stale"
	case wire.DeviceListInvalid:
		return "invalid"
	case wire.DeviceListNotYours:
		return "not_yours"
	}
	return "quota"
}

// deviceListRefused counts a device list refused for r.
func (m *metrics) deviceListRefused(r wire.DeviceListRefusal) {
	m.deviceListsRefused.WithLabelValues(deviceListRefusalLabel(r)).Inc()
}
