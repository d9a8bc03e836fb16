package projector_test

import (
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgerrcode"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	billingc "github.com/oceanway/core/contracts/billing"
	"github.com/oceanway/core/contracts/envelope"
	"github.com/oceanway/core/contracts/envelope/sample"
	"github.com/oceanway/core/internal/db"
	"github.com/oceanway/core/internal/operations/cases"
	"github.com/oceanway/core/internal/operations/operationstest"
	"github.com/oceanway/core/internal/operations/projector"
	"github.com/oceanway/core/internal/ownerread/operationsread"
)

// lateResultAt is billing.late-settlement-command-result.committed@1 on the
// sample transition's dimension at from revision rev (the aggregate the
// transitions of transitionAt share).
func lateResultAt(t *testing.T, rev int64) *envelope.Envelope {
	t.Helper()
	tr, err := envelope.PayloadOf[envelope.BillingSettlementTransitionCommittedV1Payload](transitionAt(1))
	require.NoError(t, err)
	e := *sample.Built(envelope.BillingLateCommandResultCommittedV1, 1)
	p, err := envelope.PayloadOf[envelope.BillingLateSettlementCommandResultCommittedV1Payload](&e)
	require.NoError(t, err)
	p.BillingReservationID, p.BillingAccountID, p.RunID, p.RunStepID = tr.BillingReservationID, tr.BillingAccountID, tr.RunID, tr.RunStepID
	p.ExecutionAttemptID, p.ChargeDimensionKey, p.SettlementDimensionID = tr.ExecutionAttemptID, tr.ChargeDimensionKey, tr.SettlementDimensionID
	p.SettlementEconomicIdentity = tr.SettlementEconomicIdentity
	p.FromSettlementStateRevision, p.ToSettlementStateRevision = rev, rev+1
	e.EventID = operationstest.ID(int(rev), 50)
	e.CausationID = operationstest.ID(int(rev), 51)
	e.AggregateID, e.AggregateRevision, e.Payload = tr.SettlementDimensionID, rev, p.Map()
	built, err := envelope.Build(e)
	require.NoError(t, err)
	return built
}

// exposureApplied is billing.case-resolution.applied@1 for exposure number
// n of d in case id (resolved by a late settlement command).
func exposureApplied(t *testing.T, d billingc.SettlementDimension, id operationsread.CaseIdentity, n int) *envelope.Envelope {
	t.Helper()
	exposureID := lid("exposure", d.SettlementDimensionID(), n)
	p := envelope.BillingCaseResolutionAppliedV1Payload{
		BillingReservationID: d.BillingReservationID, BillingAccountID: d.BillingAccountID, RunID: d.RunID, RunStepID: d.RunStepID,
		ExecutionAttemptID: d.ExecutionAttemptID, ChargeDimensionKey: d.ChargeDimensionKey, SettlementDimensionID: d.SettlementDimensionID(),
		SettlementEconomicIdentity: d.EconomicIdentity, LateSettlementExposureID: exposureID, ReconciliationCaseRef: id.CaseRef,
		CaseGeneration: id.Generation, ResolutionSource: "late_settlement_command", ResolutionOperationID: lid("resolution", exposureID),
	}
	p.SetLateSettlementCaseIdentityReservation(id.Identity)
	p.SetBillingCaseResolutionApplied(lquad("bcra-" + exposureID))
	e, err := envelope.Build(envelope.Envelope{
		EventID: uuid.Must(uuid.NewV7()).String(), EventType: envelope.BillingCaseResolutionAppliedV1, EventSchemaVersion: "1",
		AggregateType: envelope.AggregateBillingLateSettlementExposure, AggregateID: exposureID, AggregateRevision: 2,
		TenantKind: lateTenant.Kind, TenantID: lateTenant.ID, WorkspaceID: lateTenant.WorkspaceID,
		CorrelationID: lid("correlation", d.BillingReservationID), CausationID: lid("result-event", exposureID),
		OperationID: lid("applied-event", exposureID), OccurredAt: time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC), Payload: p.Map(),
	})
	require.NoError(t, err)
	return e
}

