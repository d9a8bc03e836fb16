package dispatcher_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"log/slog"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/oceanway/core/contracts/route"
	"github.com/oceanway/core/internal/dbtest"
	"github.com/oceanway/core/internal/outbox/dispatcher"
	outboxschema "github.com/oceanway/core/internal/outbox/schema"
	"github.com/oceanway/core/internal/outbox/transport"
)

var soakDuration = flag.Duration("soak", 0, "run the dispatcher soak test for this long (e.g. -soak=30s); skipped when 0 or -short")

// single wires one in-process consumer function for core_operations.
func single(fn transport.ConsumerFunc) transport.Transport {
	return transport.NewInProcess(map[route.Destination]transport.ConsumerFunc{route.CoreOperations: fn})
}

func quietLog() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func newDispatcher(t *testing.T, b *bundle, tr transport.Transport, cfg dispatcher.Config, m *dispatcher.Metrics) *dispatcher.Dispatcher {
	t.Helper()
	if m == nil {
		m = dispatcher.NewMetrics(prometheus.NewRegistry())
	}
	d, err := dispatcher.New(b.producer, tr, cfg, m, quietLog())
	require.NoError(t, err)
	return d
}

func (b *bundle) countStatus(t tb, status string) int {
	t.Helper()
	var n int
	require.NoError(t, b.producer.QueryRow(b.ctx,
		`SELECT count(*) FROM outbox.outbox_deliveries WHERE status = $1`, status).Scan(&n))
	return n
}

// run starts d under the test's context and returns a stop function that
// cancels it and returns Run's error.
func run(t interface{ Context() context.Context }, d *dispatcher.Dispatcher) (stop func() error) {
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	return func() error { cancel(); return <-done }
}

// Several dispatchers on one database deliver everything exactly once to the
// consumer's effects, and the tables prove the invariants afterwards.
func TestRun_OBCLAIM1_ConcurrentDispatchersDeliverEverything(t *testing.T) {
	t.Parallel()
	b := setup(t)
	const n = 400
	b.appendRuns(t, n)
	var stops []func() error
	m := dispatcher.NewMetrics(prometheus.NewRegistry())
	for i := 0; i < 3; i++ {
		d := newDispatcher(t, b, b.consumer.Transport(), dispatcher.Config{
			WorkerID: "w" + string(rune('a'+i)), BatchSize: 25, Concurrency: 8, PollInterval: 20 * time.Millisecond,
		}, m)
		stops = append(stops, run(t, d))
	}
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		require.Equal(c, n, b.countStatus(c, "acknowledged"))
	}, 60*time.Second, pollTick, "all acknowledged")
	for _, stop := range stops {
		require.NoError(t, stop())
	}
	total, distinct := b.consumer.Effects(t)
	require.Equal(t, n, total)
	require.Equal(t, n, distinct)
	b.invariants(t)
}

// OB-CLAIM-5 drain-on-stop: a stop while a delivery is in flight waits for
// it and records its outcome; nothing stays leased.
func TestRun_OBCLAIM5_GracefulStopDrainsInFlight(t *testing.T) {
	t.Parallel()
	b := setup(t)
	id := b.appendRuns(t, 1)[0]
	entered := make(chan struct{})
	release := make(chan struct{})
	tr := single(func(ctx context.Context, d transport.Delivery) (transport.Result, error) {
		close(entered)
		<-release
		return b.consumer.Deliver(ctx, d)
	})
	d := newDispatcher(t, b, tr, dispatcher.Config{PollInterval: 10 * time.Millisecond, DrainTimeout: time.Minute}, nil)
	stop := run(t, d)
	<-entered
	stopped := make(chan error, 1)
	go func() { stopped <- stop() }()
	close(release)
	require.NoError(t, <-stopped)
	require.Equal(t, "acknowledged", b.delivery(t, id).Status)
	require.Zero(t, b.countStatus(t, "leased"))
}

// LISTEN/NOTIFY from the append transaction wakes an idle dispatcher long
// before its (here: one hour) poll interval.
func TestRun_NotifyWakesIdleDispatcher(t *testing.T) {
	t.Parallel()
	b := setup(t)
	d := newDispatcher(t, b, b.consumer.Transport(), dispatcher.Config{PollInterval: time.Hour}, nil)
	listening := make(chan struct{})
	var once sync.Once
	d.SetHooks(dispatcher.Hooks{Listening: func() { once.Do(func() { close(listening) }) }})
	stop := run(t, d)
	defer func() { require.NoError(t, stop()) }()
	<-listening
	id := b.appendRuns(t, 1)[0]
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		require.Equal(c, "acknowledged", b.delivery(c, id).Status)
	}, 20*time.Second, pollTick, "notified delivery acknowledged")
}

