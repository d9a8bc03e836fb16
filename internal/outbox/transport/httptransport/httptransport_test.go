package httptransport_test

import (
	"context"
	"crypto/ed25519"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/contracts/envelope"
	"github.com/oceanway/core/contracts/envelope/sample"
	"github.com/oceanway/core/contracts/route"
	"github.com/oceanway/core/internal/outbox/outboxtest"
	"github.com/oceanway/core/internal/outbox/transport"
	"github.com/oceanway/core/internal/outbox/transport/httptransport"
	"github.com/oceanway/core/internal/workload"
)

// delivery is a core_operations delivery of a real run.created@2.0 envelope.
func delivery(t testing.TB, n int) transport.Delivery {
	t.Helper()
	e := sample.Built(envelope.RunCreatedV2, n)
	body, err := e.Canonical()
	require.NoError(t, err)
	dg, err := e.Digest()
	require.NoError(t, err)
	return transport.Delivery{
		EventID: e.EventID, EventType: e.EventType, EventSchemaVersion: e.EventSchemaVersion,
		Envelope: body, EnvelopeDigest: dg,
		Member: route.Member{EventType: e.EventType, EventSchemaVersion: e.EventSchemaVersion, Destination: route.CoreOperations,
			ConsumerName: route.OperationsProjector, ExpectedReceiptType: route.OperationsProjectionAppliedReceipt,
			ExpectedReceiptSchemaVersion: route.ReceiptSchemaVersion1, ProjectionTarget: route.Required("operations_read_model", 1), Mandatory: true},
		AttemptID: "0193a000-0000-7000-8000-000000000001", AttemptNumber: 1,
	}
}

type bundle struct {
	signer   *workload.Signer
	priv     ed25519.PrivateKey
	trusted  workload.Trusted
	client   *httptransport.Client
	srv      *httptest.Server
	calls    atomic.Int64
	consume  atomic.Value // transport.ConsumerFunc
	metrics  *httptransport.Metrics
	reg      *prometheus.Registry
	endpoint string
}