func (b *bundle) effects(t *testing.T, effect string) int {
	t.Helper()
	var n int
	require.NoError(t, b.pool.QueryRow(t.Context(), `SELECT count(*) FROM operations.projected_events WHERE projection_effect = $1`, effect).Scan(&n))
	return n
}

// BI-2, OP-1 (issue 32 part 2): billing.late-settlement-command-result.committed@1
// is verified by Billing's readLateSettlementCommandResultForOperations
// before any lock (not_found retryable, conflicting non_retryable, nothing
// written), then takes its place in the settlement dimension's revision
// sequence: the transition at the next revision applies without a gap, and
// a redelivery answers the first receipt.
func TestBI2LateCommandResultTakesItsPlaceInTheDimension(t *testing.T) {
	t.Parallel()
	b := setup(t, projector.Config{SettlementReads: &settlementReads{answer: projector.OwnerFound}})
	b.ack(t, transitionAt(1))
	result := lateResultAt(t, 2)
	before := b.state(t)

	unwired, err := projector.New(b.pool, projector.Config{BillingReads: operationstest.Found()})
	require.NoError(t, err)
	_, err = unwired.Consume(t.Context(), operationstest.DeliveryV1(result))
	requireCode(t, err, true, projector.CodeOwnerReadUnavailable)
	b.reads.SetLateResult(projector.OwnerNotFound, nil)
	_, err = b.deliver(t, result)
	requireCode(t, err, true, projector.CodeOwnerFactNotReadable)
	b.reads.SetLateResult(projector.OwnerConflicting, nil)
	_, err = b.deliver(t, result)
	requireCode(t, err, false, projector.CodeOwnerFactConflicting)
	require.Equal(t, before, b.state(t), "nothing written")

	b.reads.SetLateResult(projector.OwnerFound, nil)
	first := b.ack(t, result)
	req := b.reads.LateResultRequests[len(b.reads.LateResultRequests)-1]
	p, err := envelope.PayloadOf[envelope.BillingLateSettlementCommandResultCommittedV1Payload](result)
	require.NoError(t, err)
	require.Equal(t, result.EventID, req.EventID)
	require.Equal(t, p.LateSettlementCommandResult(), req.Result)
	require.EqualValues(t, 2, req.FromSettlementStateRevision)
	require.EqualValues(t, 3, req.ToSettlementStateRevision)
	require.Equal(t, p.LateSettlementCommandOperationID, req.CommandOperationID)

	b.ack(t, transitionAt(3)) // the next revision: no gap
	require.Zero(t, b.count(t, "revision_gaps"))
	again := b.ack(t, result)
	require.Equal(t, first, again, "a redelivery answers the first receipt")
	require.Equal(t, 1, b.effects(t, projector.EffectLateCommandResult))
}