// OB-CLAIM-2 renewal: a consumer slower than the lease still gets its ack
// recorded because the dispatcher renews the lease under the fence.
func TestRun_OBCLAIM2_RenewalKeepsSlowConsumerLease(t *testing.T) {
	t.Parallel()
	b := setup(t)
	id := b.appendRuns(t, 1)[0]
	tr := single(func(ctx context.Context, d transport.Delivery) (transport.Result, error) {
		// Stay busy until the original lease has run out in database time.
		var original time.Time
		_ = b.producer.QueryRow(ctx, `SELECT lease_expires_at FROM outbox.outbox_deliveries WHERE event_id=$1`, d.EventID).Scan(&original)
		// assert, not require: this runs on the dispatcher's goroutine.
		assert.Eventually(t, func() bool {
			var past bool
			_ = b.producer.QueryRow(ctx, `SELECT clock_timestamp() > $1::timestamptz + interval '100 milliseconds'`, original).Scan(&past)
			return past
		}, 10*time.Second, 10*time.Millisecond, "original lease never ran out")
		return b.consumer.Deliver(ctx, d)
	})
	reg := prometheus.NewRegistry()
	m := dispatcher.NewMetrics(reg)
	d := newDispatcher(t, b, tr, dispatcher.Config{LeaseDuration: 300 * time.Millisecond, RenewInterval: 50 * time.Millisecond,
		DeliveryTimeout: 10 * time.Second, PollInterval: 10 * time.Millisecond}, m)
	stop := run(t, d)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		require.Equal(c, "acknowledged", b.delivery(c, id).Status)
	}, 20*time.Second, pollTick, "slow delivery acknowledged")
	require.NoError(t, stop())
	require.Equal(t, []string{"acknowledged"}, b.finishes(t, id), "no recovery happened: the lease was renewed")
	require.Positive(t, counterTotal(t, reg, "oceanway_outbox_lease_renewed_total"))
}

// OB-DELIVER-2 / OB-CLAIM-5: non_retryable errors quarantine at once;
// retryable ones retry and, only when MaxAttempts is configured, end in
// quarantine with the retryable outcome.
func TestRun_OBDELIVER2_RetryThenQuarantineByConfiguredLimit(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ids := b.appendRuns(t, 2)
	var calls sync.Map
	tr := single(func(ctx context.Context, d transport.Delivery) (transport.Result, error) {
		n, _ := calls.LoadOrStore(d.EventID, new(atomic.Int32))
		n.(*atomic.Int32).Add(1)
		if d.EventID == ids[0] {
			return transport.Result{}, transport.NonRetryable("unknown_pair", errors.New("no such pair"))
		}
		return transport.Result{}, errors.New("owner read unavailable") // unclassified → retryable
	})
	reg := prometheus.NewRegistry()
	d := newDispatcher(t, b, tr, dispatcher.Config{MaxAttempts: 3, BackoffBase: time.Millisecond, BackoffMax: 2 * time.Millisecond,
		PollInterval: 5 * time.Millisecond}, dispatcher.NewMetrics(reg))
	stop := run(t, d)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		require.Equal(c, 2, b.countStatus(c, "quarantined"))
	}, 20*time.Second, pollTick, "both quarantined")
	require.NoError(t, stop())
	require.Equal(t, []string{"non_retryable"}, b.finishes(t, ids[0]))
	require.Equal(t, []string{"retryable", "retryable", "retryable"}, b.finishes(t, ids[1]))
	require.Equal(t, "max_attempts_exceeded", *b.delivery(t, ids[1]).LastError)
	require.Equal(t, float64(2), counterTotal(t, reg, "oceanway_outbox_quarantined_total"))
	requireNoIDLabels(t, reg)
	b.invariants(t)
}

// OBS-2: no metric label value looks like an id.
func requireNoIDLabels(t *testing.T, reg *prometheus.Registry) {
	t.Helper()
	families, err := reg.Gather()
	require.NoError(t, err)
	for _, f := range families {
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				v := l.GetValue()
				require.False(t, len(v) == 36 && strings.Count(v, "-") == 4, "label %s=%s looks like an id", l.GetName(), v)
			}
		}
	}
}

func counterTotal(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	families, err := reg.Gather()
	require.NoError(t, err)
	var sum float64
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			sum += m.GetCounter().GetValue()
		}
	}
	return sum
}

