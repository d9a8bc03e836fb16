package metering_test

import (
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/contracts/digest"
	contract "github.com/oceanway/core/contracts/execution"
	"github.com/oceanway/core/contracts/meterfacts"
	"github.com/oceanway/core/contracts/receipt"
	"github.com/oceanway/core/internal/db"
	"github.com/oceanway/core/internal/metering"
	"github.com/oceanway/core/internal/ownerread/meteringread"
)

// Issue 32 (outbox spec "MeteringInputWorkAttemptBlocked@1",
// gateway_usage_owner_conflict): the Gateway answers the evidence read
// conflicting with its stored GatewayEvidenceConflictFact@1, so the attempt
// writes Blocked@1 whose blockingCause is the owner branch with exactly that
// fact's quadruple, no Metering conflict evidence and no business fact; the
// Work stays queued. A retry while the conflict persists returns the stored
// Blocked@1 (one row); once the owner fixed it the same Work and generation
// applies.
func TestMETOwnerConflictFactBlocksThenApplies(t *testing.T) {
	t.Parallel()
	b := workerSetup(t)
	p := processor(t, b, nil)
	a := newAttempt(31)
	dispatched(t, b, a)
	b.owners.disputed.Store(true)
	out, err := p.Process(t.Context(), claimEligibility(t, b, 0))
	require.NoError(t, err)
	require.Nil(t, out.Finished)
	require.NotNil(t, out.Blocked)
	require.Equal(t, receipt.CauseGatewayUsageOwnerConflict, out.Blocked.BlockingCause.Kind)
	require.Equal(t, "gec-", out.Blocked.BlockingCause.Fact.Ref[:4])
	require.NoError(t, out.Blocked.VerifyDigest())
	var kind, ref, dg string
	var evidence *string
	require.NoError(t, b.pool.QueryRow(t.Context(), `SELECT owner_conflict_kind, owner_conflict_fact_ref, owner_conflict_fact_digest, evidence_body
		FROM metering.work_blocks`).Scan(&kind, &ref, &dg, &evidence))
	require.Equal(t, receipt.CauseGatewayUsageOwnerConflict, kind)
	require.Equal(t, out.Blocked.BlockingCause.Fact.Ref, ref)
	require.Equal(t, out.Blocked.BlockingCause.Fact.Digest, dg)
	require.Nil(t, evidence, "Metering writes no conflict evidence of its own for an owner's conflict")
	require.Zero(t, factCount(t, b.pool, ""))
	require.Equal(t, 1, count(t, b.pool, `SELECT count(*) FROM metering.pending_works`), "the Work stays active")

	again, err := p.Process(t.Context(), claimEligibility(t, b, 0))
	require.NoError(t, err)
	require.Equal(t, out.Blocked.Blocked, again.Blocked.Blocked, "the same owner conflict: the stored Blocked@1")
	require.Equal(t, 1, count(t, b.pool, `SELECT count(*) FROM metering.work_blocks`))

	b.owners.disputed.Store(false) // the owner's fix
	done, err := p.Process(t.Context(), claimEligibility(t, b, time.Hour))
	require.NoError(t, err)
	require.Equal(t, receipt.FinishApplied, done.Finished.Outcome.State)
	require.Equal(t, out.Blocked.WorkGeneration, done.Finished.WorkGeneration, "the same Work and generation")
}

// Issue 32: an owner's conflicting answer without a stored fact (Execution's
// eligibility read answers no fact yet) is still never forged into a
// Blocked@1: nothing is written (ErrOwnerConflictUnbound).
func TestMETOwnerConflictWithoutFactStillUnbound(t *testing.T) {
	t.Parallel()
	b := workerSetup(t)
	a := newAttempt(32)
	dispatched(t, b, a)
	b.owners.conflict.Store(true)
	_, err := processor(t, b, nil).Process(t.Context(), claimEligibility(t, b, 0))
	require.ErrorIs(t, err, metering.ErrOwnerConflictUnbound)
	require.Zero(t, count(t, b.pool, `SELECT count(*) FROM metering.work_blocks`))
}

