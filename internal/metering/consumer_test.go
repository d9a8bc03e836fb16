package metering_test

import (
	"context"
	"sync"
	"testing"

	"github.com/jackc/pgerrcode"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/contracts/envelope"
	contract "github.com/oceanway/core/contracts/execution"
	"github.com/oceanway/core/contracts/receipt"
	"github.com/oceanway/core/internal/db"
	"github.com/oceanway/core/internal/inbox"
	"github.com/oceanway/core/internal/inbox/inboxtest"
	"github.com/oceanway/core/internal/metering"
)

const (
	usage = receipt.EvidenceProviderUsage
	cost  = receipt.EvidenceProviderCost
)

// stateSQL fingerprints what the consumer durably decided, independent of
// the order that reached it: which events have receipts, each attempt's
// eligibility fact, the usage watermarks and cost lanes, the lane trigger
// digests and whether the latest Work generation carries the lane's current
// trigger (work generation numbers and fence revisions count how the state
// was reached and are left out).
const stateSQL = `
SELECT concat_ws(E'\n',
 (SELECT string_agg(event_id::text, ',' ORDER BY event_id) FROM metering.input_receipts),
 (SELECT string_agg(concat_ws('|', f.execution_attempt_id, f.eligibility_fact_ref, f.eligibility_fact_digest, f.dispatch_disposition,
     f.eligibility_trigger_digest,
     (SELECT w.trigger_digest = f.eligibility_trigger_digest FROM metering.input_works w
       WHERE w.execution_attempt_id = f.execution_attempt_id AND w.lane_kind = 'eligibility_and_settlement_input'
         AND w.work_generation = f.latest_eligibility_work_generation)), ';' ORDER BY f.execution_attempt_id)
   FROM metering.input_fences f),
 (SELECT string_agg(concat_ws('|', execution_attempt_id, gateway_deployment_id, evidence_dimension_key, state_version,
     current_availability_ref, current_availability_digest, availability_state), ';'
     ORDER BY execution_attempt_id, gateway_deployment_id, evidence_dimension_key) FROM metering.usage_watermarks),
 (SELECT string_agg(concat_ws('|', c.execution_attempt_id, c.gateway_deployment_id, c.source_evidence_dimension_key, c.state_version,
     c.current_availability_ref, c.availability_state, c.trigger_digest,
     (SELECT w.trigger_digest = c.trigger_digest FROM metering.input_works w
       WHERE w.execution_attempt_id = c.execution_attempt_id AND w.lane_kind = 'provider_cost'
         AND w.gateway_deployment_id = c.gateway_deployment_id AND w.source_evidence_dimension_key = c.source_evidence_dimension_key
         AND w.work_generation = c.latest_work_generation)), ';'
     ORDER BY c.execution_attempt_id, c.gateway_deployment_id, c.source_evidence_dimension_key) FROM metering.cost_lanes c))`

func state(ctx context.Context, pool *pgxpool.Pool) (string, error) {
	var s string
	err := pool.QueryRow(ctx, stateSQL).Scan(&s)
	return s, err
}

func chains(o *fakeOwners) [][]*envelope.Envelope {
	a, b := newAttempt(1), newAttempt(2)
	return [][]*envelope.Envelope{
		{
			a.eligibility(o, contract.DispositionDispatched),
			a.availability(o, usage, "tokens.output", 1, contract.AvailabilityPending, ""),
			a.availability(o, usage, "tokens.output", 2, contract.AvailabilityAvailable, ""),
			a.availability(o, cost, "cost.usd", 1, contract.AvailabilityPending, ""),
			a.availability(o, cost, "cost.usd", 2, contract.AvailabilityAvailable, ""),
		},
		{b.eligibility(o, contract.DispositionNotDispatched)},
	}
}

// TestConformance runs the shared consumer conformance suite against the
// Metering input processor (CON-1..CON-3, OB-DELIVER-6, reordering).
func TestConformance(t *testing.T) {
	t.Parallel()
	inboxtest.Run(t, conformanceSubject)
}

// TestConformanceBatch runs the conformance suite through the batch entry point and the
// batch cases (CON-1, CON-2, OB-DELIVER-6): ConsumeBatch answers as
// Consume does (serve and the demo wire it for the Metering input processor).
func TestConformanceBatch(t *testing.T) {
	t.Parallel()
	inboxtest.RunBatch(t, conformanceSubject)
}