// Soak (OB-DELIVER-6/7): several dispatchers are killed and restarted at
// random, some mid-delivery after the consumer committed, with short leases
// and a flaky consumer; afterwards SQL proves zero lost deliveries, zero
// double acknowledgements, at most one finish per start, published_at exact,
// and one consumer effect per event. Run with -soak=30s; a short version
// runs by default (skipped with -short).
func TestSoak_OBDELIVER7_RandomKillsLoseNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("soak skipped with -short")
	}
	t.Parallel()
	duration := *soakDuration
	if duration == 0 {
		duration = 3 * time.Second
	}
	b := setup(t)
	const n = 300
	b.appendRuns(t, n)
	flaky := single(func(ctx context.Context, d transport.Delivery) (transport.Result, error) {
		if rand.IntN(10) == 0 {
			return transport.Result{}, transport.Retryable("flaky", errors.New("temporarily unavailable"))
		}
		return b.consumer.Deliver(ctx, d)
	})
	m := dispatcher.NewMetrics(prometheus.NewRegistry())
	cfg := dispatcher.Config{BatchSize: 10, Concurrency: 4, LeaseDuration: 250 * time.Millisecond, RenewInterval: -1,
		BackoffBase: time.Millisecond, BackoffMax: 5 * time.Millisecond, PollInterval: 10 * time.Millisecond, DrainTimeout: time.Second}
	ctx, cancel := context.WithTimeout(t.Context(), duration)
	defer cancel()
	var wg sync.WaitGroup
	for w := 0; w < 3; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				d := newDispatcher(t, b, flaky, cfg, m)
				// A killed worker drops outcomes: some after the consumer committed.
				var dead atomic.Bool
				d.SetHooks(dispatcher.Hooks{
					BeforeDeliver: func(dispatcher.Claimed) error {
						if dead.Load() || rand.IntN(20) == 0 {
							return dispatcher.ErrSimulatedCrash
						}
						return nil
					},
					AfterDeliver: func(dispatcher.Claimed) error {
						if dead.Load() || rand.IntN(20) == 0 {
							return dispatcher.ErrSimulatedCrash
						}
						return nil
					},
				})
				// An abrupt kill: outcomes in flight when the life ends are dropped.
				life, stopLife := context.WithTimeout(ctx, time.Duration(100+rand.IntN(400))*time.Millisecond)
				stopKill := context.AfterFunc(life, func() { dead.Store(true) })
				_ = d.Run(life)
				stopKill()
				stopLife()
			}
		}()
	}
	wg.Wait()
	// Then a healthy dispatcher finishes the rest: whatever the kills left
	// behind must converge, with nothing lost.
	healthy := newDispatcher(t, b, b.consumer.Transport(), cfg, m)
	stop := run(t, healthy)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		require.Equal(c, n, b.countStatus(c, "acknowledged"))
	}, 60*time.Second, pollTick, "all acknowledged after chaos")
	require.NoError(t, stop())
	total, distinct := b.consumer.Effects(t)
	require.Equal(t, n, distinct, "no lost delivery")
	require.Equal(t, n, total, "no duplicated effect")
	var expired int
	require.NoError(t, b.producer.QueryRow(t.Context(),
		`SELECT count(*) FROM outbox.outbox_delivery_attempt_finishes WHERE outcome = 'lease_expired_unknown'`).Scan(&expired))
	t.Logf("soak %s: %d lease-expiry recoveries", duration, expired)
	b.invariants(t)
}

// A stopped dispatcher leaves no goroutine behind: listener, acker,
// renewals and deliveries all end with Run (not parallel, so no other
// test's goroutines are running).
func TestRun_OBCLAIM5_StopLeavesNoGoroutines(t *testing.T) {
	b := setup(t)
	b.appendRuns(t, 20)
	ignore := goleak.IgnoreCurrent()
	// A lease well inside the wait below: a delivery whose renewal failed
	// transiently (a loaded server) is left to lease-expiry recovery, which
	// must come back within the wait.
	d := newDispatcher(t, b, b.consumer.Transport(), dispatcher.Config{PollInterval: 10 * time.Millisecond,
		RenewInterval: 5 * time.Millisecond, LeaseDuration: 3 * time.Second}, nil)
	stop := run(t, d)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		require.Equal(c, 20, b.countStatus(c, "acknowledged"))
	}, 20*time.Second, pollTick, "all acknowledged")
	require.NoError(t, stop())
	// pgx's background reader belongs to a pooled connection, which outlives
	// the dispatcher (the pools are the test's): started by a write that was
	// slow (a loaded machine, the race detector), it can be left parked in a
	// read on that idle connection until its next use or its close.
	goleak.VerifyNone(t, ignore, goleak.IgnoreAnyFunction("github.com/jackc/pgx/v5/pgconn/internal/bgreader.(*BGReader).bgRead"))
}

// OB-DELIVER-2 / OB-STORE-5: a non-retryable failure with a long multi-byte
// message is quarantined once (the stored reason is cut on a character
// boundary), never looped through lease expiry.
func TestRun_OBSTORE5_LongMultibyteReasonStillQuarantines(t *testing.T) {
	t.Parallel()
	b := setup(t)
	id := b.appendRuns(t, 1)[0]
	msg := strings.Repeat("名字", 600)
	tr := single(func(context.Context, transport.Delivery) (transport.Result, error) {
		return transport.Result{}, transport.NonRetryable("invariant_broken", errors.New(msg))
	})
	d := newDispatcher(t, b, tr, dispatcher.Config{PollInterval: 5 * time.Millisecond}, nil)
	stop := run(t, d)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		require.Equal(c, "quarantined", b.delivery(c, id).Status)
	}, 20*time.Second, pollTick, "quarantined")
	require.NoError(t, stop())
	require.Equal(t, []string{"non_retryable"}, b.finishes(t, id))
	var reason string
	require.NoError(t, b.producer.QueryRow(t.Context(), `SELECT reason FROM outbox.outbox_quarantine WHERE event_id=$1`, id).Scan(&reason))
	require.True(t, utf8.ValidString(reason))
	require.LessOrEqual(t, len(reason), 1000)
}

