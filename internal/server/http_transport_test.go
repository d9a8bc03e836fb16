package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/contracts/route"
	"github.com/oceanway/core/internal/admission"
	"github.com/oceanway/core/internal/boundary"
	"github.com/oceanway/core/internal/dbtest"
	"github.com/oceanway/core/internal/lines"
	"github.com/oceanway/core/internal/operations/projector"
	"github.com/oceanway/core/internal/outbox/dispatcher"
	"github.com/oceanway/core/internal/outbox/outboxtest"
	"github.com/oceanway/core/internal/outbox/transport"
	"github.com/oceanway/core/internal/outbox/transport/httptransport"
	"github.com/oceanway/core/internal/release"
	"github.com/oceanway/core/internal/server"
	"github.com/oceanway/core/internal/workload"
)

// netBundle is a core database, a dispatcher workload identity and the
// verifier of the Operations projector's endpoint.
type netBundle struct {
	core     *pgxpool.Pool
	signer   *workload.Signer
	verifier func() *workload.Verifier // a fresh one per endpoint "process"
	quiet    *slog.Logger
}

func newNetBundle(t *testing.T) *netBundle {
	t.Helper()
	b := dbtest.New(t, dbtest.Opts{Boundaries: []boundary.Boundary{boundary.Core}, Lines: lines.All(), MaxConns: 16})
	_, err := release.Bootstrap(t.Context(), b.Core(), release.BootstrapParams{ProjectionName: "operations_read_model", ProjectionVersion: 1})
	require.NoError(t, err)
	priv, pub, err := workload.Generate()
	require.NoError(t, err)
	signer, err := workload.NewSigner(workload.SignerConfig{Workload: "dispatcher.core", Key: priv})
	require.NoError(t, err)
	return &netBundle{core: b.Core(), signer: signer, quiet: slog.New(slog.NewTextHandler(io.Discard, nil)),
		verifier: func() *workload.Verifier {
			v, err := workload.NewVerifier(workload.VerifierConfig{Audience: route.OperationsProjector,
				Trusted: []workload.Trusted{{Workload: "dispatcher.core", Key: pub}}})
			require.NoError(t, err)
			return v
		}}
}

// handler is one Operations projector endpoint (a fresh projector: a new
// process).
func (nb *netBundle) handler(t *testing.T, after func(transport.Delivery) bool) *httptransport.Handler {
	t.Helper()
	p, err := projector.New(nb.core, projector.Config{})
	require.NoError(t, err)
	h, err := httptransport.NewHandler(httptransport.HandlerConfig{
		Endpoints:    map[route.Destination]httptransport.Endpoint{route.CoreOperations: {Consume: p.Consume, Verifier: nb.verifier()}},
		Log:          nb.quiet,
		AfterConsume: after,
	})
	require.NoError(t, err)
	return h
}

// endpoint serves h on addr ("127.0.0.1:0" picks one) until stopped;
// stop closes the listener and every connection at once (a killed process).
func endpoint(t *testing.T, addr string, h http.Handler) (string, func()) {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	require.NoError(t, err)
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second, ErrorLog: nil}
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.Serve(ln) }()
	var once sync.Once
	stop := func() { once.Do(func() { _ = srv.Close(); <-done }) }
	t.Cleanup(stop)
	return ln.Addr().String(), stop
}

// runtime runs core dispatchers that reach core_operations over HTTP at addr.
func (nb *netBundle) runtime(t *testing.T, addr string) {
	t.Helper()
	client, err := httptransport.NewClient(httptransport.ClientConfig{
		Endpoints: map[route.Destination]string{route.CoreOperations: "http://" + addr}, Signer: nb.signer,
		DialTimeout: time.Second,
	})
	require.NoError(t, err)
	t.Cleanup(client.Close)
	rt, err := server.New(server.Pools{boundary.Core: nb.core}, nil, server.Config{
		Dispatcher: dispatcher.Config{PollInterval: 20 * time.Millisecond, BackoffBase: 10 * time.Millisecond,
			BackoffMax: 100 * time.Millisecond, DeliveryTimeout: 10 * time.Second},
		DispatchersPerBoundary: 2, Remote: client, RemoteDestinations: []route.Destination{route.CoreOperations},
	}, prometheus.NewRegistry(), nb.quiet)
	require.NoError(t, err)
	require.Equal(t, []route.Destination{route.CoreOperations}, rt.Served())
	ctx, stop := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- rt.Run(ctx) }()
	t.Cleanup(func() { stop(); require.NoError(t, <-done) })
}

