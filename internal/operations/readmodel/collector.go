package readmodel

import (
	"context"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/oceanway/core/internal/db"
)

// Collector exposes the Operations projector's consumer-side health at
// scrape time (OBS-1): the receipt anti-join (source events of the active
// projection without an applied receipt), unresolved revision gaps,
// unsupported (schema-rejected) events and pending unlinked reservations.
// It reads the same inputs as the completeness proof in one read-only
// snapshot; labels carry only the projection name and version.
type Collector struct {
	reader                                   *Reader
	timeout                                  time.Duration
	missing, gaps, unsupported, unlinked, up *prometheus.Desc
	current                                  *prometheus.Desc
}

// NewCollector builds the collector over the core database.
func NewCollector(r *Reader, timeout time.Duration) *Collector {
	labels := []string{"projection", "projection_version"}
	return &Collector{
		reader: r, timeout: timeout,
		missing: prometheus.NewDesc("oceanway_operations_missing_receipts",
			"Source events of the active projection without an applied receipt (receipt anti-join).", labels, nil),
		gaps: prometheus.NewDesc("oceanway_operations_unresolved_revision_gaps",
			"Aggregate revision gaps not yet filled.", labels, nil),
		unsupported: prometheus.NewDesc("oceanway_operations_unsupported_events",
			"Events the projector rejected as unsupported pair or schema.", labels, nil),
		unlinked: prometheus.NewDesc("oceanway_operations_pending_unlinked_reservations",
			"Wallet reservations waiting for their Run event.", labels, nil),
		up: prometheus.NewDesc("oceanway_operations_scrape_ok", "1 when the read model could be read.", nil, nil),
		current: prometheus.NewDesc("oceanway_operations_completeness_verified_current",
			"1 when the latest completeness proof is verified and its inputs are unchanged (verified_current), else 0 (OPS-4).", labels, nil),
	}
}

// Describe implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.missing, c.gaps, c.unsupported, c.unlinked, c.current, c.up} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	defer cancel()
	var in Inputs
	var name, version string
	err := db.WithTxOptions(ctx, c.reader.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly},
		func(ctx context.Context, tx pgx.Tx) error {
			t, err := target(ctx, tx, Params{})
			if err != nil {
				return err
			}
			name, version = t.Name, strconv.FormatInt(t.Version, 10)
			in, err = readInputs(ctx, tx, t)
			return err
		})
	if err != nil {
		ch <- prometheus.MustNewConstMetric(c.up, prometheus.GaugeValue, 0)
		return
	}
	gauge := func(d *prometheus.Desc, v int64) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, float64(v), name, version)
	}
	gauge(c.missing, in.MissingReceipts)
	gauge(c.gaps, in.UnresolvedGaps.Count)
	gauge(c.unsupported, in.UnsupportedEvents.Count)
	gauge(c.unlinked, in.Semantic.PendingUnlinkedReservations)
	// The completeness answer compares the latest proof with the inputs in
	// its own snapshot; a read failure exports nothing for it (never a 0
	// that would look like a stale proof).
	if cur, err := c.reader.Completeness(ctx, Params{}); err == nil {
		verified := int64(0)
		if cur.VerificationState == Verified && cur.SnapshotCurrency == VerifiedCurrent {
			verified = 1
		}
		gauge(c.current, verified)
	}
	ch <- prometheus.MustNewConstMetric(c.up, prometheus.GaugeValue, 1)
}