// OB-DELIVER-4 / OBS-3 through the loop: an ack that fails verification is
// quarantined, never accepted, with one structured quarantine log line whose
// reason is the normalized code.
func TestRun_OBDELIVER4_RejectedAckIsQuarantinedAndLogged(t *testing.T) {
	t.Parallel()
	b := setup(t)
	id := b.appendRuns(t, 1)[0]
	b.consumer.ClaimProjectionVersion(7)
	var logs syncBuffer
	log := slog.New(slog.NewJSONHandler(&logs, nil))
	d, err := dispatcher.New(b.producer, b.consumer.Transport(), dispatcher.Config{PollInterval: 5 * time.Millisecond},
		dispatcher.NewMetrics(prometheus.NewRegistry()), log)
	require.NoError(t, err)
	stop := run(t, d)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		require.Equal(c, "quarantined", b.delivery(c, id).Status)
	}, 20*time.Second, pollTick, "quarantined")
	require.NoError(t, stop())
	require.Equal(t, "ack_projection_target_mismatch", *b.delivery(t, id).LastError)
	require.Equal(t, []string{"non_retryable"}, b.finishes(t, id))
	var line map[string]any
	for _, l := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(l), &m))
		if m["msg"] == "delivery quarantined" {
			line = m
		}
	}
	require.NotNil(t, line, "one quarantine log line")
	require.Equal(t, "core_operations", line["destination"])
	require.Equal(t, "run.created@2.0", line["event_type"])
	require.Equal(t, "ack_projection_target_mismatch", line["code"])
	require.Equal(t, id, line["event_id"])
}

// OB-CLAIM-5 drain limit: a consumer that never returns is cancelled when
// the drain timeout passes, Run reports it, and the attempt is recorded as
// retryable so nothing stays leased.
func TestRun_OBCLAIM5_DrainTimeoutCancelsAndRecords(t *testing.T) {
	t.Parallel()
	b := setup(t)
	id := b.appendRuns(t, 1)[0]
	entered := make(chan struct{})
	tr := single(func(ctx context.Context, _ transport.Delivery) (transport.Result, error) {
		close(entered)
		<-ctx.Done()
		return transport.Result{}, ctx.Err()
	})
	d := newDispatcher(t, b, tr, dispatcher.Config{PollInterval: 5 * time.Millisecond, DrainTimeout: 100 * time.Millisecond}, nil)
	stop := run(t, d)
	<-entered
	err := stop()
	require.ErrorContains(t, err, "drain timeout")
	row := b.delivery(t, id)
	require.Equal(t, "pending", row.Status)
	require.Equal(t, "canceled", *row.LastError)
	require.Equal(t, []string{"retryable"}, b.finishes(t, id))
}

// OB-CLAIM-1 destination filter: a dispatcher claims only its destinations.
func TestClaim_OBCLAIM1_DestinationFilter(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.appendRuns(t, 2)
	ctx := t.Context()
	none, err := b.store.Claim(ctx, dispatcher.ClaimParams{Owner: "m", Destinations: []route.Destination{route.MeteringInputProcessor}, Limit: 10, Lease: lease})
	require.NoError(t, err)
	require.Empty(t, none)
	both, err := b.store.Claim(ctx, dispatcher.ClaimParams{Owner: "c", Destinations: []route.Destination{route.CoreOperations}, Limit: 10, Lease: lease})
	require.NoError(t, err)
	require.Len(t, both, 2)
}

// syncBuffer is a goroutine-safe log sink.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.String()
}