// BI-2, OP-1 (issue 32 part 2; BI-2.late-applied-case-mismatch):
// billing.case-resolution.applied@1, verified by Billing's
// readBillingCaseResolutionAppliedForOperations, marks its exposure
// resolved; the case closes (open → resolved) once every exposure of its
// generation is resolved. A redelivery answers the first receipt. An
// applied event that names another generation's identity is
// non_retryable; one that arrives before its exposure's case-requested
// event waits as a revision gap and applies after it.
func TestBI2LateAppliedClosesTheCase(t *testing.T) {
	t.Parallel()
	b := setup(t)
	d := lateDimension(11)
	id := b.reserveLate(t, d)
	b.ack(t, exposureRequested(t, d, id, 1, "30"))
	b.ack(t, exposureRequested(t, d, id, 2, "20"))

	first := exposureApplied(t, d, id, 1)
	receipt := b.ack(t, first)
	c, _ := b.lateCase(t, id.CaseRef)
	require.Equal(t, "open", c.State, "exposure 2 is unresolved")
	require.Len(t, b.reads.CaseResolutionRequests, 1)
	req := b.reads.CaseResolutionRequests[0]
	require.Equal(t, first.EventID, req.EventID)
	require.Equal(t, id.Identity, req.CaseIdentity)
	require.Equal(t, lid("exposure", d.SettlementDimensionID(), 1), req.LateSettlementExposureID)
	require.Equal(t, "late_settlement_command", req.ResolutionSource)
	require.Equal(t, receipt, b.ack(t, first), "a redelivery answers the first receipt")

	forged := id
	forged.Identity = lquad("another-identity")
	_, err := b.deliver(t, exposureApplied(t, d, forged, 2))
	requireCode(t, err, false, projector.CodeLateCaseConflict)

	b.ack(t, exposureApplied(t, d, id, 2))
	c, _ = b.lateCase(t, id.CaseRef)
	require.Equal(t, "resolved", c.State)
	require.Equal(t, 1, b.effects(t, projector.EffectLateExposureResolved))
	require.Equal(t, 1, b.effects(t, projector.EffectLateCaseResolved))

	// Applied before its case-requested event: a revision gap, then applied.
	d2 := lateDimension(12)
	id2 := b.reserveLate(t, d2)
	early := exposureApplied(t, d2, id2, 1)
	_, err = b.deliver(t, early)
	require.Error(t, err)
	_, ok := b.lateCase(t, id2.CaseRef)
	require.False(t, ok)
	b.ack(t, exposureRequested(t, d2, id2, 1, "5"))
	b.ack(t, early)
	c, _ = b.lateCase(t, id2.CaseRef)
	require.Equal(t, "resolved", c.State)
}

// BI-2 (issue 32 part 2): Billing's applied read answering not_found is
// retryable and conflicting non_retryable; unwired is retryable; nothing is
// written.
func TestBI2LateAppliedIsVerifiedFirst(t *testing.T) {
	t.Parallel()
	b := setup(t)
	d := lateDimension(13)
	id := b.reserveLate(t, d)
	b.ack(t, exposureRequested(t, d, id, 1, "30"))
	applied := exposureApplied(t, d, id, 1)
	before := b.state(t)
	unwired, err := projector.New(b.pool, projector.Config{BillingReads: operationstest.Found()})
	require.NoError(t, err)
	_, err = unwired.Consume(t.Context(), operationstest.DeliveryV1(applied))
	requireCode(t, err, true, projector.CodeOwnerReadUnavailable)
	b.reads.SetCaseResolution(projector.OwnerNotFound, nil)
	_, err = b.deliver(t, applied)
	requireCode(t, err, true, projector.CodeOwnerFactNotReadable)
	b.reads.SetCaseResolution(projector.OwnerConflicting, nil)
	_, err = b.deliver(t, applied)
	requireCode(t, err, false, projector.CodeOwnerFactConflicting)
	require.Equal(t, before, b.state(t), "nothing written")
	c, _ := b.lateCase(t, id.CaseRef)
	require.Equal(t, "open", c.State)
}

