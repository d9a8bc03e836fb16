package dispatcher

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
)

// OpenCollector reports, at scrape time, the number of open (pending and
// leased) deliveries and the age of the oldest one per destination of one
// producer database, and its quarantined deliveries per destination
// (OBS-1, OBS-3). The boundary label names the database's fact boundary
// (core, execution, gateway, metering): low cardinality by design.
type OpenCollector struct {
	pool         *pgxpool.Pool
	boundary     string
	destinations []string
	timeout      time.Duration
	count        *prometheus.Desc
	oldest       *prometheus.Desc
	quarantined  *prometheus.Desc
	up           *prometheus.Desc
}

// NewOpenCollector builds the collector; register it on the same registry
// as Metrics. destinations are the ones this process dispatches: their
// quarantine count is exported at zero too, so an alert on it has a series
// before the first quarantine.
func NewOpenCollector(pool *pgxpool.Pool, boundary string, destinations []string, timeout time.Duration) *OpenCollector {
	constLabels := prometheus.Labels{"boundary": boundary}
	return &OpenCollector{
		pool: pool, boundary: boundary, destinations: destinations, timeout: timeout,
		quarantined: prometheus.NewDesc("oceanway_outbox_quarantined_deliveries",
			"Quarantined deliveries by destination: each waits for an operator (nothing releases a quarantine in this phase).",
			[]string{"destination"}, constLabels),
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
	ch <- c.quarantined
	ch <- c.up
}

// Collect implements prometheus.Collector.
func (c *OpenCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	defer cancel()
	ok := 1.0
	rows, err := queries.DeliveryOpenCount(ctx, c.pool)
	if err == nil {
		// The served destinations' pending and leased series exist at 0
		// when nothing is open, so "oldest pending" alerts have a series.
		seen := map[[2]string]bool{}
		for _, r := range rows {
			seen[[2]string{r.Destination, r.Status}] = true
			ch <- prometheus.MustNewConstMetric(c.count, prometheus.GaugeValue, float64(r.OpenCount), r.Destination, r.Status)
			ch <- prometheus.MustNewConstMetric(c.oldest, prometheus.GaugeValue, r.OldestAgeSeconds, r.Destination, r.Status)
		}
		for _, d := range c.destinations {
			for _, status := range []string{"pending", "leased"} {
				if !seen[[2]string{d, status}] {
					ch <- prometheus.MustNewConstMetric(c.count, prometheus.GaugeValue, 0, d, status)
					ch <- prometheus.MustNewConstMetric(c.oldest, prometheus.GaugeValue, 0, d, status)
				}
			}
		}
	} else {
		ok = 0
	}
	quarantined, qerr := queries.QuarantineCount(ctx, c.pool)
	if qerr == nil {
		seen := map[string]bool{}
		for _, r := range quarantined {
			seen[r.Destination] = true
			ch <- prometheus.MustNewConstMetric(c.quarantined, prometheus.GaugeValue, float64(r.Quarantined), r.Destination)
		}
		for _, d := range c.destinations {
			if !seen[d] {
				ch <- prometheus.MustNewConstMetric(c.quarantined, prometheus.GaugeValue, 0, d)
			}
		}
	} else {
		ok = 0
	}
	ch <- prometheus.MustNewConstMetric(c.up, prometheus.GaugeValue, ok)
}