// OB-DELIVER-2 (issue 18, item 5): a delivery whose destination has no
// consumer in this process, or whose pair the consumer does not support,
// waits with the configured backoff (here 30 s), not the 100 ms cap of a
// data wait, and is never quarantined by MaxAttempts; the wait is a metric.
// A revision-gap style wait keeps the short cap.
func TestRun_OBDELIVER2_UnsupportedWaitsBackOffToMax(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ids := b.appendRuns(t, 3)
	tr := single(func(ctx context.Context, d transport.Delivery) (transport.Result, error) {
		switch d.EventID {
		case ids[0]:
			return transport.Result{}, transport.Unsupported("projector_pair_unsupported", errors.New("pair not projected"))
		case ids[1]:
			return transport.Result{}, transport.Wait("revision_gap_wait", errors.New("gap"))
		}
		return transport.Result{}, transport.Unsupported(transport.CodeNoConsumer, errors.New("no consumer"))
	})
	reg := prometheus.NewRegistry()
	d := newDispatcher(t, b, tr, dispatcher.Config{MaxAttempts: 1, BackoffBase: 30 * time.Second, BackoffMax: time.Minute,
		BackoffJitter: 0.01, WaitBackoffMax: 100 * time.Millisecond, PollInterval: 5 * time.Millisecond}, dispatcher.NewMetrics(reg))
	stop := run(t, d)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		require.Equal(c, []string{"retryable"}, b.finishes(t, ids[0]))
		require.Equal(c, []string{"retryable"}, b.finishes(t, ids[2]))
		require.GreaterOrEqual(c, len(b.finishes(t, ids[1])), 2, "the data wait retries at its short cap")
	}, 20*time.Second, pollTick)
	require.NoError(t, stop())
	for _, id := range []string{ids[0], ids[2]} {
		var wait float64
		require.NoError(t, b.producer.QueryRow(t.Context(), `SELECT EXTRACT(EPOCH FROM available_at - now())
			FROM outbox.outbox_deliveries WHERE event_id = $1 AND status = 'pending'`, id).Scan(&wait))
		require.Greater(t, wait, 20.0, "an unsupported wait backs off like a retry")
	}
	require.Equal(t, float64(2), counterTotal(t, reg, "oceanway_outbox_unsupported_waits_total"))
	require.Zero(t, b.countStatus(t, "quarantined"), "waits are never quarantined by MaxAttempts")
	b.invariants(t)
}

// OB-CLAIM-1 (issue 17: batches that are batches): a dispatcher claims a
// full batch into its local queue even when only a few consumer slots are
// free, runs at most Concurrency deliveries at once, and claims again only
// when the queue has drained; every queued delivery is then delivered and
// acknowledged exactly once.
func TestRun_OBCLAIM1_ClaimsFullBatchesIntoLocalQueue(t *testing.T) {
	t.Parallel()
	b := setup(t)
	const n, batch, slots = 30, 10, 2
	b.appendRuns(t, n)
	release := make(chan struct{})
	var inFlight, peak atomic.Int32
	tr := single(func(ctx context.Context, d transport.Delivery) (transport.Result, error) {
		now := inFlight.Add(1)
		defer inFlight.Add(-1)
		for {
			p := peak.Load()
			if now <= p || peak.CompareAndSwap(p, now) {
				break
			}
		}
		<-release
		return b.consumer.Deliver(ctx, d)
	})
	d := newDispatcher(t, b, tr, dispatcher.Config{BatchSize: batch, Concurrency: slots, PollInterval: 10 * time.Millisecond}, nil)
	stop := run(t, d)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		require.Equal(c, int32(slots), inFlight.Load())
	}, 20*time.Second, pollTick, "both slots busy")
	require.Equal(t, batch, b.countStatus(t, "leased"), "one full batch claimed although only %d slots exist", slots)
	close(release)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		require.Equal(c, n, b.countStatus(c, "acknowledged"))
	}, 60*time.Second, pollTick, "all acknowledged")
	require.NoError(t, stop())
	require.LessOrEqual(t, peak.Load(), int32(slots), "never more deliveries in flight than slots")
	total, distinct := b.consumer.Effects(t)
	require.Equal(t, n, total)
	require.Equal(t, n, distinct)
	b.invariants(t)
}

// OB-CLAIM-2 (issue 17): a queued delivery that waited longer than
// RenewInterval behind a slow one has its lease renewed under its fence
// before it starts, so it is delivered and acknowledged on its first
// attempt instead of expiring in the queue.
func TestRun_OBCLAIM2_QueuedLeaseRenewedBeforeStart(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ids := b.appendRuns(t, 2)
	var first atomic.Bool
	tr := single(func(ctx context.Context, d transport.Delivery) (transport.Result, error) {
		if first.CompareAndSwap(false, true) {
			// Hold the only slot until the queued claim's original lease is
			// over in database time (this delivery's own lease is renewed).
			other := ids[0]
			if d.EventID == ids[0] {
				other = ids[1]
			}
			b.waitOriginalLeaseOver(t, other)
		}
		return b.consumer.Deliver(ctx, d)
	})
	m := dispatcher.NewMetrics(prometheus.NewRegistry())
	d := newDispatcher(t, b, tr, dispatcher.Config{
		BatchSize: 2, Concurrency: 1, LeaseDuration: 600 * time.Millisecond, RenewInterval: 150 * time.Millisecond,
		PollInterval: 10 * time.Millisecond,
	}, m)
	stop := run(t, d)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		require.Equal(c, 2, b.countStatus(c, "acknowledged"))
	}, 30*time.Second, pollTick, "both acknowledged")
	require.NoError(t, stop())
	b.acknowledgedOnFirstAttempt(t, ids...)
	b.invariants(t)
}

