package metering_test

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	contract "github.com/oceanway/core/contracts/execution"
	"github.com/oceanway/core/internal/outbox/transport"
	"github.com/oceanway/core/internal/ownerread/gatewayread"
)

// Issue 35 (the input processor's batches, OB-DELIVER-6): two batches that
// hold events of the same two attempts in opposite delivery orders do not
// deadlock on the attempts' input fences. The second event of each batch
// waits in its owner read until both batches got there, each holding the
// fence of its first event's attempt: applied in delivery order, each then
// waits for the fence the other holds (PostgreSQL fails one batch with
// deadlock_detected); applied in attempt order (inbox.BatchOrder), the
// second batch's first event is already the first attempt's.
func TestIssue35BatchesLockInputFencesInAttemptOrder(t *testing.T) {
	t.Parallel()
	b := setup(t)
	first, second := newAttempt(1), newAttempt(2)
	if second.attemptID < first.attemptID {
		first, second = second, first
	}
	const gated = "y"
	batch1 := []transport.Delivery{
		delivery(first.availability(b.owners, contract.EvidenceProviderUsage, "x", 1, contract.AvailabilityAvailable, "")),
		delivery(second.availability(b.owners, contract.EvidenceProviderUsage, gated, 1, contract.AvailabilityAvailable, "")),
	}
	batch2 := []transport.Delivery{
		delivery(second.availability(b.owners, contract.EvidenceProviderUsage, "x", 1, contract.AvailabilityAvailable, "")),
		delivery(first.availability(b.owners, contract.EvidenceProviderUsage, gated, 1, contract.AvailabilityAvailable, "")),
	}
	// A barrier of two on the gated dimension's reads.
	var mu sync.Mutex
	arrived, release := 0, make(chan struct{})
	hook := func(req gatewayread.AvailabilitySnapshotRead) {
		if req.DimensionKey != gated {
			return
		}
		mu.Lock()
		arrived++
		if arrived == 2 {
			close(release)
		}
		mu.Unlock()
		<-release
	}
	b.owners.beforeAvailability.Store(&hook)

	answers := make([][]transport.Answer, 2)
	var wg sync.WaitGroup
	for i, batch := range [][]transport.Delivery{batch1, batch2} {
		wg.Go(func() { answers[i] = b.c.ConsumeBatch(t.Context(), batch) })
	}
	wg.Wait()
	for i, as := range answers {
		require.Len(t, as, 2)
		for j, a := range as {
			require.NoError(t, a.Err, "batch %d delivery %d", i+1, j+1)
			require.NotNil(t, a.Result.Ack, "batch %d delivery %d acknowledged", i+1, j+1)
		}
	}
	var fences int
	require.NoError(t, b.pool.QueryRow(t.Context(), `SELECT count(*) FROM metering.input_fences`).Scan(&fences))
	require.Equal(t, 2, fences)
}
