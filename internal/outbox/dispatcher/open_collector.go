package dispatcher

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
)

// openDeliveriesSQL counts non-terminal deliveries per destination and status
// and the age of the oldest one. Both statuses are served by partial indexes.
const openDeliveriesSQL = `
SELECT destination, status, count(*), COALESCE(EXTRACT(EPOCH FROM clock_timestamp() - min(created_at)), 0)
FROM outbox.outbox_deliveries
WHERE status IN ('pending', 'leased')
GROUP BY destination, status`

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
	rows, err := c.pool.Query(ctx, openDeliveriesSQL)
	if err == nil {
		for rows.Next() {
			var dest, status string
			var n int64
			var age float64
			if err = rows.Scan(&dest, &status, &n, &age); err != nil {
				break
			}
			ch <- prometheus.MustNewConstMetric(c.count, prometheus.GaugeValue, float64(n), dest, status)
			ch <- prometheus.MustNewConstMetric(c.oldest, prometheus.GaugeValue, age, dest, status)
		}
		rows.Close()
		if err == nil {
			err = rows.Err()
		}
	}
	if err != nil {
		ok = 0
	}
	ch <- prometheus.MustNewConstMetric(c.up, prometheus.GaugeValue, ok)
}