func setup(t testing.TB) *bundle {
	t.Helper()
	b := &bundle{reg: prometheus.NewRegistry()}
	priv, pub, err := workload.Generate()
	require.NoError(t, err)
	b.priv = priv
	b.signer, err = workload.NewSigner(workload.SignerConfig{Workload: "dispatcher.core", Key: priv})
	require.NoError(t, err)
	b.trusted = workload.Trusted{Workload: "dispatcher.core", Key: pub}
	v, err := workload.NewVerifier(workload.VerifierConfig{Audience: route.OperationsProjector, Trusted: []workload.Trusted{b.trusted}})
	require.NoError(t, err)
	b.consume.Store(transport.ConsumerFunc(outboxtest.Ack))
	b.metrics = httptransport.NewMetrics(b.reg)
	h, err := httptransport.NewHandler(httptransport.HandlerConfig{
		Endpoints: map[route.Destination]httptransport.Endpoint{route.CoreOperations: {
			Verifier: v,
			Consume: func(ctx context.Context, d transport.Delivery) (transport.Result, error) {
				b.calls.Add(1)
				return b.consume.Load().(transport.ConsumerFunc)(ctx, d)
			},
		}},
		Metrics: b.metrics, Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	require.NoError(t, err)
	b.srv = httptest.NewServer(h)
	t.Cleanup(b.srv.Close)
	b.endpoint = b.srv.URL
	b.client, err = httptransport.NewClient(httptransport.ClientConfig{
		Endpoints: map[route.Destination]string{route.CoreOperations: b.srv.URL}, Signer: b.signer, Metrics: b.metrics,
	})
	require.NoError(t, err)
	t.Cleanup(b.client.Close)
	return b
}

// post sends a raw delivery request with the given Authorization value.
func (b *bundle) post(t *testing.T, auth string) int {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, b.endpoint+httptransport.PathPrefix+"core_operations",
		strings.NewReader(`{"eventId":"x"}`))
	require.NoError(t, err)
	if auth != "" {
		req.Header.Set("Authorization", "Bearer "+auth)
	}
	req.Close = true // no idle connection outlives the test
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	_ = resp.Body.Close()
	return resp.StatusCode
}

// Workload identity (issue 21): a missing, expired, wrong-audience,
// wrong-signer, wrong-scope or replayed token is refused with 401 before the
// body is read or the consumer — the only code that touches the consumer's
// database — runs; each refusal is counted by reason.
func TestTokenRefusedBeforeConsumer(t *testing.T) {
	t.Parallel()
	b := setup(t)
	sign := func(s *workload.Signer, aud, scope string) string {
		tok, err := s.Sign(aud, scope)
		require.NoError(t, err)
		return tok
	}
	strangerKey, _, err := workload.Generate()
	require.NoError(t, err)
	stranger, err := workload.NewSigner(workload.SignerConfig{Workload: "dispatcher.core", Key: strangerKey})
	require.NoError(t, err)
	oldButTrusted, err := workload.NewSigner(workload.SignerConfig{Workload: "dispatcher.core",
		Key: b.priv, Now: func() time.Time { return time.Now().Add(-time.Hour) }})
	require.NoError(t, err)
	scope := httptransport.Scope(route.CoreOperations)
	replayed := sign(b.signer, route.OperationsProjector, scope)
	// The first use of a token is accepted (and answered 400 for the bogus body).
	require.Equal(t, http.StatusBadRequest, b.post(t, replayed))

	for name, tok := range map[string]string{
		"missing":  "",
		"expired":  sign(oldButTrusted, route.OperationsProjector, scope),
		"audience": sign(b.signer, route.MeteringInputProcessorConsumer, scope),
		"signer":   sign(stranger, route.OperationsProjector, scope),
		"scope":    sign(b.signer, route.OperationsProjector, httptransport.Scope(route.MeteringInputProcessor)),
		"replay":   replayed,
	} {
		require.Equal(t, http.StatusUnauthorized, b.post(t, tok), name)
		require.InDelta(t, 1, testutil.ToFloat64(b.metrics.Refused.WithLabelValues("core_operations", name)), 0, name)
	}
	require.Zero(t, b.calls.Load(), "no refused request reached the consumer")

	// Through the client, a refused token is a retryable failure (the event
	// is not at fault), never a quarantine.
	c, err := httptransport.NewClient(httptransport.ClientConfig{
		Endpoints: map[route.Destination]string{route.CoreOperations: b.srv.URL}, Signer: stranger})
	require.NoError(t, err)
	defer c.Close()
	_, err = c.Deliver(t.Context(), delivery(t, 1))
	retryable, code := transport.RetryableAndCode(err)
	require.True(t, retryable)
	require.Equal(t, httptransport.CodeUnauthorized, code)
	require.Zero(t, b.calls.Load())
}

// OB-DELIVER-3: the ack crosses the wire as the strict ActiveConsumerAck@1
// with the receipt body byte for byte; classified failures keep their class
// and code; a panic is retryable.
func TestRoundTripKeepsAckAndClasses(t *testing.T) {
	t.Parallel()
	b := setup(t)
	d := delivery(t, 2)
	res, err := b.client.Deliver(t.Context(), d)
	require.NoError(t, err)
	require.NotNil(t, res.Ack)
	require.Equal(t, d.EventID, res.Ack.EventID)
	require.Equal(t, d.EnvelopeDigest, res.Ack.EventEnvelopeDigest)
	require.Equal(t, route.CoreOperations, res.Ack.Destination)
	require.Contains(t, string(res.ReceiptBody), `"eventId":"`+d.EventID+`"`)

	for _, tc := range []struct {
		err       error
		retryable bool
		wait      bool
		code      string
	}{
		{transport.Retryable("owner_read_unavailable", errors.New("x")), true, false, "owner_read_unavailable"},
		{transport.Wait("revision_gap", errors.New("x")), true, true, "revision_gap"},
		{transport.NonRetryable("digest_conflict", errors.New("x")), false, false, "digest_conflict"},
		{errors.New("plain"), true, false, "unclassified"},
	} {
		b.consume.Store(transport.ConsumerFunc(func(context.Context, transport.Delivery) (transport.Result, error) { return transport.Result{}, tc.err }))
		_, err := b.client.Deliver(t.Context(), d)
		retryable, code := transport.RetryableAndCode(err)
		require.Equal(t, tc.retryable, retryable, tc.code)
		require.Equal(t, tc.code, code)
		require.Equal(t, tc.wait, transport.IsRecoverableWait(err), tc.code)
	}
	b.consume.Store(transport.ConsumerFunc(func(context.Context, transport.Delivery) (transport.Result, error) { panic("boom") }))
	_, err = b.client.Deliver(t.Context(), d)
	retryable, code := transport.RetryableAndCode(err)
	require.True(t, retryable)
	require.Equal(t, transport.CodeConsumerPanic, code)
	require.InDelta(t, 1, testutil.ToFloat64(b.metrics.Requests.WithLabelValues("core_operations", "acknowledged")), 0)
	require.InDelta(t, 1, testutil.ToFloat64(b.metrics.Failures.WithLabelValues("core_operations", "non_retryable", "digest_conflict")), 0)
}

// A consumer endpoint that is down or slow is a retryable failure with its
// own code, never a crash or a quarantine.
func TestDownOrSlowEndpointIsRetryable(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	down := "http://" + ln.Addr().String()
	require.NoError(t, ln.Close())
	c, err := httptransport.NewClient(httptransport.ClientConfig{
		Endpoints: map[route.Destination]string{route.CoreOperations: down}, Signer: b.signer})
	require.NoError(t, err)
	defer c.Close()
	_, err = c.Deliver(t.Context(), delivery(t, 3))
	retryable, code := transport.RetryableAndCode(err)
	require.True(t, retryable)
	require.Equal(t, httptransport.CodeUnavailable, code)

	release := make(chan struct{})
	b.consume.Store(transport.ConsumerFunc(func(ctx context.Context, d transport.Delivery) (transport.Result, error) {
		select {
		case <-release:
		case <-ctx.Done():
		}
		return transport.Result{}, ctx.Err()
	}))
	defer close(release)
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	_, err = b.client.Deliver(ctx, delivery(t, 4))
	retryable, code = transport.RetryableAndCode(err)
	require.True(t, retryable)
	require.Equal(t, httptransport.CodeTimeout, code)

	_, err = httptransport.NewClient(httptransport.ClientConfig{Endpoints: map[route.Destination]string{"nowhere": "http://x"}, Signer: b.signer})
	require.Error(t, err)
}

// OBS-1/OBS-2: the transport counts requests, latency and failures by class
// with low-cardinality labels only; no label carries an event or attempt id.
func TestMetricsCarryNoIDs_OBS2(t *testing.T) {
	t.Parallel()
	b := setup(t)
	d := delivery(t, 5)
	_, err := b.client.Deliver(t.Context(), d)
	require.NoError(t, err)
	b.consume.Store(transport.ConsumerFunc(func(context.Context, transport.Delivery) (transport.Result, error) {
		return transport.Result{}, transport.Retryable("lock_timeout", errors.New("event "+d.EventID+" locked"))
	}))
	_, err = b.client.Deliver(t.Context(), d)
	require.Error(t, err)
	require.Equal(t, http.StatusUnauthorized, b.post(t, ""))
	n, err := testutil.GatherAndCount(b.reg)
	require.NoError(t, err)
	require.Positive(t, n)
	families, err := b.reg.Gather()
	require.NoError(t, err)
	for _, f := range families {
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				require.NotContains(t, l.GetValue(), d.EventID, f.GetName())
				require.NotContains(t, l.GetValue(), d.AttemptID, f.GetName())
				require.Contains(t, []string{"destination", "result", "class", "code", "outcome", "reason"}, l.GetName())
			}
		}
	}
	require.InDelta(t, 1, testutil.ToFloat64(b.metrics.Failures.WithLabelValues("core_operations", "retryable", "lock_timeout")), 0)
}