// BI-2 (issue 32 part 2; OP006.late-case-resolution-fields,
// OP006.late-case-resolved-absorbing, OP006.late-case-update-not-resolve,
// OP006.late-case-frozen-columns, OP001.late-cases-no-delete,
// OP006.late-exposure-resolution-fields, OP006.late-exposure-resolved-absorbing,
// OP006.late-exposure-update-not-resolve, OP006.late-exposure-frozen-columns,
// OP001.late-case-exposures-no-delete): the projected late case and its
// exposures only move forward — open → resolved once with the resolution
// columns set together, nothing else moves, nothing is deleted — as the
// Operations role and as the table owner.
func TestBI2LateCaseRowsMoveForwardOnly(t *testing.T) {
	t.Parallel()
	b := setup(t)
	d := lateDimension(4)
	id := b.reserveLate(t, d)
	b.ack(t, exposureRequested(t, d, id, 1, "30"))
	b.ack(t, exposureRequested(t, d, id, 2, "30"))
	b.ack(t, exposureApplied(t, d, id, 1)) // exposure 1 resolved, the case open
	resolved, open := lid("exposure", d.SettlementDimensionID(), 1), lid("exposure", d.SettlementDimensionID(), 2)
	exec := func(role, stmt string, args ...any) string {
		err := pgx.BeginFunc(t.Context(), b.pool, func(tx pgx.Tx) error {
			if role != "" {
				if _, err := tx.Exec(t.Context(), "SET LOCAL ROLE "+role); err != nil {
					return err
				}
			}
			_, err := tx.Exec(t.Context(), stmt, args...)
			return err
		})
		return db.SQLState(err)
	}
	const resolveExposure = `UPDATE operations.late_settlement_case_exposures SET resolution_event_id = gen_random_uuid(),
		resolution_event_envelope_sha256 = repeat('a', 64), resolution_operation_id = gen_random_uuid(),
		resolution_source = 'late_settlement_command', resolution_applied_ref = 'bcra-x', resolution_applied_digest = repeat('a', 64),
		resolved_at = now()`
	for _, role := range []string{"", "oceanway_operations"} {
		owner := role == ""
		// The case (open).
		require.Equal(t, pgerrcode.CheckViolation, exec(role, `UPDATE operations.late_settlement_cases SET state = 'resolved'`),
			"resolution columns set together")
		require.Equal(t, projector.SQLStateCaseTransition, exec(role, `UPDATE operations.late_settlement_cases SET state = 'open'`),
			"an update that does not resolve")
		frozen := exec(role, `UPDATE operations.late_settlement_cases SET state = 'resolved', resolution_event_id = gen_random_uuid(),
			resolved_at = now(), charge_dimension_key = 'forged'`)
		if owner {
			require.Equal(t, projector.SQLStateCaseTransition, frozen, "nothing else moves")
		} else {
			require.Equal(t, pgerrcode.InsufficientPrivilege, frozen)
		}
		require.Contains(t, []string{cases.CodeInsertOnly, pgerrcode.InsufficientPrivilege}, exec(role, `DELETE FROM operations.late_settlement_cases`))
		// The exposures.
		require.Equal(t, pgerrcode.CheckViolation, exec(role, `UPDATE operations.late_settlement_case_exposures SET resolved_at = now()
			WHERE late_settlement_exposure_id = $1`, open), "resolution columns set together")
		require.Equal(t, projector.SQLStateCaseTransition, exec(role, resolveExposure+` WHERE late_settlement_exposure_id = $1`, resolved),
			"an exposure resolves once")
		require.Equal(t, projector.SQLStateCaseTransition, exec(role, `UPDATE operations.late_settlement_case_exposures
			SET resolved_at = NULL WHERE late_settlement_exposure_id = $1`, open), "an update that does not resolve")
		frozen = exec(role, resolveExposure+`, exposure_amount = 1 WHERE late_settlement_exposure_id = $1`, open)
		if owner {
			require.Equal(t, projector.SQLStateCaseTransition, frozen, "nothing else moves")
		} else {
			require.Equal(t, pgerrcode.InsufficientPrivilege, frozen)
		}
		require.Contains(t, []string{cases.CodeInsertOnly, pgerrcode.InsufficientPrivilege},
			exec(role, `DELETE FROM operations.late_settlement_case_exposures`))
	}
	require.Equal(t, cases.CodeInsertOnly, exec("", `DELETE FROM operations.late_settlement_cases`), "the trigger refuses even the owner")
	require.Equal(t, cases.CodeInsertOnly, exec("", `DELETE FROM operations.late_settlement_case_exposures`))

	// Once resolved, the case is absorbing.
	b.ack(t, exposureApplied(t, d, id, 2))
	for _, role := range []string{"", "oceanway_operations"} {
		require.Equal(t, projector.SQLStateCaseTransition, exec(role, `UPDATE operations.late_settlement_cases
			SET resolution_event_id = gen_random_uuid()`), "a case closes once")
	}
}
