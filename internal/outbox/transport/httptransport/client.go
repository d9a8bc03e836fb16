package httptransport

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/oceanway/core/contracts/receipt"
	"github.com/oceanway/core/contracts/route"
	"github.com/oceanway/core/internal/outbox/transport"
	"github.com/oceanway/core/internal/workload"
)

// Codes of the client's own retryable failures (never a quarantine: the
// event is not at fault when the network or the endpoint is).
const (
	CodeUnavailable  = "transport_unavailable"   // connection refused/reset, response lost
	CodeTimeout      = "transport_timeout"       // the call's deadline passed
	CodeUnauthorized = "transport_unauthorized"  // the endpoint refused our token
	CodeRejected     = "transport_rejected"      // 400 / 404 / 405: misrouted or malformed request
	CodeHTTPStatus   = "transport_http_status"   // any other non-200 status
	CodeBadAnswer    = "transport_bad_answer"    // a 200 whose body is not a valid answer
	CodeNoEndpoint   = "transport_no_endpoint"   // no endpoint configured for the destination
	CodeSign         = "transport_token_signing" // the token could not be signed
)

// ClientConfig configures the client.
type ClientConfig struct {
	// Endpoints maps each destination to its endpoint's base URL
	// (http://host:port or https://host:port).
	Endpoints map[route.Destination]string
	Signer    *workload.Signer
	// TLS is used for https endpoints (RootCAs: the CA of the provided
	// certificates). Default: the system roots.
	TLS *tls.Config
	// Timeout, when set, bounds one call on top of the caller's context
	// (the dispatcher bounds every call by its DeliveryTimeout, which may be
	// long for consumers that renew their lease); DialTimeout bounds
	// connecting (default 5s).
	Timeout     time.Duration
	DialTimeout time.Duration
	// MaxConnsPerHost bounds the connections to one endpoint and is the
	// size of the idle pool kept for reuse (default 64).
	MaxConnsPerHost int
	Metrics         *Metrics
}

// Client is the dispatcher side: a transport.Transport over HTTP.
type Client struct {
	cfg       ClientConfig
	http      *http.Client
	audiences map[route.Destination]string
}

var _ transport.Transport = (*Client)(nil)

// NewClient builds a client.
func NewClient(cfg ClientConfig) (*Client, error) {
	if cfg.Signer == nil {
		return nil, errors.New("httptransport: the client needs a workload signer")
	}
	if cfg.DialTimeout <= 0 {
		cfg.DialTimeout = 5 * time.Second
	}
	if cfg.MaxConnsPerHost <= 0 {
		cfg.MaxConnsPerHost = 64
	}
	if cfg.Metrics == nil {
		cfg.Metrics = NewMetrics(nil)
	}
	auds := map[route.Destination]string{}
	endpoints := make(map[route.Destination]string, len(cfg.Endpoints))
	for dest, u := range cfg.Endpoints {
		aud, err := Audience(dest)
		if err != nil {
			return nil, err
		}
		if !strings.HasPrefix(u, "http://") && !strings.HasPrefix(u, "https://") {
			return nil, fmt.Errorf("httptransport: endpoint of %s is %q: want http:// or https://", dest, u)
		}
		endpoints[dest] = strings.TrimRight(u, "/")
		auds[dest] = aud
	}
	cfg.Endpoints = endpoints
	tr := &http.Transport{
		Proxy:                 nil, // internal calls never go through an environment proxy
		DialContext:           (&net.Dialer{Timeout: cfg.DialTimeout, KeepAlive: 30 * time.Second}).DialContext,
		TLSClientConfig:       cfg.TLS,
		TLSHandshakeTimeout:   cfg.DialTimeout,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          cfg.MaxConnsPerHost * max(1, len(cfg.Endpoints)),
		MaxIdleConnsPerHost:   cfg.MaxConnsPerHost,
		MaxConnsPerHost:       cfg.MaxConnsPerHost,
		IdleConnTimeout:       90 * time.Second,
		ExpectContinueTimeout: time.Second,
	}
	return &Client{cfg: cfg, http: &http.Client{Transport: tr, Timeout: cfg.Timeout}, audiences: auds}, nil
}

// Destinations lists the destinations with an endpoint, in the fixed order.
func (c *Client) Destinations() []route.Destination {
	var out []route.Destination
	for _, d := range route.Destinations {
		if _, ok := c.cfg.Endpoints[d]; ok {
			out = append(out, d)
		}
	}
	return out
}

// Close releases idle connections.
func (c *Client) Close() { c.http.CloseIdleConnections() }

