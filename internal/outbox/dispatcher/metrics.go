package dispatcher

import (
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// Metrics are the dispatcher's Prometheus collectors (OBS-1). Labels are
// low-cardinality only: boundary (the producer database's fact boundary),
// destination, event type, schema version, normalized error code, outcome.
// No label ever carries an id (OBS-2). Dispatchers share one Metrics; each
// uses a copy curried with its own boundary.
type Metrics struct {
	Claimed      *prometheus.CounterVec   // destination
	Acknowledged *prometheus.CounterVec   // destination
	Retried      *prometheus.CounterVec   // destination, code
	Quarantined  *prometheus.CounterVec   // destination, event_type, schema_version, code
	LeaseExpired *prometheus.CounterVec   // destination
	LeaseLost    *prometheus.CounterVec   // destination, outcome
	LeaseRenewed *prometheus.CounterVec   // destination
	Failures     *prometheus.CounterVec   // destination, event_type, schema_version, code
	DeliverySecs *prometheus.HistogramVec // destination, result
	// ConsumerBatch is the number of deliveries per consumer call (1, or
	// a chunk for a consumer that takes batches): destination.
	ConsumerBatch  *prometheus.HistogramVec
	AckLatencySecs *prometheus.HistogramVec // destination
	// OutcomeRecordFailures counts outcomes the database did not record:
	// destination, outcome (ack|retry|quarantine), class (transient|permanent).
	OutcomeRecordFailures *prometheus.CounterVec
	Healthy               *prometheus.GaugeVec // boundary
	Info                  *prometheus.GaugeVec // version, region
	// UnsupportedWaits counts retries of deliveries whose pair the consumer
	// does not support or whose destination has no consumer here, and
	// UnsupportedWaitSecs is the last wait scheduled for them (backing off
	// up to BackoffMax): destination, code.
	UnsupportedWaits    *prometheus.CounterVec
	UnsupportedWaitSecs *prometheus.GaugeVec
}

// NewMetrics creates the collectors and registers them on reg. Several
// dispatchers in one process share one Metrics (registering twice fails).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		Claimed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "oceanway_outbox_claimed_total", Help: "Deliveries claimed (attempts started).",
		}, []string{"boundary", "destination"}),
		Acknowledged: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "oceanway_outbox_acknowledged_total", Help: "Deliveries acknowledged with a verified receipt.",
		}, []string{"boundary", "destination"}),
		Retried: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "oceanway_outbox_retried_total", Help: "Attempts finished retryable; the delivery went back to pending.",
		}, []string{"boundary", "destination", "code"}),
		Quarantined: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "oceanway_outbox_quarantined_total", Help: "Deliveries quarantined.",
		}, []string{"boundary", "destination", "event_type", "schema_version", "code"}),
		LeaseExpired: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "oceanway_outbox_lease_expired_total", Help: "Expired attempts finished as lease_expired_unknown by recovery.",
		}, []string{"boundary", "destination"}),
		LeaseLost: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "oceanway_outbox_lease_lost_total", Help: "Late outcomes dropped because the fence no longer held.",
		}, []string{"boundary", "destination", "outcome"}),
		LeaseRenewed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "oceanway_outbox_lease_renewed_total", Help: "Lease renewals of slow deliveries.",
		}, []string{"boundary", "destination"}),
		Failures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "oceanway_outbox_delivery_failures_total", Help: "Failed attempts by normalized error code.",
		}, []string{"boundary", "destination", "event_type", "schema_version", "code"}),
		DeliverySecs: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "oceanway_outbox_consumer_call_seconds", Help: "Duration of consumer calls.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16),
		}, []string{"boundary", "destination", "result"}),
		ConsumerBatch: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "oceanway_outbox_consumer_call_deliveries", Help: "Deliveries handed to the consumer per call (batching consumers take several).",
			Buckets: prometheus.ExponentialBuckets(1, 2, 9),
		}, []string{"boundary", "destination"}),
		AckLatencySecs: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "oceanway_outbox_append_to_ack_seconds", Help: "Time from delivery creation (append commit) to acknowledgement.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 18),
		}, []string{"boundary", "destination"}),
		OutcomeRecordFailures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "oceanway_outbox_outcome_record_failures_total", Help: "Outcomes the database did not record, by class.",
		}, []string{"boundary", "destination", "outcome", "class"}),
		Healthy: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "oceanway_outbox_dispatcher_healthy", Help: "1 while the last claim round of the boundary's dispatchers succeeded.",
		}, []string{"boundary"}),
		Info: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "oceanway_outbox_dispatcher_info", Help: "Dispatcher worker version and deployment region (always 1).",
		}, []string{"version", "region"}),
		UnsupportedWaits: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "oceanway_outbox_unsupported_waits_total",
			Help: "Retries of deliveries whose pair the consumer does not support or whose destination has no consumer in this process.",
		}, []string{"boundary", "destination", "code"}),
		UnsupportedWaitSecs: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "oceanway_outbox_unsupported_wait_seconds",
			Help: "Last wait scheduled for an unsupported-pair or no-consumer delivery (backs off up to the maximum).",
		}, []string{"boundary", "destination", "code"}),
	}
	reg.MustRegister(m.Claimed, m.Acknowledged, m.Retried, m.Quarantined, m.LeaseExpired, m.LeaseLost,
		m.LeaseRenewed, m.Failures, m.DeliverySecs, m.ConsumerBatch, m.AckLatencySecs, m.OutcomeRecordFailures, m.Healthy, m.Info,
		m.UnsupportedWaits, m.UnsupportedWaitSecs)
	return m
}

