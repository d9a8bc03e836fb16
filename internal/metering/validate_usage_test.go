package metering_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	contract "github.com/oceanway/core/contracts/execution"
	"github.com/oceanway/core/contracts/receipt"
	"github.com/oceanway/core/contracts/settlement"
	"github.com/oceanway/core/internal/metering"
)

// nothingWritten: no business fact, no finish, no Blocked; the Work is still queued.
func nothingWritten(t *testing.T, b *bundle) {
	t.Helper()
	require.Zero(t, factCount(t, b.pool, ""))
	require.Zero(t, count(t, b.pool, `SELECT count(*) FROM metering.work_finishes WHERE outcome_state <> 'superseded'`))
	require.Zero(t, count(t, b.pool, `SELECT count(*) FROM metering.work_blocks`))
}

// TestMETCurrentReceiptBoundIntoUsageBasis (review finding 5; outbox
// "Gateway Event的Source读取与Current验证必须分阶段"): the bootstrap reads alone
// never complete the Work. The worker derives one validation operation per
// availability from the Work operation and the Eligibility Basis digest,
// obtains the Gateway's Current Receipt, and binds it (quadruple +
// operation) into each usage basis; a retry of the same Work and basis is
// the same operation (the Gateway returns its stored receipt).
func TestMETCurrentReceiptBoundIntoUsageBasis(t *testing.T) {
	t.Parallel()
	b := workerSetup(t)
	p := processor(t, b, nil)
	a := newAttempt(40)
	dispatched(t, b, a)

	// Unavailable validation: retryable, nothing written.
	b.owners.validationUnavailable.Store(true)
	_, err := p.Process(t.Context(), claimEligibility(t, b, 0))
	require.ErrorIs(t, err, metering.ErrRetryable)
	nothingWritten(t, b)
	b.owners.validationUnavailable.Store(false)

	before := b.owners.validations.Load()
	out, err := p.Process(t.Context(), claimEligibility(t, b, time.Hour))
	require.NoError(t, err)
	require.Equal(t, receipt.FinishApplied, out.Finished.Outcome.State)
	require.Equal(t, int64(2), b.owners.validations.Load()-before, "one validation per availability of the basis")
	ops := map[string]bool{}
	for _, dim := range []string{dimIn, dimOut} {
		cur, err := metering.ReadCurrentSettlementInput(t.Context(), b.pool, dimensionOf(a, dim))
		require.NoError(t, err)
		basis := cur.Snapshot.Basis
		require.NotEmpty(t, basis.AvailabilityValidationOperationID)
		b.owners.mu.Lock()
		r := b.owners.receipts[basis.AvailabilityValidationOperationID]
		b.owners.mu.Unlock()
		require.NotNil(t, r, "the bound operation is one the Gateway answered")
		require.True(t, r.Current)
		require.Equal(t, r.Receipt, basis.AvailabilityValidationReceipt, "the snapshot binds the receipt quadruple")
		require.Equal(t, basis.CurrentAvailability, r.Validated)
		ops[basis.AvailabilityValidationOperationID] = true
	}
	require.Len(t, ops, 2)
	// The unavailable attempt derived the same operations (same Work, same
	// basis): its validation call (it stopped at the first failure) used
	// one of the two operations the applied attempt used.
	b.owners.mu.Lock()
	require.Len(t, b.owners.requested, 2)
	calls := 0
	for op, n := range b.owners.requested {
		require.True(t, ops[op], op)
		calls += n
	}
	require.Equal(t, 3, calls)
	b.owners.mu.Unlock()
	requireDenseChains(t, b.pool)
}

