package work

import (
	"context"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the Prometheus collectors every queue of Work shares. The
// only label besides a result kind or a queue's fixed outcome names is
// the queue's name: never an organization, run, reservation, Work or
// attempt id (OBS-2). One Metrics per process; every Runner built with it
// reports under its own queue name.
type Metrics struct {
	attempts     *prometheus.CounterVec   // queue
	results      *prometheus.CounterVec   // queue, result
	finishes     *prometheus.CounterVec   // queue, outcome
	blocked      *prometheus.CounterVec   // queue
	leaseExpired *prometheus.CounterVec   // queue
	renewed      *prometheus.CounterVec   // queue
	seconds      *prometheus.HistogramVec // queue, result
	backlog      *backlogCollector
}

// NewMetrics creates the collectors and registers them on reg (nil: not
// registered, for tests and one-off runners).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		attempts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "oceanway_work_attempts_total", Help: "Work attempts started (claimed with a fresh fencing token).",
		}, []string{"queue"}),
		results: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "oceanway_work_attempt_results_total", Help: "Work attempts by result: finished, retry, blocked, fenced, failed.",
		}, []string{"queue", "result"}),
		finishes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "oceanway_work_finishes_total", Help: "Work finished, by the queue's outcome (applied, superseded, caught_up, ...).",
		}, []string{"queue", "outcome"}),
		blocked: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "oceanway_work_blocked_total", Help: "Attempts that recorded a visible Blocked fact; the Work stays active and backs off.",
		}, []string{"queue"}),
		leaseExpired: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "oceanway_work_lease_expired_total", Help: "Attempts of this process whose lease ended before they finished (a renewal found the Work taken).",
		}, []string{"queue"}),
		renewed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "oceanway_work_lease_renewed_total", Help: "Lease renewals of running attempts.",
		}, []string{"queue"}),
		seconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "oceanway_work_attempt_seconds", Help: "Duration of Work attempts by result.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 16),
		}, []string{"queue", "result"}),
		backlog: newBacklogCollector(),
	}
	if reg != nil {
		reg.MustRegister(m.attempts, m.results, m.finishes, m.blocked, m.leaseExpired, m.renewed, m.seconds, m.backlog)
	}
	return m
}

type queueMetrics struct {
	attempts, blocked, leaseExpired, renewed prometheus.Counter
	results, finishes                        *prometheus.CounterVec
	seconds                                  prometheus.ObserverVec
}

// forQueue curries the queue's label and creates, at zero, every series
// whose labels are a fixed set: each result kind and each of the queue's
// finished outcomes (alerts and dashboards name them before the first one).
func (m *Metrics) forQueue(name string, outcomes []string) queueMetrics {
	l := prometheus.Labels{"queue": name}
	q := queueMetrics{
		attempts: m.attempts.With(l), blocked: m.blocked.With(l), leaseExpired: m.leaseExpired.With(l), renewed: m.renewed.With(l),
		results: m.results.MustCurryWith(l), finishes: m.finishes.MustCurryWith(l), seconds: m.seconds.MustCurryWith(l),
	}
	for _, kind := range kindNames {
		q.results.WithLabelValues(kind)
		q.seconds.WithLabelValues(kind)
	}
	for _, o := range outcomes {
		q.finishes.WithLabelValues(o)
	}
	return q
}

func (m *Metrics) watch(name string, read func(context.Context) (Backlog, error)) {
	m.backlog.add(name, read)
}

// backlogCollector reads every watched queue's backlog at scrape time.
type backlogCollector struct {
	mu     sync.Mutex
	queues map[string]func(context.Context) (Backlog, error)
	depth  *prometheus.Desc
	oldest *prometheus.Desc
	ok     *prometheus.Desc
}

func newBacklogCollector() *backlogCollector {
	return &backlogCollector{
		queues: map[string]func(context.Context) (Backlog, error){},
		depth:  prometheus.NewDesc("oceanway_work_depth", "Claimable Work (due now) per queue.", []string{"queue"}, nil),
		oldest: prometheus.NewDesc("oceanway_work_oldest_claimable_age_seconds",
			"How long the oldest claimable Work of the queue has waited.", []string{"queue"}, nil),
		ok: prometheus.NewDesc("oceanway_work_backlog_scrape_ok", "1 when the queue's backlog query succeeded.", []string{"queue"}, nil),
	}
}

func (c *backlogCollector) add(name string, read func(context.Context) (Backlog, error)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.queues[name] = read
}

// Describe implements prometheus.Collector.
func (c *backlogCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.depth
	ch <- c.oldest
	ch <- c.ok
}

// Collect implements prometheus.Collector.
func (c *backlogCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	queues := make(map[string]func(context.Context) (Backlog, error), len(c.queues))
	for k, v := range c.queues {
		queues[k] = v
	}
	c.mu.Unlock()
	for name, read := range queues {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		b, err := read(ctx)
		cancel()
		if err != nil {
			ch <- prometheus.MustNewConstMetric(c.ok, prometheus.GaugeValue, 0, name)
			continue
		}
		ch <- prometheus.MustNewConstMetric(c.ok, prometheus.GaugeValue, 1, name)
		ch <- prometheus.MustNewConstMetric(c.depth, prometheus.GaugeValue, float64(b.Depth), name)
		ch <- prometheus.MustNewConstMetric(c.oldest, prometheus.GaugeValue, b.OldestAge.Seconds(), name)
	}
}