// conformanceSubject builds a conformance Subject over a fresh database.
func conformanceSubject(t *testing.T) inboxtest.Subject {
	b := setup(t)
	return inboxtest.Subject{
		Consume:      b.c.Consume,
		ConsumeBatch: b.c.ConsumeBatch,
		Member:       member,
		Chains:       chains(b.owners),
		State:        func(ctx context.Context) (string, error) { return state(ctx, b.pool) },
		Block: func(t *testing.T) func() {
			b.owners.blocked.Store(true)
			return func() { b.owners.blocked.Store(false) }
		},
	}
}

// TestMET1OnlyTwoPairsDecoded: a pair other than the two is non_retryable
// and writes nothing, even with a member naming this consumer.
func TestMET1OnlyTwoPairsDecoded(t *testing.T) {
	t.Parallel()
	b := setup(t)
	a := newAttempt(1)
	e := a.eligibility(b.owners, contract.DispositionDispatched)
	// execution.run-finalization.closed@1 is routed to billing, not here.
	other := *e
	other.EventType = envelope.ExecutionRunFinalizationClosedV1
	d := delivery(e)
	d.EventType, d.Member.EventType = other.EventType, other.EventType
	_, err := b.c.Consume(t.Context(), d)
	require.Error(t, err)
	r, _ := retryableAndCode(err)
	require.False(t, r, "error: %v", err)
	requireNothing(t, b)
}

func requireNothing(t *testing.T, b *bundle) {
	t.Helper()
	var n int
	require.NoError(t, b.pool.QueryRow(t.Context(), `SELECT (SELECT count(*) FROM metering.input_receipts) + (SELECT count(*) FROM metering.input_fences)
		+ (SELECT count(*) FROM metering.input_works)`).Scan(&n))
	require.Zero(t, n, "nothing may be written")
}

// TestMET2OwnerReads: the owner quadruple is verified before anything is
// written — unavailable and not_found are retryable, conflicting is
// non_retryable, each with nothing written.
func TestMET2OwnerReads(t *testing.T) {
	t.Parallel()
	b := setup(t)
	a := newAttempt(1)
	e := a.eligibility(b.owners, contract.DispositionDispatched)

	b.owners.blocked.Store(true)
	_, err := b.deliver(t, e)
	requireCode(t, err, true, metering.CodeOwnerReadUnavailable)
	requireNothing(t, b)
	b.owners.blocked.Store(false)

	unregistered := newAttempt(9).eligibility(nil, contract.DispositionDispatched)
	_, err = b.deliver(t, unregistered)
	requireCode(t, err, true, metering.CodeOwnerFactNotFound)
	requireNothing(t, b)

	b.owners.conflict.Store(true)
	_, err = b.deliver(t, e)
	requireCode(t, err, false, metering.CodeOwnerConflict)
	requireNothing(t, b)
	b.owners.conflict.Store(false)

	b.ack(t, e)
}

// TestMET3EitherOrderWaits: eligibility and usage wait for each other in
// either order; the second schedules Work generation 1; not_dispatched
// never waits for the gateway; cost has no counterpart wait.
func TestMET3EitherOrderWaits(t *testing.T) {
	t.Parallel()
	b := setup(t)

	a := newAttempt(1)
	r := b.ack(t, a.eligibility(b.owners, contract.DispositionDispatched))
	require.Equal(t, receipt.StateWaitingForGatewayUsage, r.Lane.Eligibility.Coordination.State)
	require.Zero(t, r.Lane.Eligibility.LatestWorkGeneration)
	r = b.ack(t, a.availability(b.owners, usage, "tokens.output", 1, contract.AvailabilityAvailable, ""))
	require.Equal(t, receipt.StatePending, r.Lane.Eligibility.Coordination.State)
	require.Equal(t, int64(1), r.Lane.Eligibility.Coordination.ActiveWork.Generation)

	c := newAttempt(2)
	r = b.ack(t, c.availability(b.owners, usage, "tokens.output", 1, contract.AvailabilityAvailable, ""))
	require.Equal(t, receipt.StateWaitingForExecution, r.Lane.Eligibility.Coordination.State)
	r = b.ack(t, c.eligibility(b.owners, contract.DispositionDispatched))
	require.Equal(t, receipt.StatePending, r.Lane.Eligibility.Coordination.State)
	require.Equal(t, int64(2), r.Lane.Eligibility.FenceRevision)

	nd := newAttempt(3)
	r = b.ack(t, nd.eligibility(b.owners, contract.DispositionNotDispatched))
	require.Equal(t, receipt.StatePending, r.Lane.Eligibility.Coordination.State, "not_dispatched never waits for the gateway")
	require.Equal(t, int64(1), r.Lane.Eligibility.LatestWorkGeneration)

	r = b.ack(t, newAttempt(4).availability(b.owners, cost, "cost.usd", 1, contract.AvailabilityPending, ""))
	require.Equal(t, receipt.LaneProviderCost, r.Lane.Kind)
	require.Equal(t, receipt.StatePending, r.Lane.ProviderCost.Coordination.State, "cost has no counterpart wait")
}

