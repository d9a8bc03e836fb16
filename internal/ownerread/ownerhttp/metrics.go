package ownerhttp

import "github.com/prometheus/client_golang/prometheus"

// Outcomes of a call, as the caller saw it (a metric label).
const (
	OutcomeAnswered       = "answered"
	OutcomeInvalidRequest = "invalid_request"
	OutcomeRefused        = "refused" // the owner refused our token: trust or clock, not an outage
	OutcomeUnavailable    = "unavailable"
)

// Metrics are the caller's view of owner reads over HTTP, labelled by owner,
// read (contract name) and outcome only (OBS-2: no ids).
type Metrics struct {
	Calls   *prometheus.CounterVec
	Latency *prometheus.HistogramVec
}

// NewMetrics registers the metrics on reg (nil: unregistered).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		Calls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "oceanway_owner_read_calls_total",
			Help: "Owner reads called over HTTP, by owner, read and outcome (answered, invalid_request, refused, unavailable).",
		}, []string{"owner", "read", "outcome"}),
		Latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "oceanway_owner_read_seconds",
			Help:    "Latency of owner reads over HTTP, by owner and read.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 14),
		}, []string{"owner", "read"}),
	}
	if reg != nil {
		reg.MustRegister(m.Calls, m.Latency)
	}
	return m
}