// admit runs n admissions (two core_operations events each) and returns
// their event ids.
func (nb *netBundle) admit(t *testing.T, n int) []string {
	t.Helper()
	svc := admission.New(nb.core)
	var ids []string
	for i := 0; i < n; i++ {
		res, err := svc.Admit(t.Context(), admission.Request{AdmissionOperationID: uuid.NewString(), TenantKind: "organization",
			TenantID: uuid.NewString(), WorkspaceID: uuid.NewString(), BillingAccountID: uuid.NewString(), ReservedCredits: int64(100 + i)})
		require.NoError(t, err)
		ids = append(ids, res.RunCreatedEventID, res.WalletReservedEventID)
	}
	return ids
}

// requireConverged waits until every event is acknowledged, then proves one
// receipt and one acknowledged delivery per event, at most one finish per
// start and the outbox invariants (OB-DELIVER-6).
func (nb *netBundle) requireConverged(t *testing.T, ids []string) {
	t.Helper()
	ctx := t.Context()
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		var acked int
		require.NoError(c, nb.core.QueryRow(ctx, `SELECT count(*) FROM outbox.outbox_deliveries
			WHERE status = 'acknowledged' AND event_id = ANY($1::uuid[])`, ids).Scan(&acked))
		require.Equal(c, len(ids), acked)
	}, 60*time.Second, 20*time.Millisecond, "deliveries not acknowledged in time")
	var receipts, distinct, successes int
	require.NoError(t, nb.core.QueryRow(ctx, `SELECT count(*), count(DISTINCT event_id) FROM operations.applied_receipts
		WHERE event_id = ANY($1::uuid[])`, ids).Scan(&receipts, &distinct))
	require.Equal(t, len(ids), receipts, "one receipt per event")
	require.Equal(t, len(ids), distinct)
	require.NoError(t, nb.core.QueryRow(ctx, `SELECT count(*) FROM outbox.outbox_delivery_attempt_finishes f
		JOIN outbox.outbox_delivery_attempt_starts s USING (attempt_id)
		WHERE f.outcome = 'acknowledged' AND s.event_id = ANY($1::uuid[])`, ids).Scan(&successes))
	require.Equal(t, len(ids), successes, "one acknowledgement per event")
	outboxtest.RequireInvariants(t, nb.core)
}

// finishesWith counts attempt finishes with the normalized error code.
func (nb *netBundle) finishesWith(t require.TestingT, code string) int {
	var n int
	require.NoError(t, nb.core.QueryRow(context.Background(), `SELECT count(*) FROM outbox.outbox_delivery_attempt_finishes
		WHERE normalized_error_code = $1`, code).Scan(&n))
	return n
}

// dropProxy forwards each request to upstream and, for the first request of
// every event, reads the consumer's complete answer (the consumer has
// committed) and then drops it: the dispatcher sees the connection close.
type dropProxy struct {
	upstream string
	client   *http.Client
	seen     sync.Map
	dropped  atomic.Int64
}

func (p *dropProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		panic(http.ErrAbortHandler)
	}
	req, _ := http.NewRequestWithContext(r.Context(), r.Method, p.upstream+r.URL.Path, bytes.NewReader(body))
	req.Header = r.Header.Clone()
	resp, err := p.client.Do(req)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	answer, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	var event struct {
		EventID string `json:"eventId"`
	}
	_ = json.Unmarshal(body, &event)
	if _, again := p.seen.LoadOrStore(event.EventID, true); !again && resp.StatusCode == http.StatusOK {
		p.dropped.Add(1)
		panic(http.ErrAbortHandler) // the consumer committed; its answer never arrives
	}
	w.Header().Set("Content-Type", resp.Header.Get("Content-Type"))
	w.WriteHeader(resp.StatusCode)
	_, _ = w.Write(answer)
}