// TestMET4WatermarksMonotonicGenerations: a newer revision advances the
// watermark and schedules a new immutable Work generation; an older one is
// already_observed and changes nothing; the same revision with another
// digest is non_retryable with nothing written.
func TestMET4WatermarksMonotonicGenerations(t *testing.T) {
	t.Parallel()
	b := setup(t)
	a := newAttempt(1)
	b.ack(t, a.eligibility(b.owners, contract.DispositionDispatched))
	r2 := b.ack(t, a.availability(b.owners, usage, "tokens.output", 2, contract.AvailabilityAvailable, ""))
	require.Equal(t, receipt.OutcomeAdvanced, r2.Outcome)

	r1 := b.ack(t, a.availability(b.owners, usage, "tokens.output", 1, contract.AvailabilityPending, ""))
	require.Equal(t, receipt.OutcomeAlreadyObserved, r1.Outcome)
	require.Equal(t, r2.Lane, r1.Lane, "already_observed records the lane as it stands")

	before, err := state(t.Context(), b.pool)
	require.NoError(t, err)
	_, err = b.deliver(t, a.availability(b.owners, usage, "tokens.output", 2, contract.AvailabilityAvailable, "-other"))
	requireCode(t, err, false, metering.CodeAvailabilityConflict) // ME-1.availability-conflict
	after, err := state(t.Context(), b.pool)
	require.NoError(t, err)
	require.Equal(t, before, after, "a conflict writes nothing")

	r3 := b.ack(t, a.availability(b.owners, usage, "tokens.output", 3, contract.AvailabilityAvailable, ""))
	require.Equal(t, int64(2), r3.Lane.Eligibility.LatestWorkGeneration)
	require.NotEqual(t, r2.Lane.Eligibility.TriggerDigest, r3.Lane.Eligibility.TriggerDigest)

	c1 := b.ack(t, a.availability(b.owners, cost, "cost.usd", 1, contract.AvailabilityPending, ""))
	c2 := b.ack(t, a.availability(b.owners, cost, "cost.usd", 2, contract.AvailabilityAvailable, ""))
	require.Equal(t, int64(1), c1.Lane.ProviderCost.LatestWorkGeneration)
	require.Equal(t, int64(2), c2.Lane.ProviderCost.LatestWorkGeneration)
	require.Equal(t, int64(2), c2.Lane.ProviderCost.FenceRevision)
}

// TestMET5AlreadyObservedFreezesFirstLaneState: a redelivery of an
// already_observed event returns the receipt of its first processing, with
// the lane state of that moment, even after the lane moved on.
func TestMET5AlreadyObservedFreezesFirstLaneState(t *testing.T) {
	t.Parallel()
	b := setup(t)
	a := newAttempt(1)
	b.ack(t, a.availability(b.owners, usage, "tokens.output", 2, contract.AvailabilityAvailable, ""))
	old := a.availability(b.owners, usage, "tokens.output", 1, contract.AvailabilityPending, "")
	first, err := b.deliver(t, old)
	require.NoError(t, err)
	r, err := receipt.DecodeMeteringInputProcessorConsumerReceipt(first.ReceiptBody)
	require.NoError(t, err)
	require.Equal(t, receipt.OutcomeAlreadyObserved, r.Outcome)
	require.Equal(t, receipt.StateWaitingForExecution, r.Lane.Eligibility.Coordination.State)

	moved := b.ack(t, a.eligibility(b.owners, contract.DispositionDispatched))
	require.Equal(t, receipt.StatePending, moved.Lane.Eligibility.Coordination.State)

	again, err := b.deliver(t, old)
	require.NoError(t, err)
	require.Equal(t, first.ReceiptBody, again.ReceiptBody)
	require.Equal(t, first.Ack, again.Ack)
}