// OB-CLAIM-2 (issue 17): a queued delivery whose renewals fail for a reason
// other than its fence (here an injected error standing in for a statement
// timeout, for the renewer's and the slot's own renewal) still holds a valid
// lease and is delivered on its first attempt, instead of waiting a whole
// lease (30 s here) for lease-expiry recovery.
func TestRun_OBCLAIM2_TransientRenewalErrorStillDelivers(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ids := b.appendRuns(t, 2)
	// Holding the only slot past RenewInterval makes the queued delivery due
	// for renewal before it starts.
	d := newDispatcher(t, b, b.holdingFirstCall(400*time.Millisecond, nil), dispatcher.Config{
		BatchSize: 2, Concurrency: 1, LeaseDuration: 30 * time.Second, RenewInterval: 100 * time.Millisecond,
		PollInterval: 10 * time.Millisecond,
	}, nil)
	refused := refuseRenewals(d)
	stop := run(t, d)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		require.Equal(c, 2, b.countStatus(c, "acknowledged"))
	}, 15*time.Second, pollTick, "both acknowledged well within the 30 s lease")
	require.NoError(t, stop())
	require.Positive(t, refused.Load(), "the queued delivery's renewal failed")
	b.acknowledgedOnFirstAttempt(t, ids...)
	b.invariants(t)
}

// OB-CLAIM-2 (issue 17): a queued delivery whose renewals fail for a reason
// other than its fence is not started once its lease, as last set, would
// end before the call's first renewal has room to land (here 3 s lease, 1 s
// renewal, so 1.5 s must be left, and the delivery waited 2.3 s): it stays
// leased until lease-expiry recovery and is delivered once, on its second
// attempt.
func TestRun_OBCLAIM2_QueuedLeaseTooShortAfterFailedRenewalIsNotStarted(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ids := b.appendRuns(t, 2)
	var mu sync.Mutex
	calls := map[string]int{}
	tr := b.holdingFirstCall(2300*time.Millisecond, func(d transport.Delivery) {
		mu.Lock()
		defer mu.Unlock()
		calls[d.EventID]++
	})
	d := newDispatcher(t, b, tr, dispatcher.Config{
		BatchSize: 2, Concurrency: 1, LeaseDuration: 3 * time.Second, RenewInterval: time.Second,
		PollInterval: 10 * time.Millisecond, RecoverInterval: 100 * time.Millisecond,
	}, nil)
	refused := refuseRenewals(d)
	stop := run(t, d)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		require.Equal(c, 2, b.countStatus(c, "acknowledged"))
	}, 20*time.Second, pollTick, "both acknowledged, the queued one after recovery")
	require.NoError(t, stop())
	require.Positive(t, refused.Load())
	var queuedID string
	for _, id := range ids {
		if b.delivery(t, id).AttemptCount == 2 {
			queuedID = id
		}
	}
	require.NotEmpty(t, queuedID, "the queued delivery was recovered and claimed again")
	require.Equal(t, []string{"lease_expired_unknown", "acknowledged"}, b.finishes(t, queuedID))
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, 1, calls[queuedID], "the consumer was not called under the first, ending lease")
	b.invariants(t)
}

// OB-CLAIM-2, OB-DELIVER-5: an ack whose recording fails transiently (here:
// its row is locked past the session's lock_timeout) is recorded again
// while the lease is still ours, also when the call outlasted the lease it
// was claimed with and renewed it: the delivery is acknowledged on its first
// attempt instead of waiting for lease-expiry recovery and a redelivery.
func TestRun_OBCLAIM2_AckRetriedUnderRenewedLease(t *testing.T) {
	t.Parallel()
	b := setup(t)
	id := b.appendRuns(t, 1)[0]
	ctx := t.Context()
	locker, err := b.producer.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = locker.Rollback(context.WithoutCancel(ctx)) }()
	released := make(chan struct{})
	tr := single(func(ctx context.Context, d transport.Delivery) (transport.Result, error) {
		// Outlast the 4 s lease the claim set (renewed at 1, 2, 3 and 4 s),
		// return half-way between two renewals, and hold the row so that
		// the first ack fails.
		select {
		case <-ctx.Done():
			return transport.Result{}, ctx.Err()
		case <-time.After(4500 * time.Millisecond):
		}
		if _, err := locker.Exec(ctx, `SELECT 1 FROM outbox.outbox_deliveries WHERE event_id = $1 FOR UPDATE`, d.EventID); err != nil {
			return transport.Result{}, err
		}
		go func() {
			defer close(released)
			b.waitAckLockWaitEnded(t)
			_ = locker.Rollback(context.WithoutCancel(ctx))
		}()
		return b.consumer.Deliver(ctx, d)
	})
	pool := dbtest.RolePoolWithParams(t, b.producerDSN, outboxschema.RoleDispatcher, map[string]string{"lock_timeout": "300ms"})
	d, err := dispatcher.New(pool, tr, dispatcher.Config{
		BatchSize: 1, Concurrency: 1, AckBatchSize: 1, LeaseDuration: 4 * time.Second, RenewInterval: time.Second,
		PollInterval: 10 * time.Millisecond,
	}, nil, quietLog())
	require.NoError(t, err)
	stop := run(t, d)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		require.Equal(c, 1, b.countStatus(c, "acknowledged"))
	}, 15*time.Second, pollTick, "acknowledged")
	require.NoError(t, stop())
	<-released
	b.acknowledgedOnFirstAttempt(t, id)
	b.invariants(t)
}

