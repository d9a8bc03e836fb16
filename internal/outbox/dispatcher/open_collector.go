package dispatcher

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
)

// OpenCollector reports, at scrape time, the number of open (pending and
// leased) deliveries and the age of the oldest one per destination of one
// producer database (OBS-1). The boundary label names the database's fact
// boundary (core, execution, gateway, metering): low cardinality by design.
type OpenCollector struct {
	pool     *pgxpool.Pool
	boundary string
	timeout  time.Duration
	count    *prometheus.Desc
	oldest   *prometheus.Desc
	up       *prometheus.Desc
}

// NewOpenCollector builds the collector; register it on the same registry as Metrics.
func NewOpenCollector(pool *pgxpool.Pool, boundary string, timeout time.Duration) *OpenCollector {
	constLabels := prometheus.Labels{"boundary": boundary}
	return &OpenCollector{
		pool: pool, boundary: boundary, timeout: timeout,
		count: prometheus.NewDesc("oceanway_outbox_open_deliveries",
			"Non-terminal deliveries by destination and status.", []string{"destination", "status"}, constLabels),
		oldest: prometheus.NewDesc("oceanway_outbox_oldest_open_delivery_age_seconds",
			"Age of the oldest non-terminal delivery by destination and status.", []string{"destination", "status"}, constLabels),
		up: prometheus.NewDesc("oceanway_outbox_open_deliveries_scrape_ok",
			"1 when the open-delivery query succeeded.", nil, constLabels),
	}
}

// Describe implements prometheus.Collector.
func (c *OpenCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.count
	ch <- c.oldest
	ch <- c.up
}

// Collect implements prometheus.Collector.
func (c *OpenCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	defer cancel()
	ok := 1.0
	rows, err := queries.DeliveryOpenCount(ctx, c.pool)
	for _, r := range rows {
		ch <- prometheus.MustNewConstMetric(c.count, prometheus.GaugeValue, float64(r.OpenCount), r.Destination, r.Status)
		ch <- prometheus.MustNewConstMetric(c.oldest, prometheus.GaugeValue, r.OldestAgeSeconds, r.Destination, r.Status)
	}
	if err != nil {
		ok = 0
	}
	ch <- prometheus.MustNewConstMetric(c.up, prometheus.GaugeValue, ok)
}