// Issue 32: PostgreSQL refuses a work block whose columns do not match its
// Blocked@1 body, as the table owner: an owner-branch block with Metering
// evidence or another fact quadruple (ME016.owner-cause-without-fact), a
// processing-branch block without its evidence or with owner columns
// (ME016.processing-cause-without-evidence).
func TestME016WorkBlockCauseColumns(t *testing.T) {
	t.Parallel()
	b := workerSetup(t)
	p := processor(t, b, nil)
	a := newAttempt(33)
	dispatched(t, b, a)
	b.owners.disputed.Store(true)
	out, err := p.Process(t.Context(), claimEligibility(t, b, 0))
	require.NoError(t, err)
	require.NotNil(t, out.Blocked)
	// A copy of the stored row with some columns replaced (the trigger
	// answers before the primary key: the same work and attempt).
	copyRow := func(evidence, ownerRef, body string) error {
		_, err := b.pool.Exec(t.Context(), `INSERT INTO metering.work_blocks (work_ref, attempt_number, fencing_token, blocked_ref,
			blocked_digest, blocked_body, evidence_ref, evidence_digest, evidence_body, owner_conflict_kind, owner_conflict_fact_ref,
			owner_conflict_fact_schema_version, owner_conflict_fact_digest_algorithm_version, owner_conflict_fact_digest)
			SELECT work_ref, attempt_number, fencing_token, blocked_ref || '-x', blocked_digest, `+body+`, `+evidence+`, `+evidence+`,
			       `+evidence+`, owner_conflict_kind, `+ownerRef+`, owner_conflict_fact_schema_version,
			       owner_conflict_fact_digest_algorithm_version, owner_conflict_fact_digest
			  FROM metering.work_blocks`)
		return err
	}
	const asIs = "blocked_body"
	// Owner branch carrying Metering evidence.
	require.Equal(t, metering.SQLStateWorkBlockCause, db.SQLState(copyRow("'mepce-x'", "owner_conflict_fact_ref", asIs)))
	// Owner branch whose columns name another fact than the body.
	require.Equal(t, metering.SQLStateWorkBlockCause, db.SQLState(copyRow("NULL", "'gec-other'", asIs)))
	// Processing branch (the body says eligibility_processing_conflict)
	// without its evidence and with owner columns.
	processing := `jsonb_set(blocked_body::jsonb, '{blockingCause}', '{"kind": "eligibility_processing_conflict",
		"eligibilityProcessingConflictEvidenceRef": "mepce-x", "eligibilityProcessingConflictEvidenceSchemaVersion": "1",
		"eligibilityProcessingConflictEvidenceDigestAlgorithmVersion": "jcs-sha256-v1",
		"eligibilityProcessingConflictEvidenceDigest": "0000000000000000000000000000000000000000000000000000000000000000"}')::text`
	require.Equal(t, metering.SQLStateWorkBlockCause, db.SQLState(copyRow("NULL", "owner_conflict_fact_ref", processing)))
	require.Equal(t, 1, count(t, b.pool, `SELECT count(*) FROM metering.work_blocks`))
}

