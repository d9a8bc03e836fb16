package httptransport

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/oceanway/core/contracts/jcs"
	"github.com/oceanway/core/contracts/route"
	"github.com/oceanway/core/internal/outbox/transport"
	"github.com/oceanway/core/internal/workload"
)

// DefaultMaxBody bounds a request body (an envelope is a few KiB).
const DefaultMaxBody = 4 << 20

// Endpoint is one consumer served over HTTP: its function and the verifier
// of the tokens addressed to it (audience = the destination's consumer).
type Endpoint struct {
	Consume  transport.ConsumerFunc
	Verifier *workload.Verifier
}

// HandlerConfig configures the consumer-endpoint handler.
type HandlerConfig struct {
	Endpoints map[route.Destination]Endpoint
	Metrics   *Metrics // default: unregistered metrics
	Log       *slog.Logger
	MaxBody   int64 // default DefaultMaxBody
	// AfterConsume, when set, runs after the consumer answered and before
	// the answer is written; returning false drops the response (the
	// connection is closed without an answer). Tests and the demo's chaos
	// mode use it to lose responses after the consumer committed.
	AfterConsume func(d transport.Delivery) bool
}

// Handler serves the consumer endpoints.
type Handler struct {
	cfg HandlerConfig
}

// NewHandler builds the handler. Every endpoint needs a consumer and a
// verifier whose audience is exactly its destination's consumer name.
func NewHandler(cfg HandlerConfig) (*Handler, error) {
	for dest, ep := range cfg.Endpoints {
		aud, err := Audience(dest)
		if err != nil {
			return nil, err
		}
		if ep.Consume == nil || ep.Verifier == nil {
			return nil, fmt.Errorf("httptransport: endpoint %s needs a consumer and a token verifier", dest)
		}
		if ep.Verifier.Audience() != aud {
			return nil, fmt.Errorf("httptransport: endpoint %s verifies audience %q, want exactly %q", dest, ep.Verifier.Audience(), aud)
		}
	}
	if cfg.Metrics == nil {
		cfg.Metrics = NewMetrics(nil)
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	if cfg.MaxBody <= 0 {
		cfg.MaxBody = DefaultMaxBody
	}
	return &Handler{cfg: cfg}, nil
}

// Destinations lists the destinations served, in the fixed order.
func (h *Handler) Destinations() []route.Destination {
	var out []route.Destination
	for _, d := range route.Destinations {
		if _, ok := h.cfg.Endpoints[d]; ok {
			out = append(out, d)
		}
	}
	return out
}

// ServeHTTP implements http.Handler: POST /v1/deliveries/{destination}.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	name, ok := strings.CutPrefix(r.URL.Path, PathPrefix)
	dest := route.Destination(name)
	ep, served := h.cfg.Endpoints[dest]
	if !ok || !served {
		h.cfg.Metrics.Refused.WithLabelValues("unknown", "unknown_destination").Inc()
		http.NotFound(w, r)
		return
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "POST only", http.StatusMethodNotAllowed)
		return
	}
	// Identity first: nothing is read or run for a refused token.
	token, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if _, err := ep.Verifier.Verify(token, Scope(dest)); err != nil {
		reason := workload.Reason(err)
		h.cfg.Metrics.Refused.WithLabelValues(string(dest), reason).Inc()
		h.cfg.Log.Warn("delivery refused", "destination", dest, "reason", reason)
		w.Header().Set("WWW-Authenticate", `Bearer error="invalid_token"`)
		http.Error(w, "workload token refused: "+reason, http.StatusUnauthorized)
		return
	}
	var req wireRequest
	body := http.MaxBytesReader(w, r.Body, h.cfg.MaxBody)
	if err := json.NewDecoder(body).Decode(&req); err != nil {
		h.badRequest(w, dest, err)
		return
	}
	d, err := req.delivery(dest)
	if err != nil {
		h.badRequest(w, dest, err)
		return
	}
	start := time.Now()
	res, err := consume(r.Context(), ep.Consume, d)
	resp := responseOf(res, err)
	h.cfg.Metrics.Handle.WithLabelValues(string(dest), resp.Outcome).Observe(time.Since(start).Seconds())
	if h.cfg.AfterConsume != nil && !h.cfg.AfterConsume(d) {
		h.cfg.Metrics.Served.WithLabelValues(string(dest), "dropped").Inc()
		panic(http.ErrAbortHandler) // close the connection without an answer
	}
	h.cfg.Metrics.Served.WithLabelValues(string(dest), resp.Outcome).Inc()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // the ack's canonical bytes travel as they are
	if err := enc.Encode(resp); err != nil {
		http.Error(w, "encode answer", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(buf.Bytes())
}

func (h *Handler) badRequest(w http.ResponseWriter, dest route.Destination, err error) {
	h.cfg.Metrics.Refused.WithLabelValues(string(dest), "bad_request").Inc()
	http.Error(w, "bad delivery request: "+err.Error(), http.StatusBadRequest)
}

// consume runs the consumer; a panic is a retryable consumer_panic, as in
// the in-process transport.
func consume(ctx context.Context, c transport.ConsumerFunc, d transport.Delivery) (res transport.Result, err error) {
	defer func() {
		if p := recover(); p != nil {
			res, err = transport.Result{}, transport.Retryable(transport.CodeConsumerPanic, fmt.Errorf("consumer panicked: %v", p))
		}
	}()
	return c(ctx, d)
}

// responseOf turns the consumer's answer into the wire answer. An ack that
// does not serialize is answered as retryable: the client never gets a
// half-formed ack.
func responseOf(res transport.Result, err error) wireResponse {
	if err == nil {
		if res.Ack == nil {
			return wireResponse{Outcome: OutcomeRetryable, Code: "ack_missing", Message: "consumer returned no ack"}
		}
		ack, aerr := jcs.Marshal(res.Ack.ToJSON())
		if aerr != nil {
			return wireResponse{Outcome: OutcomeRetryable, Code: "ack_encode", Message: aerr.Error()}
		}
		return wireResponse{Outcome: OutcomeAcknowledged, Ack: ack, ReceiptBody: res.ReceiptBody}
	}
	retryable, code := transport.RetryableAndCode(err)
	out := OutcomeNonRetryable
	switch {
	case transport.IsRecoverableWait(err):
		out = OutcomeWait
	case retryable:
		out = OutcomeRetryable
	}
	return wireResponse{Outcome: out, Code: code, Message: truncate(err.Error(), 512)}
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}
