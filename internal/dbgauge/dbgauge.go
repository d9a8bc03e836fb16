// Package dbgauge exports an owner's state as Prometheus gauges read from
// its own database at scrape time (OBS-1): each Query is one read-only
// statement whose rows are label values followed by one number per gauge,
// and all of an owner's queries are read in one repeatable-read snapshot, so
// the numbers of one scrape agree with each other.
//
// The statements belong to the owner (its sql/ directory) and read only
// what is still open, through partial indexes, so a scrape costs the open
// items and not the history. This package knows no owner. Labels are
// low-cardinality by construction (OBS-2): a Query declares its label
// names and, where the set of values is bounded (fence states, lanes), the
// tuples always exported at zero, so a series an alert names exists before
// its first non-zero value.
package dbgauge

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/oceanway/core/internal/db"
)

// Gauge names one value column of a Query.
type Gauge struct{ Name, Help string }

// Query is one statement and the gauges it fills.
type Query struct {
	SQL string
	// Labels are the names of the leading text columns of each row.
	Labels []string
	// Gauges are the trailing numeric columns, in order.
	Gauges []Gauge
	// Always are label value tuples exported at zero when the statement
	// returns no row for them.
	Always [][]string
}

// Config names one owner's collector.
type Config struct {
	// Owner names the scrape health gauge: oceanway_<owner>_scrape_ok.
	Owner   string
	Pool    *pgxpool.Pool
	Timeout time.Duration
	Queries []Query
}

// Collector reads every Query of one owner at scrape time.
type Collector struct {
	cfg   Config
	descs [][]*prometheus.Desc // per query, per gauge
	ok    *prometheus.Desc
}

// New builds the collector; register it on the process's registry. It
// panics on a Query whose Always tuples do not fit its labels (a build
// defect).
func New(cfg Config) *Collector {
	c := &Collector{cfg: cfg,
		ok: prometheus.NewDesc("oceanway_"+cfg.Owner+"_scrape_ok",
			"1 when the owner's scrape-time state could be read from its database.", nil, nil)}
	for _, q := range cfg.Queries {
		var ds []*prometheus.Desc
		for _, g := range q.Gauges {
			ds = append(ds, prometheus.NewDesc(g.Name, g.Help, q.Labels, nil))
		}
		for _, a := range q.Always {
			if len(a) != len(q.Labels) {
				panic(fmt.Sprintf("dbgauge: always-exported labels %v do not match %v", a, q.Labels))
			}
		}
		c.descs = append(c.descs, ds)
	}
	return c
}

// Describe implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, ds := range c.descs {
		for _, d := range ds {
			ch <- d
		}
	}
	ch <- c.ok
}

// Collect implements prometheus.Collector. A failed read exports only
// scrape_ok = 0: a number that could not be read is never reported as 0.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), c.cfg.Timeout)
	defer cancel()
	rows, err := c.Read(ctx)
	if err != nil {
		ch <- prometheus.MustNewConstMetric(c.ok, prometheus.GaugeValue, 0)
		return
	}
	for i, qrows := range rows {
		for _, r := range qrows {
			for j, d := range c.descs[i] {
				ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, r.Values[j], r.Labels...)
			}
		}
	}
	ch <- prometheus.MustNewConstMetric(c.ok, prometheus.GaugeValue, 1)
}

// Row is one label tuple of a Query and its gauge values.
type Row struct {
	Labels []string
	Values []float64
}

// Read runs every statement in one read-only snapshot and returns the rows
// of each Query, in the order of Config.Queries, with the Always tuples
// filled in at zero.
func (c *Collector) Read(ctx context.Context) ([][]Row, error) {
	out := make([][]Row, len(c.cfg.Queries))
	err := db.WithTxOptions(ctx, c.cfg.Pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly},
		func(ctx context.Context, tx pgx.Tx) error {
			for i, q := range c.cfg.Queries {
				rows, err := readQuery(ctx, tx, q)
				if err != nil {
					return fmt.Errorf("%s gauges %s: %w", c.cfg.Owner, q.Gauges[0].Name, err)
				}
				out[i] = rows
			}
			return nil
		})
	return out, err
}

func readQuery(ctx context.Context, tx pgx.Tx, q Query) ([]Row, error) {
	rows, err := tx.Query(ctx, q.SQL)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Row
	seen := map[string]bool{}
	for rows.Next() {
		r := Row{Labels: make([]string, len(q.Labels)), Values: make([]float64, len(q.Gauges))}
		dest := make([]any, 0, len(r.Labels)+len(r.Values))
		for i := range r.Labels {
			dest = append(dest, &r.Labels[i])
		}
		for i := range r.Values {
			dest = append(dest, &r.Values[i])
		}
		if err := rows.Scan(dest...); err != nil {
			return nil, err
		}
		out = append(out, r)
		seen[strings.Join(r.Labels, "\x00")] = true
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	for _, a := range q.Always {
		if !seen[strings.Join(a, "\x00")] {
			out = append(out, Row{Labels: a, Values: make([]float64, len(q.Gauges))})
		}
	}
	return out, nil
}