// TestMETCurrentValidationNotCurrentWritesNothing (finding 5): the Gateway
// says a later availability is Current while the lane has not moved yet →
// retryable, nothing written; once its event is consumed the old Work is
// superseded and the new generation applies with a receipt of v2.
func TestMETCurrentValidationNotCurrentWritesNothing(t *testing.T) {
	t.Parallel()
	b := workerSetup(t)
	p := processor(t, b, nil)
	a := newAttempt(41)
	dispatched(t, b, a)
	ev := a.availability(b.owners, usage, dimIn, 2, contract.AvailabilityAvailable, "") // the Gateway moved; the event is on its way
	_, err := p.Process(t.Context(), claimEligibility(t, b, 0))
	require.ErrorIs(t, err, metering.ErrAvailabilityNotCurrent)
	require.ErrorIs(t, err, metering.ErrRetryable)
	nothingWritten(t, b)
	require.Zero(t, count(t, b.pool, `SELECT count(*) FROM metering.work_finishes`))

	b.ack(t, ev)
	out, err := p.Process(t.Context(), claimEligibility(t, b, time.Hour))
	require.NoError(t, err)
	require.Equal(t, receipt.FinishApplied, out.Finished.Outcome.State)
	require.Equal(t, int64(2), out.Finished.WorkGeneration)
	require.Equal(t, 1, count(t, b.pool, `SELECT count(*) FROM metering.work_finishes WHERE outcome_state = 'superseded'`))
	cur, err := metering.ReadCurrentSettlementInput(t.Context(), b.pool, dimensionOf(a, dimIn))
	require.NoError(t, err)
	require.Equal(t, int64(2), cur.Snapshot.Basis.AvailabilityStateVersion)
	requireDenseChains(t, b.pool)
}

// TestMETCurrentValidationConflictNotForged (findings 5 and 4): a
// conflicting validation answer is the Gateway's conflict: no Blocked@1 is
// forged, nothing is written, the Work stays queued and applies once the
// Gateway answers.
func TestMETCurrentValidationConflictNotForged(t *testing.T) {
	t.Parallel()
	b := workerSetup(t)
	p := processor(t, b, nil)
	a := newAttempt(42)
	dispatched(t, b, a)
	b.owners.validationConflict.Store(true)
	_, err := p.Process(t.Context(), claimEligibility(t, b, 0))
	require.ErrorIs(t, err, metering.ErrOwnerConflictUnbound)
	require.ErrorContains(t, err, receipt.CauseGatewayUsageOwnerConflict)
	nothingWritten(t, b)
	require.Equal(t, 1, count(t, b.pool, `SELECT count(*) FROM metering.pending_works`))
	b.owners.validationConflict.Store(false)
	out, err := p.Process(t.Context(), claimEligibility(t, b, time.Hour))
	require.NoError(t, err)
	require.Equal(t, receipt.FinishApplied, out.Finished.Outcome.State)
}

// TestMETNotDispatchedNeedsNoAvailabilityValidation: a not_dispatched
// attempt uses no availability, so no Gateway validation is asked.
func TestMETNotDispatchedNeedsNoAvailabilityValidation(t *testing.T) {
	t.Parallel()
	b := workerSetup(t)
	a := newAttempt(43)
	b.ack(t, a.eligibility(b.owners, contract.DispositionNotDispatched))
	out, err := processor(t, b, nil).Process(t.Context(), claimEligibility(t, b, time.Hour))
	require.NoError(t, err)
	require.Equal(t, receipt.FinishApplied, out.Finished.Outcome.State)
	require.Zero(t, b.owners.validations.Load())
}