// OB-DELIVER-6 over HTTP: a proxy drops every event's first answer after the
// consumer committed; the redelivery returns the same receipt and each event
// converges to one acknowledgement and one receipt.
func TestHTTPResponseLossConverges_OBDELIVER6(t *testing.T) {
	t.Parallel()
	nb := newNetBundle(t)
	upstream, _ := endpoint(t, "127.0.0.1:0", nb.handler(t, nil))
	proxy := &dropProxy{upstream: "http://" + upstream, client: &http.Client{Transport: &http.Transport{}}}
	t.Cleanup(proxy.client.CloseIdleConnections)
	addr, _ := endpoint(t, "127.0.0.1:0", proxy)
	nb.runtime(t, addr)
	ids := nb.admit(t, 4)
	nb.requireConverged(t, ids)
	require.EqualValues(t, len(ids), proxy.dropped.Load(), "every event's first answer was dropped")
	require.GreaterOrEqual(t, nb.finishesWith(t, httptransport.CodeUnavailable), len(ids))
}

// OB-DELIVER-6 over HTTP: the consumer process is killed right after its
// commit (before answering); a new process on the same address answers the
// redelivery with the first receipt.
func TestHTTPConsumerKilledAfterCommitConverges_OBDELIVER6(t *testing.T) {
	t.Parallel()
	nb := newNetBundle(t)
	killed := make(chan struct{})
	var once sync.Once
	addr, stop := endpoint(t, "127.0.0.1:0", nb.handler(t, func(transport.Delivery) bool {
		once.Do(func() { close(killed) })
		return false // dies before any answer leaves
	}))
	nb.runtime(t, addr)
	ids := nb.admit(t, 3)
	<-killed
	stop()
	var committed int
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		require.NoError(c, nb.core.QueryRow(t.Context(), `SELECT count(*) FROM operations.applied_receipts`).Scan(&committed))
		require.Positive(c, committed)
	}, 10*time.Second, 10*time.Millisecond)
	endpoint(t, addr, nb.handler(t, nil)) // the restarted consumer
	nb.requireConverged(t, ids)
}

// At-least-once over HTTP: an endpoint that is down for a while delays the
// deliveries (retryable transport_unavailable with backoff) but loses none.
func TestHTTPEndpointDownDelaysButLosesNothing(t *testing.T) {
	t.Parallel()
	nb := newNetBundle(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	nb.runtime(t, addr)
	ids := nb.admit(t, 3)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		require.GreaterOrEqual(c, nb.finishesWith(c, httptransport.CodeUnavailable), 2*len(ids))
	}, 30*time.Second, 10*time.Millisecond, "the dispatchers kept retrying the down endpoint")
	var quarantined int
	require.NoError(t, nb.core.QueryRow(t.Context(), `SELECT count(*) FROM outbox.outbox_quarantine`).Scan(&quarantined))
	require.Zero(t, quarantined)
	endpoint(t, addr, nb.handler(t, nil))
	nb.requireConverged(t, ids)
}

// Workload identity with the real projector: refused tokens never reach the
// consumer's database (its pool acquires nothing).
func TestHTTPRefusedTokenTouchesNoDatabase(t *testing.T) {
	t.Parallel()
	nb := newNetBundle(t)
	addr, _ := endpoint(t, "127.0.0.1:0", nb.handler(t, nil))
	otherKey, _, err := workload.Generate()
	require.NoError(t, err)
	stranger, err := workload.NewSigner(workload.SignerConfig{Workload: "dispatcher.core", Key: otherKey})
	require.NoError(t, err)
	before := nb.core.Stat().AcquireCount()
	for _, tok := range []string{"", mustSign(t, stranger, route.OperationsProjector), mustSign(t, nb.signer, route.MeteringInputProcessorConsumer)} {
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, "http://"+addr+httptransport.PathPrefix+"core_operations", strings.NewReader("{}"))
		require.NoError(t, err)
		if tok != "" {
			req.Header.Set("Authorization", "Bearer "+tok)
		}
		req.Close = true // no idle connection outlives the test
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		_ = resp.Body.Close()
		require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	}
	require.Equal(t, before, nb.core.Stat().AcquireCount(), "no connection acquired for a refused request")
}

func mustSign(t *testing.T, s *workload.Signer, aud string) string {
	t.Helper()
	tok, err := s.Sign(aud, httptransport.Scope(route.CoreOperations))
	require.NoError(t, err)
	return tok
}