// waitAckLockWaitEnded waits until an ack statement has waited on a row
// lock and then stopped waiting (its lock_timeout fired). It runs off the
// test goroutine, so it reports through assert, never FailNow.
func (b *bundle) waitAckLockWaitEnded(t *testing.T) {
	waiting := func() bool {
		var n int
		_ = b.producer.QueryRow(context.Background(), `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%ack_and_publish_batch%'`).Scan(&n)
		return n > 0
	}
	assert.Eventually(t, waiting, 10*time.Second, 5*time.Millisecond, "the first ack waits on the row lock")
	assert.Eventually(t, func() bool { return !waiting() }, 10*time.Second, 5*time.Millisecond, "its lock_timeout ends the wait")
}

// OB-DELIVER-2, OB-STORE-5: an ack the database refuses because the
// deployment is wrong (here the dispatcher role lost EXECUTE on the ack
// function: insufficient_privilege) is not turned into a terminal
// quarantine of a delivery the consumer applied. The attempt goes back
// through lease-expiry recovery and, once the grant is back, the delivery
// is acknowledged.
func TestRun_OBDELIVER2_PrivilegeErrorOnAckIsNotQuarantined(t *testing.T) {
	t.Parallel()
	b := setup(t)
	id := b.appendRuns(t, 1)[0]
	ctx := t.Context()
	const fn = `outbox.ack_and_publish_batch(text[], uuid[], uuid[], uuid[], text[], text[], text[], text[], text[],
		text[], text[], text[], text[], uuid[], text[])`
	_, err := b.producer.Exec(ctx, `REVOKE EXECUTE ON FUNCTION `+fn+` FROM `+outboxschema.RoleDispatcher)
	require.NoError(t, err)
	pool := dbtest.RolePool(t, b.producerDSN, outboxschema.RoleDispatcher)
	d, err := dispatcher.New(pool, b.consumer.Transport(), dispatcher.Config{
		BatchSize: 1, Concurrency: 1, LeaseDuration: time.Second, PollInterval: 20 * time.Millisecond,
		RecoverInterval: 100 * time.Millisecond,
	}, nil, quietLog())
	require.NoError(t, err)
	stop := run(t, d)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		var finishes int
		require.NoError(c, b.producer.QueryRow(ctx, `SELECT count(*) FROM outbox.outbox_delivery_attempt_finishes f
			JOIN outbox.outbox_delivery_attempt_starts s USING (attempt_id) WHERE s.event_id = $1`, id).Scan(&finishes))
		require.GreaterOrEqual(c, finishes, 1, "the refused attempt went back through recovery")
	}, 15*time.Second, pollTick)
	require.Zero(t, b.countStatus(t, "quarantined"), "a deployment error is not the delivery's fault")
	_, err = b.producer.Exec(ctx, `GRANT EXECUTE ON FUNCTION `+fn+` TO `+outboxschema.RoleDispatcher)
	require.NoError(t, err)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		require.Equal(c, 1, b.countStatus(c, "acknowledged"))
	}, 15*time.Second, pollTick, "acknowledged once the grant is back")
	require.NoError(t, stop())
	finishes := b.finishes(t, id)
	require.Equal(t, "acknowledged", finishes[len(finishes)-1])
	require.NotContains(t, finishes[:len(finishes)-1], "acknowledged")
	b.invariants(t)
}

// waitOriginalLeaseOver waits until the delivery's first attempt started
// more than its lease ago in database time.
func (b *bundle) waitOriginalLeaseOver(t *testing.T, eventID string) {
	t.Helper()
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		var over bool
		require.NoError(c, b.producer.QueryRow(t.Context(), `
			SELECT clock_timestamp() > min(s.started_at) + interval '700 milliseconds'
			FROM outbox.outbox_delivery_attempt_starts s WHERE s.event_id = $1`, eventID).Scan(&over))
		require.True(c, over)
	}, 10*time.Second, pollTick, "original lease over")
}