// Issue 32 / BI-3 (BI-3.catch-up-owner-conflict): after S1 applied, a newer
// gateway usage input whose evidence the Gateway answers with its conflict
// fact blocks the attempt's eligibility Work on the owner; Billing's
// catch-up then asks validateSettlementInputCurrent about S1 and Metering
// answers conflicting with a stored SettlementInputConflictFact@1 naming
// that Blocked@1 and the owner's fact (the same operation again: the same
// fact, one row). Finalization is never answered so. Once the owner fixed
// the cause and the Work applied S2, a new operation is answered not_current.
func TestMETSettlementInputConflictFactWhileOwnerBlocked(t *testing.T) {
	t.Parallel()
	b := workerSetup(t)
	p := processor(t, b, nil)
	a := newAttempt(34)
	dispatched(t, b, a)
	_, err := p.Process(t.Context(), claimEligibility(t, b, time.Hour))
	require.NoError(t, err)
	dim := dimensionOf(a, dimOut)
	s1, err := metering.ReadCurrentSettlementInput(t.Context(), b.pool, dim)
	require.NoError(t, err)

	b.ack(t, a.availability(b.owners, usage, dimOut, 2, contract.AvailabilityAvailable, ""))
	b.owners.disputed.Store(true)
	blocked, err := p.Process(t.Context(), claimEligibility(t, b, 0))
	require.NoError(t, err)
	require.NotNil(t, blocked.Blocked)

	req := meteringread.SettlementValidationRequest{Purpose: meterfacts.PurposeBillingCatchUpFence, OperationID: uuid.NewString(),
		SettlementDimensionID: dim, Snapshot: s1.Ref, InputManifestDigest: digest.Digest{Algorithm: digest.JCSSHA256V1, Value: s1.Ref.Snapshot.Digest}}
	v, err := metering.ValidateSettlementInputCurrent(t.Context(), b.pool, req)
	require.NoError(t, err)
	require.Nil(t, v.Receipt)
	require.NotNil(t, v.Conflict)
	require.Equal(t, blocked.Blocked.Blocked, v.Conflict.Blocked)
	require.Equal(t, blocked.Blocked.BlockingCause.Fact, v.Conflict.OwnerConflictFact)
	require.Equal(t, s1.Ref.Snapshot, v.Conflict.Validated)
	back, err := meterfacts.DecodeSettlementInputConflictFact(v.ConflictBody)
	require.NoError(t, err)
	require.Equal(t, v.Conflict, back)
	again, err := metering.ValidateSettlementInputCurrent(t.Context(), b.pool, req)
	require.NoError(t, err)
	require.Equal(t, v.Conflict.Fact, again.Conflict.Fact, "insert-or-compare: the first fact")
	post := req
	post.Purpose, post.OperationID = meterfacts.PurposePostFinalizationTransition, uuid.NewString()
	pv, err := metering.ValidateSettlementInputCurrent(t.Context(), b.pool, post)
	require.NoError(t, err)
	require.Equal(t, v.Conflict.Fact, pv.Conflict.Fact, "one fact per dimension, version and block, whatever the catch-up purpose")
	require.Equal(t, 1, count(t, b.pool, `SELECT count(*) FROM metering.settlement_input_conflict_facts`))
	require.Zero(t, count(t, b.pool, `SELECT count(*) FROM metering.settlement_validation_receipts`))

	fin := req
	fin.Purpose, fin.OperationID = meterfacts.PurposeFinalization, uuid.NewString()
	fv, err := metering.ValidateSettlementInputCurrent(t.Context(), b.pool, fin)
	require.NoError(t, err)
	require.Nil(t, fv.Conflict)
	require.True(t, fv.Receipt.Current, "finalization settles on the Current input")

	b.owners.disputed.Store(false) // the owner's fix
	done, err := p.Process(t.Context(), claimEligibility(t, b, time.Hour))
	require.NoError(t, err)
	require.Equal(t, receipt.FinishApplied, done.Finished.Outcome.State)
	later := req
	later.OperationID = uuid.NewString()
	lv, err := metering.ValidateSettlementInputCurrent(t.Context(), b.pool, later)
	require.NoError(t, err)
	require.Nil(t, lv.Conflict)
	require.False(t, lv.Receipt.Current)
	require.Equal(t, int64(2), lv.Current.StateVersion)
}

// Issue 32: PostgreSQL refuses a changed, deleted, truncated or forged
// settlement input conflict fact, as the table owner:
// ME001.settlement-conflict-facts-insert-only,
// ME001.settlement-conflict-facts-no-truncate, and a body that does not
// name its row, its snapshot or its owner block (ME017.conflict-fact-forged).
func TestME017SettlementInputConflictFactGuarded(t *testing.T) {
	t.Parallel()
	b := workerSetup(t)
	p := processor(t, b, nil)
	a := newAttempt(35)
	dispatched(t, b, a)
	_, err := p.Process(t.Context(), claimEligibility(t, b, time.Hour))
	require.NoError(t, err)
	dim := dimensionOf(a, dimOut)
	s1, err := metering.ReadCurrentSettlementInput(t.Context(), b.pool, dim)
	require.NoError(t, err)
	b.ack(t, a.availability(b.owners, usage, dimOut, 2, contract.AvailabilityAvailable, ""))
	b.owners.disputed.Store(true)
	_, err = p.Process(t.Context(), claimEligibility(t, b, 0))
	require.NoError(t, err)
	v, err := metering.ValidateSettlementInputCurrent(t.Context(), b.pool, meteringread.SettlementValidationRequest{
		Purpose: meterfacts.PurposeBillingCatchUpFence, OperationID: uuid.NewString(), SettlementDimensionID: dim, Snapshot: s1.Ref,
		InputManifestDigest: digest.Digest{Algorithm: digest.JCSSHA256V1, Value: s1.Ref.Snapshot.Digest}})
	require.NoError(t, err)
	require.NotNil(t, v.Conflict)
	const table = "metering.settlement_input_conflict_facts"
	for _, stmt := range []string{"UPDATE " + table + " SET fact_body = fact_body", "DELETE FROM " + table, "TRUNCATE " + table} {
		_, err := b.pool.Exec(t.Context(), stmt)
		require.Equal(t, metering.SQLStateInsertOnly, db.SQLState(err), stmt)
	}
	forge := func(body string) error {
		_, err := b.pool.Exec(t.Context(), `INSERT INTO `+table+` SELECT settlement_input_conflict_fact_ref || '-x',
			settlement_input_conflict_fact_schema_version, settlement_input_conflict_fact_digest_algorithm_version,
			settlement_input_conflict_fact_digest, settlement_dimension_id, validated_state_version, blocked_ref, `+body+`, detected_at
			FROM `+table)
		return err
	}
	// The body's own ref differs from the row's.
	require.Equal(t, metering.SQLStateSettlementConflictForged, db.SQLState(forge("fact_body")))
	// The body names another owner fact than the block.
	require.Equal(t, metering.SQLStateSettlementConflictForged, db.SQLState(forge(`jsonb_set(jsonb_set(fact_body::jsonb,
		'{settlementInputConflictFactRef}', to_jsonb(settlement_input_conflict_fact_ref || '-x')), '{ownerConflictFactRef}', '"gec-other"')::text`)))
	require.Equal(t, 1, count(t, b.pool, `SELECT count(*) FROM `+table))
}

