package projector_test

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgerrcode"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	billingc "github.com/oceanway/core/contracts/billing"
	"github.com/oceanway/core/contracts/digest"
	"github.com/oceanway/core/contracts/envelope"
	"github.com/oceanway/core/contracts/strict"
	"github.com/oceanway/core/internal/db"
	"github.com/oceanway/core/internal/operations/cases"
	"github.com/oceanway/core/internal/operations/projector"
	"github.com/oceanway/core/internal/ownerread/operationsread"
)

func lid(parts ...any) string {
	return uuid.NewSHA1(uuid.NameSpaceOID, []byte(fmt.Sprint(parts...))).String()
}

func lquad(ref string) strict.Quadruple {
	h := sha256.Sum256([]byte(ref))
	return strict.Quadruple{Ref: ref, SchemaVersion: "1", DigestAlgorithmVersion: digest.JCSSHA256V1, Digest: hex.EncodeToString(h[:])}
}

var lateTenant = operationsread.Tenant{Kind: "organization", ID: lid("tenant"), WorkspaceID: lid("workspace")}

func lateDimension(n int) billingc.SettlementDimension {
	return billingc.SettlementDimension{BillingReservationID: lid("reservation", n), BillingAccountID: lid("account", n),
		RunID: lid("run", n), RunStepID: lid("step", n), ExecutionAttemptID: lid("attempt", n), ChargeDimensionKey: "tokens.output",
		EconomicIdentity: envelope.SettlementEconomicIdentityV1{Kind: "credits"}}
}

// reserveLate reserves generation 1 of d's late settlement case with
// Operations, as Billing's catch-up worker does before the first exposure.
func (b *bundle) reserveLate(t *testing.T, d billingc.SettlementDimension) operationsread.CaseIdentity {
	t.Helper()
	id, err := cases.Identities{Pool: b.pool}.ReserveLateSettlementCaseIdentity(t.Context(),
		operationsread.LateCaseScope{Tenant: lateTenant, Dimension: d, Generation: 1})
	require.NoError(t, err)
	return id
}

// exposureRequested is billing.late-settlement-exposure.case-requested@1 for
// exposure number n of d, in case id.
func exposureRequested(t *testing.T, d billingc.SettlementDimension, id operationsread.CaseIdentity, n int, amount string) *envelope.Envelope {
	t.Helper()
	exposureID := lid("exposure", d.SettlementDimensionID(), n)
	p := envelope.BillingLateSettlementExposureCaseRequestedV1Payload{
		BillingReservationID: d.BillingReservationID, BillingAccountID: d.BillingAccountID, RunID: d.RunID, RunStepID: d.RunStepID,
		ExecutionAttemptID: d.ExecutionAttemptID, ChargeDimensionKey: d.ChargeDimensionKey, SettlementDimensionID: d.SettlementDimensionID(),
		SettlementEconomicIdentity: d.EconomicIdentity, LateSettlementExposureID: exposureID, ReconciliationCaseRef: id.CaseRef,
		CaseGeneration: id.Generation, CaseRequestOperationID: id.CaseRequestOperationID, ExposureAmount: amount,
	}
	p.SetLateSettlementExposure(lquad("lse-" + exposureID))
	p.SetLateSettlementCaseIdentityReservation(id.Identity)
	e, err := envelope.Build(envelope.Envelope{
		EventID: uuid.Must(uuid.NewV7()).String(), EventType: envelope.BillingLateExposureCaseRequestedV1, EventSchemaVersion: "1",
		AggregateType: envelope.AggregateBillingLateSettlementExposure, AggregateID: exposureID, AggregateRevision: 1,
		TenantKind: lateTenant.Kind, TenantID: lateTenant.ID, WorkspaceID: lateTenant.WorkspaceID,
		CorrelationID: lid("correlation", d.BillingReservationID), CausationID: lid("transition-event", exposureID),
		OperationID: lid("case-request-event", exposureID), OccurredAt: time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC), Payload: p.Map(),
	})
	require.NoError(t, err)
	return e
}

type lateCaseRow struct {
	Generation int64  `db:"case_generation"`
	State      string `db:"state"`
	OpenedBy   string `db:"opened_by_event_id"`
	Identity   string `db:"case_identity_ref"`
	Exposures  int64  `db:"exposures"`
	Total      string `db:"total"`
}

func (b *bundle) lateCase(t *testing.T, caseRef string) (lateCaseRow, bool) {
	t.Helper()
	rows, err := b.pool.Query(t.Context(), `SELECT c.case_generation, c.state, c.opened_by_event_id::text, c.case_identity_ref,
		  (SELECT count(*) FROM operations.late_settlement_case_exposures e WHERE e.reconciliation_case_ref = c.reconciliation_case_ref) AS exposures,
		  (SELECT coalesce(sum(exposure_amount), 0)::text FROM operations.late_settlement_case_exposures e
		    WHERE e.reconciliation_case_ref = c.reconciliation_case_ref) AS total
		FROM operations.late_settlement_cases c WHERE c.reconciliation_case_ref = $1 AND c.projection_version = 1`, caseRef)
	require.NoError(t, err)
	r, err := pgx.CollectRows(rows, pgx.RowToStructByName[lateCaseRow])
	require.NoError(t, err)
	if len(r) == 0 {
		return lateCaseRow{}, false
	}
	return r[0], true
}

