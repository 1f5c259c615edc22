package relayserver

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/parley-chat/parley/transport/relaystore"
	"github.com/prometheus/client_golang/prometheus"
)

// The blob store's Prometheus series: requests by operation, refusals by
// reason (the quota that refused among them), bytes in and out, blobs
// expired, and what the store holds.
type blobMetrics struct {
	requests *prometheus.CounterVec
	refused  *prometheus.CounterVec
	received prometheus.Counter
	sent     prometheus.Counter
	expired  prometheus.Counter
	putGroup prometheus.Histogram // puts written together (blobput.go)
}

// Label values of parley_relay_blob_requests_total.
const (
	blobOpCreate = "create"
	blobOpPut    = "put"
	blobOpStat   = "stat"
	blobOpGet    = "get"
)

// newBlobMetrics registers the blob series on reg; the gauges only when the
// relay has a blob store.
func newBlobMetrics(reg *prometheus.Registry, blobs relaystore.BlobStore, timeout time.Duration, log *slog.Logger) *blobMetrics {
	reasons := make([]string, len(blobRefusals))
	for i, r := range blobRefusals {
		reasons[i] = r.label
	}
	m := &blobMetrics{
		requests: counterVec("parley_relay_blob_requests_total", "Blob requests served, by operation.", "op", blobOpCreate, blobOpPut, blobOpStat, blobOpGet),
		refused: counterVec("parley_relay_blob_refused_total",
			"Blob requests refused, by reason (address_share, ip_share and store_full are the blob quotas).", "reason", reasons...),
		received: counter("parley_relay_blob_bytes_received_total", "Blob bytes written by uploads."),
		sent:     counter("parley_relay_blob_bytes_sent_total", "Blob bytes read by downloads."),
		expired:  counter("parley_relay_blobs_expired_total", "Blobs deleted at the end of their lifetime."),
		putGroup: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "parley_relay_blob_put_group",
			Help:    "Blob puts of one connection written together in one durable write (at most 4 queued per connection).",
			Buckets: []float64{1, 2, 4, 8}}),
	}
	reg.MustRegister(m.requests, m.refused, m.received, m.sent, m.expired, m.putGroup)
	if blobs != nil {
		reg.MustRegister(&blobGauges{store: blobs, timeout: timeout, log: log,
			blobs:   prometheus.NewDesc("parley_relay_blobs", "Blobs held, complete or not.", nil, nil),
			charged: prometheus.NewDesc("parley_relay_blob_bytes_charged", "Blob bytes charged against the total blob quota (what the blobs hold, at least 64 KiB each).", nil, nil),
			held:    prometheus.NewDesc("parley_relay_blob_bytes_held", "Blob bytes uploaded.", nil, nil),
		})
	}
	return m
}

// blobGauges reads the blob store's figures at each scrape, one BlobStats
// call at a time; a scrape during another's call leaves the series out.
type blobGauges struct {
	store                relaystore.BlobStore
	timeout              time.Duration
	log                  *slog.Logger
	blobs, charged, held *prometheus.Desc
	mu                   sync.Mutex
}

// Describe implements prometheus.Collector.
func (g *blobGauges) Describe(ch chan<- *prometheus.Desc) {
	ch <- g.blobs
	ch <- g.charged
	ch <- g.held
}

// Collect implements prometheus.Collector.
func (g *blobGauges) Collect(ch chan<- prometheus.Metric) {
	if !g.mu.TryLock() {
		return
	}
	defer g.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), g.timeout)
	defer cancel()
	st, err := g.store.BlobStats(ctx)
	if err != nil {
		g.log.Error("blob stats", "err", cause(err))
		return
	}
	ch <- prometheus.MustNewConstMetric(g.blobs, prometheus.GaugeValue, float64(st.Blobs))
	ch <- prometheus.MustNewConstMetric(g.charged, prometheus.GaugeValue, float64(st.Charged))
	ch <- prometheus.MustNewConstMetric(g.held, prometheus.GaugeValue, float64(st.Held))
}
