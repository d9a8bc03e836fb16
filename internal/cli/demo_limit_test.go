package cli

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/internal/outbox/transport"
)

// The demo bounds the Metering input processor's calls, one delivery or
// one batch each, by one limit (issue 35: its batches are wired): never
// more than n at once, and a caller that gives up waiting gets a
// retryable answer for each delivery.
func TestLimitConcurrencyBoundsDeliveriesAndBatchesTogether(t *testing.T) {
	var inside, most atomic.Int64
	release := make(chan struct{})
	enter := func() {
		now := inside.Add(1)
		for m := most.Load(); now > m && !most.CompareAndSwap(m, now); m = most.Load() {
		}
		<-release
		inside.Add(-1)
	}
	one, batch := limitConcurrency(
		func(context.Context, transport.Delivery) (transport.Result, error) {
			enter()
			return transport.Result{}, nil
		},
		func(_ context.Context, ds []transport.Delivery) []transport.Answer {
			enter()
			return make([]transport.Answer, len(ds))
		},
		2)
	require.NotNil(t, batch)

	var wg sync.WaitGroup
	for i := range 6 {
		wg.Go(func() {
			if i%2 == 0 {
				_, err := one(context.Background(), transport.Delivery{})
				assert.NoError(t, err)
				return
			}
			assert.Len(t, batch(context.Background(), make([]transport.Delivery, 3)), 3)
		})
	}
	require.Eventually(t, func() bool { return inside.Load() == 2 }, 10*time.Second, 5*time.Millisecond)
	close(release)
	wg.Wait()
	require.EqualValues(t, 2, most.Load(), "at most two calls at once, deliveries and batches alike")

	// Both slots taken: a caller whose context ends gets retryable answers.
	held, started := make(chan struct{}), make(chan struct{})
	hold, holdBatch := limitConcurrency(
		func(context.Context, transport.Delivery) (transport.Result, error) {
			close(started)
			<-held
			return transport.Result{}, nil
		},
		func(_ context.Context, ds []transport.Delivery) []transport.Answer {
			<-held
			return make([]transport.Answer, len(ds))
		}, 1)
	go func() { _, _ = hold(context.Background(), transport.Delivery{}) }()
	<-started
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	answers := holdBatch(ctx, make([]transport.Delivery, 2))
	require.Len(t, answers, 2)
	for _, a := range answers {
		retryable, _ := transport.RetryableAndCode(a.Err)
		require.True(t, retryable, "%v", a.Err)
	}
	close(held)

	single, none := limitConcurrency(func(context.Context, transport.Delivery) (transport.Result, error) { return transport.Result{}, nil }, nil, 2)
	require.NotNil(t, single)
	require.Nil(t, none, "no batch entry point stays none")
}