// Deliver implements transport.Transport.
func (c *Client) Deliver(ctx context.Context, d transport.Delivery) (transport.Result, error) {
	dest := d.Member.Destination
	start := time.Now()
	res, result, err := c.deliver(ctx, d)
	c.cfg.Metrics.Requests.WithLabelValues(string(dest), result).Inc()
	c.cfg.Metrics.Latency.WithLabelValues(string(dest), result).Observe(time.Since(start).Seconds())
	if err != nil {
		retryable, code := transport.RetryableAndCode(err)
		class := "non_retryable"
		if retryable {
			class = "retryable"
		}
		c.cfg.Metrics.Failures.WithLabelValues(string(dest), class, code).Inc()
	}
	return res, err
}

func (c *Client) deliver(ctx context.Context, d transport.Delivery) (transport.Result, string, error) {
	const transportError = "transport_error"
	dest := d.Member.Destination
	base, ok := c.cfg.Endpoints[dest]
	if !ok {
		return transport.Result{}, transportError, transport.Retryable(CodeNoEndpoint, fmt.Errorf("%w: %s", transport.ErrNoConsumer, dest))
	}
	token, err := c.cfg.Signer.Sign(c.audiences[dest], Scope(dest))
	if err != nil {
		return transport.Result{}, transportError, transport.Retryable(CodeSign, err)
	}
	body, err := json.Marshal(requestOf(d))
	if err != nil {
		return transport.Result{}, transportError, transport.Retryable(CodeBadAnswer, fmt.Errorf("encode request: %w", err))
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+PathPrefix+string(dest), bytes.NewReader(body))
	if err != nil {
		return transport.Result{}, transportError, transport.Retryable(CodeRejected, err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := c.http.Do(req)
	if err != nil {
		return transport.Result{}, transportError, classifyNetError(ctx, err)
	}
	defer func() { _ = resp.Body.Close() }() // the body is read (bounded) below; a close error changes no outcome
	raw, err := io.ReadAll(io.LimitReader(resp.Body, DefaultMaxBody))
	if err != nil {
		return transport.Result{}, transportError, classifyNetError(ctx, err)
	}
	switch resp.StatusCode {
	case http.StatusOK:
	case http.StatusUnauthorized, http.StatusForbidden:
		return transport.Result{}, transportError, transport.Retryable(CodeUnauthorized, fmt.Errorf("endpoint %s refused the workload token: %s", dest, firstLine(raw)))
	case http.StatusBadRequest, http.StatusNotFound, http.StatusMethodNotAllowed:
		return transport.Result{}, transportError, transport.Retryable(CodeRejected, fmt.Errorf("endpoint %s: %s: %s", dest, resp.Status, firstLine(raw)))
	default:
		return transport.Result{}, transportError, transport.Retryable(CodeHTTPStatus, fmt.Errorf("endpoint %s: %s", dest, resp.Status))
	}
	var answer wireResponse
	if err := json.Unmarshal(raw, &answer); err != nil {
		return transport.Result{}, transportError, transport.Retryable(CodeBadAnswer, fmt.Errorf("decode answer: %w", err))
	}
	code := normalizeCode(answer.Code)
	cause := errors.New(truncate(answer.Message, 512))
	switch answer.Outcome {
	case OutcomeAcknowledged:
		ack, err := receipt.DecodeActiveConsumerAck(answer.Ack)
		if err != nil {
			return transport.Result{}, transportError, transport.Retryable(CodeBadAnswer, fmt.Errorf("decode ack: %w", err))
		}
		return transport.Result{Ack: ack, ReceiptBody: answer.ReceiptBody}, OutcomeAcknowledged, nil
	case OutcomeRetryable:
		return transport.Result{}, OutcomeRetryable, transport.Retryable(code, cause)
	case OutcomeWait:
		return transport.Result{}, OutcomeWait, transport.Wait(code, cause)
	case OutcomeNonRetryable:
		return transport.Result{}, OutcomeNonRetryable, transport.NonRetryable(code, cause)
	}
	return transport.Result{}, transportError, transport.Retryable(CodeBadAnswer, fmt.Errorf("answer outcome %q", answer.Outcome))
}

// classifyNetError: the caller's deadline is a timeout; everything else
// (refused, reset, EOF after the consumer ran) is "unavailable". Both are
// retryable: the redelivery converges on the consumer's receipt.
func classifyNetError(ctx context.Context, err error) error {
	var ne net.Error
	if errors.Is(err, context.DeadlineExceeded) || ctx.Err() != nil || (errors.As(err, &ne) && ne.Timeout()) {
		return transport.Retryable(CodeTimeout, err)
	}
	return transport.Retryable(CodeUnavailable, err)
}

func firstLine(b []byte) string {
	s, _, _ := strings.Cut(string(b), "\n")
	return truncate(s, 200)
}
