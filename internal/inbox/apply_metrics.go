package inbox

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/oceanway/core/contracts/route"
	"github.com/oceanway/core/internal/outbox/transport"
)

// ApplyMetrics is the consumer side of OBS-1: how long each consumer takes
// to apply a delivery in its own inbox transaction (the receipt with its
// effect), by outcome. The dispatcher's oceanway_outbox_consumer_call_seconds
// measures the same call from the producer side, transport included; this
// one is measured where the consumer runs, so it is also there when the
// consumer serves the HTTP transport in another process. Labels: the
// consumer (its destination name) and the result class, never an id (OBS-2).
type ApplyMetrics struct {
	seconds *prometheus.HistogramVec
}

// Apply results.
const (
	ApplyApplied      = "applied"       // a receipt (new or the stored one) answered
	ApplyWait         = "wait"          // a recoverable wait: gap, owner not ready, unsupported pair
	ApplyRetryable    = "retryable"     // a transient failure; nothing applied
	ApplyNonRetryable = "non_retryable" // refused for good (the delivery is quarantined)
)

// NewApplyMetrics creates the histogram and registers it on reg.
func NewApplyMetrics(reg prometheus.Registerer) *ApplyMetrics {
	m := &ApplyMetrics{seconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "oceanway_consumer_apply_seconds",
		Help:    "Time a consumer takes to apply one delivery in its inbox transaction, by result (a batch's time is shared by its deliveries).",
		Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16),
	}, []string{"consumer", "result"})}
	reg.MustRegister(m.seconds)
	return m
}

// Init creates the consumer's series at zero, so a dashboard or an alert
// has them before the first delivery.
func (m *ApplyMetrics) Init(consumer route.Destination) {
	for _, r := range []string{ApplyApplied, ApplyWait, ApplyRetryable, ApplyNonRetryable} {
		m.seconds.WithLabelValues(string(consumer), r)
	}
}

// Consumer wraps a consumer so each call is timed.
func (m *ApplyMetrics) Consumer(consumer route.Destination, f transport.ConsumerFunc) transport.ConsumerFunc {
	m.Init(consumer)
	return func(ctx context.Context, d transport.Delivery) (transport.Result, error) {
		start := time.Now()
		res, err := f(ctx, d)
		m.seconds.WithLabelValues(string(consumer), applyResult(err)).Observe(time.Since(start).Seconds())
		return res, err
	}
}

// Batch wraps a batch consumer: each delivery of the batch is observed with
// its share of the batch's time.
func (m *ApplyMetrics) Batch(consumer route.Destination, f transport.BatchConsumerFunc) transport.BatchConsumerFunc {
	m.Init(consumer)
	return func(ctx context.Context, ds []transport.Delivery) []transport.Answer {
		start := time.Now()
		answers := f(ctx, ds)
		if len(answers) == 0 {
			return answers
		}
		share := time.Since(start).Seconds() / float64(len(answers))
		for _, a := range answers {
			m.seconds.WithLabelValues(string(consumer), applyResult(a.Err)).Observe(share)
		}
		return answers
	}
}

func applyResult(err error) string {
	if err == nil {
		return ApplyApplied
	}
	if transport.IsRecoverableWait(err) {
		return ApplyWait
	}
	if retryable, _ := transport.RetryableAndCode(err); retryable {
		return ApplyRetryable
	}
	return ApplyNonRetryable
}