// OB-CLAIM-5: a stop that lands while a claim is being made (here: right as
// the claim statement starts) does not strand the claimed rows leased and
// undelivered until their leases expire: the claim completes and the drain
// delivers what it took.
func TestRun_OBCLAIM5_StopDuringClaimDrainsWhatItClaimed(t *testing.T) {
	t.Parallel()
	b := setup(t)
	const n = 5
	b.appendRuns(t, n)
	d := newDispatcher(t, b, b.consumer.Transport(), dispatcher.Config{
		BatchSize: 10, Concurrency: 2, PollInterval: time.Hour, DisableListen: true,
	}, nil)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var once sync.Once
	d.SetHooks(dispatcher.Hooks{BeforeClaim: func() { once.Do(cancel) }})
	require.NoError(t, d.Run(ctx))
	require.Equal(t, n, b.countStatus(t, "acknowledged"), "every delivery the claim took was delivered in the drain")
	require.Zero(t, b.countStatus(t, "leased"))
	b.invariants(t)
}

// OB-CLAIM-5 (issue 17): a consumer slot starts its next delivery while the
// previous delivery's ack is still being recorded (here: blocked on a row
// lock), instead of idling for the acker's commit; the blocked ack is still
// recorded under its fence, and a stop waits for it.
func TestRun_OBCLAIM5_SlotMovesOnWhileAckIsRecorded(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.appendRuns(t, 2)
	ctx := t.Context()
	locker, err := b.producer.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = locker.Rollback(context.WithoutCancel(ctx)) }()
	var calls atomic.Int32
	first := make(chan string, 1)
	second := make(chan struct{})
	tr := single(func(ctx context.Context, d transport.Delivery) (transport.Result, error) {
		switch calls.Add(1) {
		case 1:
			// Hold the delivery row so that its fenced ack waits.
			if _, err := locker.Exec(ctx, `SELECT 1 FROM outbox.outbox_deliveries WHERE event_id = $1 FOR UPDATE`, d.EventID); err != nil {
				return transport.Result{}, err
			}
			first <- d.EventID
		case 2:
			close(second)
		}
		return b.consumer.Deliver(ctx, d)
	})
	d := newDispatcher(t, b, tr, dispatcher.Config{BatchSize: 2, Concurrency: 1, PollInterval: 10 * time.Millisecond, DrainTimeout: time.Minute}, nil)
	stop := run(t, d)
	held := <-first
	select {
	case <-second:
	case <-time.After(30 * time.Second):
		t.Fatal("the only slot waited for the blocked ack instead of starting the next delivery")
	}
	require.Equal(t, "leased", b.delivery(t, held).Status, "the first ack is still blocked")
	stopped := make(chan error, 1)
	go func() { stopped <- stop() }()
	require.NoError(t, locker.Rollback(ctx))
	require.NoError(t, <-stopped)
	require.Equal(t, "acknowledged", b.delivery(t, held).Status)
	require.Equal(t, 2, b.countStatus(t, "acknowledged"))
	b.invariants(t)
}

// OB-CLAIM-5 (issue 17): after a claim that came back short, the next claim
// waits for ClaimCooldown, so a trickle of single-event appends (each with
// its own NOTIFY) is not claimed one statement per event.
func TestRun_OBCLAIM5_ShortClaimCoolsDown(t *testing.T) {
	t.Parallel()
	b := setup(t)
	const cooldown = 400 * time.Millisecond
	var (
		mu     sync.Mutex
		claims []time.Time
	)
	d := newDispatcher(t, b, b.consumer.Transport(), dispatcher.Config{PollInterval: 10 * time.Millisecond, ClaimCooldown: cooldown}, nil)
	// The loop's own clock: a claim's database now() can lag its start by a
	// scheduling delay on a loaded machine, the loop's start cannot.
	d.SetHooks(dispatcher.Hooks{BeforeClaim: func() {
		mu.Lock()
		defer mu.Unlock()
		claims = append(claims, time.Now())
	}})
	stop := run(t, d)
	for range 3 {
		id := b.appendRuns(t, 1)[0]
		require.EventuallyWithT(t, func(c *assert.CollectT) {
			require.Equal(c, "acknowledged", b.delivery(c, id).Status)
		}, 30*time.Second, pollTick, "acknowledged")
	}
	require.NoError(t, stop())
	mu.Lock()
	defer mu.Unlock()
	// Three appends, each woken by its NOTIFY and by its freed slot, and
	// every claim of a trickle is short: each waited for the cooldown.
	require.GreaterOrEqual(t, len(claims), 3, "three appends, at least three claims")
	for i := 1; i < len(claims); i++ {
		require.GreaterOrEqual(t, claims[i].Sub(claims[i-1]), cooldown, "claim %d came %s after the previous short claim", i, claims[i].Sub(claims[i-1]))
	}
	var starts int
	require.NoError(t, b.producer.QueryRow(t.Context(), `SELECT count(*) FROM outbox.outbox_delivery_attempt_starts`).Scan(&starts))
	require.Equal(t, 3, starts, "one attempt per append")
	b.invariants(t)
}