// BI-2 (issue 32): the first verified case-requested event of a dimension's
// generation opens its Operations case; a later exposure of the same open
// generation joins that case (one case, both exposures); each event is
// verified against the reserved identity and Billing's event-bound read,
// which receives every identity the event states.
func TestBI2LateExposureOpensAndJoinsItsCase(t *testing.T) {
	t.Parallel()
	b := setup(t)
	d := lateDimension(1)
	id := b.reserveLate(t, d)
	first := exposureRequested(t, d, id, 1, "30")
	b.ack(t, first)
	c, ok := b.lateCase(t, id.CaseRef)
	require.True(t, ok)
	require.Equal(t, lateCaseRow{Generation: 1, State: "open", OpenedBy: first.EventID, Identity: id.Identity.Ref, Exposures: 1, Total: "30"}, c)

	second := exposureRequested(t, d, id, 2, "20")
	b.ack(t, second)
	c, _ = b.lateCase(t, id.CaseRef)
	require.Equal(t, lateCaseRow{Generation: 1, State: "open", OpenedBy: first.EventID, Identity: id.Identity.Ref, Exposures: 2, Total: "50"}, c)

	require.Len(t, b.reads.LateExposureRequests, 2)
	req := b.reads.LateExposureRequests[1]
	require.Equal(t, second.EventID, req.EventID)
	require.Equal(t, id.Identity, req.CaseIdentity)
	require.Equal(t, id.CaseRef, req.CaseRef)
	require.Equal(t, d.SettlementDimensionID(), req.SettlementDimensionID)
	require.Equal(t, "20", req.ExposureAmount)
	require.Equal(t, lquad("lse-"+lid("exposure", d.SettlementDimensionID(), 2)), req.Exposure)

	// A redelivery answers the first receipt and changes nothing.
	b.ack(t, second)
	c, _ = b.lateCase(t, id.CaseRef)
	require.EqualValues(t, 2, c.Exposures)
}

// BI-2 (issue 32; BI-2.late-case-request-identity-mismatch): an event that
// disagrees with the identity Operations reserved (another identity digest,
// another generation's ref, a case request Operations never reserved) is
// non_retryable and writes nothing; Billing's read answering not_found is
// retryable and conflicting non_retryable, with nothing written.
func TestBI2LateCaseRequestIsVerifiedFirst(t *testing.T) {
	t.Parallel()
	b := setup(t)
	d := lateDimension(2)
	id := b.reserveLate(t, d)

	forged := id
	forged.Identity.Digest = lquad("forged").Digest
	_, err := b.deliver(t, exposureRequested(t, d, forged, 1, "30"))
	requireCode(t, err, false, projector.CodeLateCaseConflict)

	unreserved := lateDimension(3)
	other := id
	other.CaseRequestOperationID = lid("never-reserved")
	_, err = b.deliver(t, exposureRequested(t, unreserved, other, 1, "30"))
	requireCode(t, err, false, projector.CodeLateCaseConflict)
	require.Empty(t, b.reads.LateExposureRequests, "the local identity is checked before Billing is asked")

	b.reads.SetLateExposure(projector.OwnerNotFound, nil)
	_, err = b.deliver(t, exposureRequested(t, d, id, 2, "30"))
	requireCode(t, err, true, projector.CodeOwnerFactNotReadable)
	b.reads.SetLateExposure(projector.OwnerConflicting, nil)
	_, err = b.deliver(t, exposureRequested(t, d, id, 3, "30"))
	requireCode(t, err, false, projector.CodeOwnerFactConflicting)
	_, ok := b.lateCase(t, id.CaseRef)
	require.False(t, ok, "nothing was projected")
}

// BI-2 (issue 32): PostgreSQL refuses a projected late case that is not
// exactly a reserved identity (another digest, another generation's ref),
// as the table owner, so a case cannot open on a forged identity even past
// the projector's own check.
func TestBI2LateCaseNeedsItsReservedIdentity(t *testing.T) {
	t.Parallel()
	b := setup(t)
	d := lateDimension(5)
	id := b.reserveLate(t, d)
	insert := func(digest, caseRef string) error {
		_, err := b.pool.Exec(t.Context(), `INSERT INTO operations.late_settlement_cases (reconciliation_case_ref, projection_name,
			    projection_version, settlement_dimension_id, case_generation, case_identity_ref, case_identity_schema_version,
			    case_identity_digest_algorithm_version, case_identity_digest, case_request_operation_id, billing_reservation_id,
			    billing_account_id, run_id, run_step_id, execution_attempt_id, charge_dimension_key, tenant_kind, tenant_id,
			    workspace_id, state, opened_by_event_id, opened_at)
			VALUES ($1, 'operations_read_model', 1, $2, 1, $3, '1', 'jcs-sha256-v1', $4, $5, $6, $7, $8, $9, $10, $11,
			    'organization', $12, $13, 'open', gen_random_uuid(), now())`,
			caseRef, d.SettlementDimensionID(), id.Identity.Ref, digest, id.CaseRequestOperationID, d.BillingReservationID,
			d.BillingAccountID, d.RunID, d.RunStepID, d.ExecutionAttemptID, d.ChargeDimensionKey, lateTenant.ID, lateTenant.WorkspaceID)
		return err
	}
	require.Equal(t, pgerrcode.ForeignKeyViolation, db.SQLState(insert(lquad("forged").Digest, id.CaseRef)))
	require.Equal(t, pgerrcode.ForeignKeyViolation, db.SQLState(insert(id.Identity.Digest, "lcase-forged")))
	require.NoError(t, insert(id.Identity.Digest, id.CaseRef), "the reserved identity itself opens")
}
