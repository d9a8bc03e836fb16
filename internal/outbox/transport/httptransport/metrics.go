package httptransport

import (
	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the HTTP transport's metrics. Labels are low-cardinality only:
// destination, result class, normalized code, refusal reason (OBS-2).
type Metrics struct {
	// Client side (the dispatcher's process).
	Requests *prometheus.CounterVec   // destination, result
	Latency  *prometheus.HistogramVec // destination, result
	Failures *prometheus.CounterVec   // destination, class, code
	// Server side (the consumer endpoint's process).
	Served  *prometheus.CounterVec   // destination, outcome
	Refused *prometheus.CounterVec   // destination, reason
	Handle  *prometheus.HistogramVec // destination, outcome
}

// NewMetrics registers the transport metrics on reg (a nil reg registers
// nothing: the metrics still count).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	buckets := []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30}
	m := &Metrics{
		Requests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "oceanway_transport_http_requests_total",
			Help: "Delivery requests sent over the HTTP transport, by result (acknowledged | retryable | wait | non_retryable | transport_error)."},
			[]string{"destination", "result"}),
		Latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "oceanway_transport_http_request_seconds",
			Help: "Round trip of one delivery request, by result.", Buckets: buckets},
			[]string{"destination", "result"}),
		Failures: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "oceanway_transport_http_failures_total",
			Help: "Delivery requests that did not return an ack, by class (retryable | non_retryable) and normalized code."},
			[]string{"destination", "class", "code"}),
		Served: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "oceanway_transport_http_served_total",
			Help: "Delivery requests answered by this consumer endpoint, by outcome."},
			[]string{"destination", "outcome"}),
		Refused: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "oceanway_transport_http_refused_total",
			Help: "Delivery requests refused before the consumer ran, by reason (token reasons, bad_request, unknown_destination)."},
			[]string{"destination", "reason"}),
		Handle: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "oceanway_transport_http_handle_seconds",
			Help: "Time the consumer endpoint spent on one accepted request, by outcome.", Buckets: buckets},
			[]string{"destination", "outcome"}),
	}
	if reg != nil {
		reg.MustRegister(m.Requests, m.Latency, m.Failures, m.Served, m.Refused, m.Handle)
	}
	return m
}