// TestMETEconomicIdentityFromAdmissionManifest (review finding 15): the
// snapshot's economic identity comes from the RunAdmissionManifest the
// eligibility fact cites, read through Core's readRunAdmissionManifest@1:
// a manifest Core does not answer is retryable and a conflicting answer is
// not forged into Blocked@1 (nothing written either way); a manifest of
// another reservation is Metering's own conflict (Blocked, stage
// eligibility_basis); the applied snapshot carries the manifest's identity.
func TestMETEconomicIdentityFromAdmissionManifest(t *testing.T) {
	t.Parallel()
	b := workerSetup(t)
	p := processor(t, b, nil)
	a := newAttempt(44)
	dispatched(t, b, a)
	mq := quad(fmt.Sprintf("ram-%d", a.n))
	b.owners.mu.Lock()
	m := b.owners.manifests[mq]
	delete(b.owners.manifests, mq)
	b.owners.mu.Unlock()

	_, err := p.Process(t.Context(), claimEligibility(t, b, 0))
	require.ErrorIs(t, err, metering.ErrRetryable, "no manifest answered: no economic identity, no snapshot")
	nothingWritten(t, b)

	b.owners.manifestConflict.Store(true)
	_, err = p.Process(t.Context(), claimEligibility(t, b, 0))
	require.ErrorIs(t, err, metering.ErrOwnerConflictUnbound)
	nothingWritten(t, b)
	b.owners.manifestConflict.Store(false)

	other := *m
	other.BillingReservationID = id("reservation", "other")
	b.owners.mu.Lock()
	b.owners.manifests[mq] = &other
	b.owners.mu.Unlock()
	out, err := p.Process(t.Context(), claimEligibility(t, b, 0))
	require.NoError(t, err)
	require.NotNil(t, out.Blocked)
	var evBody string
	require.NoError(t, b.pool.QueryRow(t.Context(), `SELECT evidence_body FROM metering.work_blocks`).Scan(&evBody))
	ev, err := receipt.DecodeEligibilityProcessingConflictEvidence([]byte(evBody))
	require.NoError(t, err)
	require.Equal(t, "eligibility_basis", ev.ValidationStage)
	require.Equal(t, "admission_manifest_differs", ev.ReasonCode)
	require.Zero(t, factCount(t, b.pool, ""))

	b.owners.mu.Lock()
	b.owners.manifests[mq] = m
	b.owners.mu.Unlock()
	out, err = p.Process(t.Context(), claimEligibility(t, b, time.Hour))
	require.NoError(t, err)
	require.Equal(t, receipt.FinishApplied, out.Finished.Outcome.State)
	cur, err := metering.ReadCurrentSettlementInput(t.Context(), b.pool, dimensionOf(a, dimOut))
	require.NoError(t, err)
	require.Equal(t, settlement.EconomicIdentity{Kind: "credits"}, cur.Snapshot.EconomicIdentity)
	require.Equal(t, mq, cur.Snapshot.Pricing.RunAdmissionManifest)
}

// TestMETSnapshotCarriesDecisionQuadruple (review finding 9): the snapshot
// fixes the Current EligibilityDecision by the quadruple of the stored,
// content-addressed decision; a later generation of the same attempt
// applies the same decision (one row) and its new version names it.
func TestMETSnapshotCarriesDecisionQuadruple(t *testing.T) {
	t.Parallel()
	b := workerSetup(t)
	p := processor(t, b, nil)
	a := newAttempt(45)
	dispatched(t, b, a)
	_, err := p.Process(t.Context(), claimEligibility(t, b, time.Hour))
	require.NoError(t, err)
	b.ack(t, a.availability(b.owners, usage, dimIn, 2, contract.AvailabilityAvailable, ""))
	out, err := p.Process(t.Context(), claimEligibility(t, b, time.Hour))
	require.NoError(t, err)
	require.Equal(t, receipt.FinishApplied, out.Finished.Outcome.State)

	require.Equal(t, 1, count(t, b.pool, `SELECT count(*) FROM metering.eligibility_decisions`), "one decision for both generations")
	var ref, dg string
	require.NoError(t, b.pool.QueryRow(t.Context(), `SELECT decision_ref, decision_digest FROM metering.eligibility_decisions`).Scan(&ref, &dg))
	for _, v := range []struct {
		dim     string
		version int64
	}{{dimIn, 1}, {dimIn, 2}, {dimOut, 1}} {
		s, err := metering.ReadSettlementInputAt(t.Context(), b.pool, dimensionOf(a, v.dim), v.version)
		require.NoError(t, err)
		require.Equal(t, ref, s.Snapshot.Decision.Ref.Ref, "%s v%d", v.dim, v.version)
		require.Equal(t, dg, s.Snapshot.Decision.Ref.Digest)
		require.Equal(t, "1", s.Snapshot.Decision.Ref.SchemaVersion)
	}
	requireDenseChains(t, b.pool)
}