// InitSeries creates, at zero, the series of the boundary's dispatchers for
// each destination they serve whose labels are a fixed set, so alerts and
// rates have a series before the first event (a lease expiry, a class-42
// outcome-record failure).
func (m *Metrics) InitSeries(boundary string, destinations []string) {
	for _, d := range destinations {
		m.Claimed.WithLabelValues(boundary, d)
		m.Acknowledged.WithLabelValues(boundary, d)
		m.LeaseExpired.WithLabelValues(boundary, d)
		m.LeaseRenewed.WithLabelValues(boundary, d)
		m.AckLatencySecs.WithLabelValues(boundary, d)
		m.ConsumerBatch.WithLabelValues(boundary, d)
		for _, result := range []string{callResultOK, callResultError} {
			m.DeliverySecs.WithLabelValues(boundary, d, result)
		}
		for _, outcome := range []string{outcomeAck, outcomeRetry, outcomeQuarantine} {
			m.LeaseLost.WithLabelValues(boundary, d, outcome)
			for _, class := range []string{recordClassTransient, recordClassPermanent} {
				m.OutcomeRecordFailures.WithLabelValues(boundary, d, outcome, class)
			}
		}
	}
	m.Healthy.WithLabelValues(boundary)
}

// forBoundary returns a copy whose vectors are curried with the boundary label.
func (m *Metrics) forBoundary(boundary string) *Metrics {
	l := prometheus.Labels{"boundary": boundary}
	return &Metrics{
		Claimed:               m.Claimed.MustCurryWith(l),
		Acknowledged:          m.Acknowledged.MustCurryWith(l),
		Retried:               m.Retried.MustCurryWith(l),
		Quarantined:           m.Quarantined.MustCurryWith(l),
		LeaseExpired:          m.LeaseExpired.MustCurryWith(l),
		LeaseLost:             m.LeaseLost.MustCurryWith(l),
		LeaseRenewed:          m.LeaseRenewed.MustCurryWith(l),
		Failures:              m.Failures.MustCurryWith(l),
		DeliverySecs:          m.DeliverySecs.MustCurryWith(l).(*prometheus.HistogramVec),
		ConsumerBatch:         m.ConsumerBatch.MustCurryWith(l).(*prometheus.HistogramVec),
		AckLatencySecs:        m.AckLatencySecs.MustCurryWith(l).(*prometheus.HistogramVec),
		OutcomeRecordFailures: m.OutcomeRecordFailures.MustCurryWith(l),
		Healthy:               m.Healthy.MustCurryWith(l),
		Info:                  m.Info,
		UnsupportedWaits:      m.UnsupportedWaits.MustCurryWith(l),
		UnsupportedWaitSecs:   m.UnsupportedWaitSecs.MustCurryWith(l),
	}
}

// ConsumerCalls sums the consumer-call histogram over its labels: how many
// consumer calls the dispatchers made and how many deliveries they carried
// (for reports: the demo summary, the bench's notes).
func (m *Metrics) ConsumerCalls() (calls uint64, deliveries float64) {
	ch := make(chan prometheus.Metric, 16)
	go func() { m.ConsumerBatch.Collect(ch); close(ch) }()
	for metric := range ch {
		var d dto.Metric
		if metric.Write(&d) != nil || d.GetHistogram() == nil {
			continue
		}
		calls += d.GetHistogram().GetSampleCount()
		deliveries += d.GetHistogram().GetSampleSum()
	}
	return calls, deliveries
}

// The fixed label values of the dispatcher's series.
const (
	callResultOK         = "ok"    // the consumer answered
	callResultError      = "error" // the consumer call failed
	outcomeAck           = "ack"
	outcomeRetry         = "retry"
	outcomeQuarantine    = "quarantine"
	recordClassTransient = "transient" // class 40/08/57 and the like: retried
	recordClassPermanent = "permanent" // refused by a guard: never retried as is
)