// TestMET6InputFenceConcurrentSessions: concurrent deliveries of every
// revision of both lanes of one attempt, on real concurrent sessions,
// serialize on the input fence: the watermarks end at the highest revision,
// generations are dense, and every receipt's lane state is coherent.
func TestMET6InputFenceConcurrentSessions(t *testing.T) {
	t.Parallel()
	b := setup(t)
	a := newAttempt(1)
	events := []*envelope.Envelope{a.eligibility(b.owners, contract.DispositionDispatched)}
	const revisions = 6
	for sv := int64(1); sv <= revisions; sv++ {
		events = append(events,
			a.availability(b.owners, usage, "tokens.output", sv, contract.AvailabilityAvailable, ""),
			a.availability(b.owners, cost, "cost.usd", sv, contract.AvailabilityAvailable, ""))
	}
	var wg sync.WaitGroup
	start := make(chan struct{})
	errs := make([]error, len(events))
	for i, e := range events {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			for {
				_, err := b.c.Consume(context.Background(), delivery(e))
				if r, _ := retryableAndCode(err); err != nil && r {
					continue // a lock timeout: deliver again
				}
				errs[i] = err
				return
			}
		}()
	}
	close(start)
	wg.Wait()
	for i, err := range errs {
		require.NoError(t, err, "delivery %d", i)
	}
	var usageSV, costSV, costGen, eligGen, works int64
	require.NoError(t, b.pool.QueryRow(t.Context(), `SELECT
		(SELECT state_version FROM metering.usage_watermarks),
		(SELECT state_version FROM metering.cost_lanes),
		(SELECT latest_work_generation FROM metering.cost_lanes),
		(SELECT latest_eligibility_work_generation FROM metering.input_fences),
		(SELECT count(*) FROM metering.input_works)`).Scan(&usageSV, &costSV, &costGen, &eligGen, &works))
	require.Equal(t, int64(revisions), usageSV)
	require.Equal(t, int64(revisions), costSV)
	require.Equal(t, costGen+eligGen, works, "generations are dense from 1 in each lane")
	var gaps int
	require.NoError(t, b.pool.QueryRow(t.Context(), `SELECT count(*) FROM (
		SELECT lane_kind, gateway_deployment_id, source_evidence_dimension_key, max(work_generation) - count(*) AS gap
		FROM metering.input_works GROUP BY 1, 2, 3) g WHERE gap <> 0`).Scan(&gaps))
	require.Zero(t, gaps)
}

// TestMETDatabaseGuards: as the least-privileged role, receipts and Work are
// insert-only (ME001) and watermarks never move backwards (ME002).
// Clauses (issue 37): ME002.watermark-not-advanced,
// ME002.fence-revision-backwards (each the only rule its UPDATE breaks).
func TestMETDatabaseGuards(t *testing.T) {
	t.Parallel()
	b := setup(t)
	a := newAttempt(1)
	b.ack(t, a.eligibility(b.owners, contract.DispositionNotDispatched))
	b.ack(t, a.availability(b.owners, usage, "tokens.output", 2, contract.AvailabilityAvailable, ""))
	for _, c := range []struct {
		sql, state string
		asRole     bool
		fragment   string
	}{
		// The grants refuse changes of insert-only facts to the role...
		{"UPDATE metering.input_works SET trigger_digest = 'x'", pgerrcode.InsufficientPrivilege, true, ""},
		{"DELETE FROM metering.input_receipts", pgerrcode.InsufficientPrivilege, true, ""},
		// ...and the triggers refuse them to everyone, the owner included.
		{"UPDATE metering.input_works SET trigger_digest = 'x'", metering.SQLStateInsertOnly, false, ""},
		{"DELETE FROM metering.input_receipts", metering.SQLStateInsertOnly, false, ""},
		{"UPDATE metering.usage_watermarks SET state_version = 1", metering.SQLStateBackwards, true, "did not advance (2 -> 1)"},
		{"UPDATE metering.input_fences SET eligibility_fence_revision = 0", metering.SQLStateBackwards, true, "moved backwards"},
	} {
		err := pgx.BeginFunc(t.Context(), b.pool, func(tx pgx.Tx) error {
			if !c.asRole {
				_, err := tx.Exec(t.Context(), c.sql)
				return err
			}
			if _, err := tx.Exec(t.Context(), "SET LOCAL ROLE oceanway_metering"); err != nil {
				return err
			}
			_, err := tx.Exec(t.Context(), c.sql)
			return err
		})
		require.Equal(t, c.state, db.SQLState(err), "%s: %v", c.sql, err)
		require.ErrorContains(t, err, c.fragment, c.sql)
	}
}

var _ inbox.Consumer = (*metering.Consumer)(nil)