// Issue 32 (outbox spec: the eligibility lane's coordinationState
// blocked_on_owner_conflict with activeWork and the Blocked@1 quadruple):
// while the active Work's latest attempt is blocked on an owner's conflict
// fact, a receipt records the lane blocked_on_owner_conflict (here an older
// revision's already_observed receipt); a Metering processing conflict is
// not an owner's, and an applied lane is applied again once the owner fixed it.
func TestMETLaneBlockedOnOwnerConflictInReceipt(t *testing.T) {
	t.Parallel()
	b := workerSetup(t)
	p := processor(t, b, nil)
	a := newAttempt(36)
	dispatched(t, b, a)
	_, err := p.Process(t.Context(), claimEligibility(t, b, time.Hour))
	require.NoError(t, err)
	b.ack(t, a.availability(b.owners, usage, dimOut, 3, contract.AvailabilityAvailable, ""))
	b.owners.disputed.Store(true)
	out, err := p.Process(t.Context(), claimEligibility(t, b, 0))
	require.NoError(t, err)
	require.NotNil(t, out.Blocked)

	r := b.ack(t, a.availability(b.owners, usage, dimOut, 2, contract.AvailabilityAvailable, ""))
	require.Equal(t, receipt.OutcomeAlreadyObserved, r.Outcome)
	co := r.Lane.Eligibility.Coordination
	require.Equal(t, receipt.StateBlockedOnOwnerConflict, co.State)
	require.NotNil(t, co.Blocked)
	require.Equal(t, out.Blocked.Blocked, *co.Blocked)
	require.Equal(t, out.Blocked.Work, co.ActiveWork.Work)

	b.owners.disputed.Store(false) // the owner's fix
	done, err := p.Process(t.Context(), claimEligibility(t, b, time.Hour))
	require.NoError(t, err)
	require.Equal(t, receipt.FinishApplied, done.Finished.Outcome.State)
	r = b.ack(t, a.availability(b.owners, usage, dimIn, 2, contract.AvailabilityPending, "-late"))
	require.NotEqual(t, receipt.StateBlockedOnOwnerConflict, r.Lane.Eligibility.Coordination.State)
}

// Issue 32 (execution_eligibility_owner_conflict): Execution answers the
// eligibility read conflicting with its stored
// ExecutionEligibilityConflictFact@1, so the attempt writes Blocked@1 with
// the execution owner branch and that fact's quadruple; once Execution
// vouches for the fact again the same Work applies.
func TestMETExecutionEligibilityConflictFactBlocks(t *testing.T) {
	t.Parallel()
	b := workerSetup(t)
	p := processor(t, b, nil)
	a := newAttempt(37)
	dispatched(t, b, a)
	b.owners.eligibilityDisputed.Store(true)
	out, err := p.Process(t.Context(), claimEligibility(t, b, 0))
	require.NoError(t, err)
	require.NotNil(t, out.Blocked)
	require.Equal(t, receipt.CauseExecutionEligibilityOwnerConflict, out.Blocked.BlockingCause.Kind)
	require.Equal(t, "eec-", out.Blocked.BlockingCause.Fact.Ref[:4])
	var kind string
	require.NoError(t, b.pool.QueryRow(t.Context(), `SELECT owner_conflict_kind FROM metering.work_blocks`).Scan(&kind))
	require.Equal(t, receipt.CauseExecutionEligibilityOwnerConflict, kind)
	b.owners.eligibilityDisputed.Store(false)
	done, err := p.Process(t.Context(), claimEligibility(t, b, time.Hour))
	require.NoError(t, err)
	require.Equal(t, receipt.FinishApplied, done.Finished.Outcome.State)
}
