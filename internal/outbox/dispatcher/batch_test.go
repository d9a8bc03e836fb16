package dispatcher_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/contracts/route"
	"github.com/oceanway/core/internal/outbox/dispatcher"
	"github.com/oceanway/core/internal/outbox/transport"
)

// OB-CLAIM-2, OB-DELIVER-2, OB-DELIVER-5 (issue 17): a consumer that takes
// batches gets a claim's deliveries in chunks of its batch limit, one call
// per chunk, and every answer of a chunk is verified and recorded under its
// own fence: inside one call, a delivery whose lease ran out is refused
// (recovery returns it and it is delivered again), a delivery the consumer
// answers with a retryable error is retried, and the others are
// acknowledged on their first attempt.
func TestRun_OBCLAIM2_BatchedConsumerCallKeepsEachFence(t *testing.T) {
	t.Parallel()
	b := setup(t)
	const n, limit = 10, 4
	b.appendRuns(t, n)
	var (
		mu      sync.Mutex
		sizes   []int
		expired string // the delivery whose lease ran out inside the first call
		failed  string // the delivery the first call answers with an error
	)
	batchFn := func(ctx context.Context, ds []transport.Delivery) []transport.Answer {
		mu.Lock()
		sizes = append(sizes, len(ds))
		first := len(sizes) == 1
		if first {
			expired, failed = ds[0].EventID, ds[1].EventID
		}
		mu.Unlock()
		out := make([]transport.Answer, len(ds))
		for i, d := range ds {
			if first && d.EventID == failed {
				out[i].Err = transport.Retryable("test_retry", errors.New("consumer asks for a retry"))
				continue
			}
			out[i].Result, out[i].Err = b.consumer.Deliver(ctx, d)
		}
		if first {
			b.expireLease(t, expired)
		}
		return out
	}
	tr := transport.NewInProcess(map[route.Destination]transport.ConsumerFunc{route.CoreOperations: b.consumer.Deliver}).
		WithBatch(route.CoreOperations, limit, batchFn)
	m := dispatcher.NewMetrics(prometheus.NewRegistry())
	d := newDispatcher(t, b, tr, dispatcher.Config{
		// A short lease: the expired lease lies below the recovery floor and
		// is found by the full scan, which runs once per lease.
		BatchSize: n, Concurrency: 1, PollInterval: 10 * time.Millisecond, LeaseDuration: 3 * time.Second,
		BackoffBase: 10 * time.Millisecond, BackoffMax: 20 * time.Millisecond,
	}, m)
	stop := run(t, d)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		require.Equal(c, n, b.countStatus(c, "acknowledged"))
	}, 60*time.Second, pollTick, "all acknowledged")
	require.NoError(t, stop())

	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, []int{limit, limit, n - 2*limit}, sizes[:3], "one claim of %d in chunks of the consumer's limit", n)
	require.Equal(t, []string{"lease_expired_unknown", "acknowledged"}, b.finishes(t, expired),
		"the ack of a delivery whose lease ran out inside the call is refused by its fence")
	require.Equal(t, []string{"retryable", "acknowledged"}, b.finishes(t, failed))
	var once int
	require.NoError(t, b.producer.QueryRow(t.Context(), `SELECT count(*) FROM outbox.outbox_deliveries WHERE attempt_count = 1`).Scan(&once))
	require.Equal(t, n-2, once, "every other delivery acknowledged on its first attempt")
	total, distinct := b.consumer.Effects(t)
	require.Equal(t, n, distinct)
	require.Equal(t, n, total, "one effect per event: the redelivered one replays its stored receipt")
	calls, handed := m.ConsumerCalls()
	batched := 0
	for _, s := range sizes {
		batched += s
	}
	require.Equal(t, float64(n+2), handed, "every attempt handed to the consumer once: %d first attempts and 2 redeliveries", n)
	require.Equal(t, uint64(len(sizes)+(n+2-batched)), calls, "one call per chunk, one per single delivery")
	b.invariants(t)
}

// OB-CLAIM-1 (issue 17: batches that are batches): the next claim is made
// while no more than Concurrency consumer calls are outstanding, counted in
// calls, not in deliveries. A claim of 8 cut into chunks of 4 is two calls;
// with 4 slots the dispatcher claims again while those two calls are still
// running and fills every slot. Counting deliveries (8 > 4) held the next
// claim back until the running calls finished, so a batching consumer only
// ever had two calls at once here.
func TestRun_OBCLAIM1_ChunksOfABatchingConsumerFillEverySlot(t *testing.T) {
	t.Parallel()
	b := setup(t)
	const slots, limit, batch, n = 4, 4, 8, 40
	b.appendRuns(t, n)
	var running, most int
	var mu sync.Mutex
	release := make(chan struct{})
	batchFn := func(ctx context.Context, ds []transport.Delivery) []transport.Answer {
		mu.Lock()
		running++
		most = max(most, running)
		mu.Unlock()
		<-release
		mu.Lock()
		running--
		mu.Unlock()
		out := make([]transport.Answer, len(ds))
		for i, d := range ds {
			out[i].Result, out[i].Err = b.consumer.Deliver(ctx, d)
		}
		return out
	}
	tr := transport.NewInProcess(map[route.Destination]transport.ConsumerFunc{route.CoreOperations: b.consumer.Deliver}).
		WithBatch(route.CoreOperations, limit, batchFn)
	d := newDispatcher(t, b, tr, dispatcher.Config{
		BatchSize: batch, Concurrency: slots, PollInterval: 10 * time.Millisecond,
	}, dispatcher.NewMetrics(prometheus.NewRegistry()))
	stop := run(t, d)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		mu.Lock()
		defer mu.Unlock()
		require.Equal(c, slots, running, "every slot holds a call while the first calls are still running")
	}, 30*time.Second, pollTick)
	close(release)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		require.Equal(c, n, b.countStatus(c, "acknowledged"))
	}, 60*time.Second, pollTick, "all acknowledged")
	require.NoError(t, stop())
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, slots, most, "never more calls than slots")
	b.invariants(t)
}
