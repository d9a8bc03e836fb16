package catchup_test

import (
	"testing"
	"time"

	"github.com/jackc/pgerrcode"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	billingc "github.com/oceanway/core/contracts/billing"
	"github.com/oceanway/core/contracts/digest"
	"github.com/oceanway/core/contracts/envelope"
	"github.com/oceanway/core/contracts/reconciliation"
	"github.com/oceanway/core/contracts/strict"
	"github.com/oceanway/core/internal/billing/catchup"
	billingschema "github.com/oceanway/core/internal/billing/schema"
	"github.com/oceanway/core/internal/boundary"
	"github.com/oceanway/core/internal/db"
	"github.com/oceanway/core/internal/dbtest"
	"github.com/oceanway/core/internal/inbox"
	"github.com/oceanway/core/internal/operations/cases"
	operationsschema "github.com/oceanway/core/internal/operations/schema"
	"github.com/oceanway/core/internal/ownerread"
	"github.com/oceanway/core/internal/ownerread/coreread"
	"github.com/oceanway/core/internal/ownerread/operationsread"
	"github.com/oceanway/core/internal/release"
)

// lateCaseBundle is the catch-up bundle with Operations' case identities
// wired: exposures ask for their dimension's case.
type lateCaseBundle struct {
	*catchUpBundle
	identities cases.Identities
}

func setupLateCases(t *testing.T) *lateCaseBundle {
	t.Helper()
	dbs := dbtest.New(t, dbtest.Opts{Boundaries: []boundary.Boundary{boundary.Core},
		Lines: append(catchUpLines(), operationsschema.Line()), MaxConns: 12})
	admin := dbs.Core()
	_, err := release.Bootstrap(t.Context(), admin, release.BootstrapParams{ProjectionName: "operations_read_model", ProjectionVersion: 1, SourceRelease: "test"})
	require.NoError(t, err)
	pool := dbtest.RolePool(t, dbs.DSNs[boundary.Core], billingschema.RoleBilling)
	ids := cases.Identities{Pool: dbtest.RolePool(t, dbs.DSNs[boundary.Core], operationsschema.RoleOperations)}
	b := &catchUpBundle{admin: admin, pool: pool, finalization: newFakeFinalization(), metering: newFakeMetering(), ledger: &fakeLedger{}}
	b.consumer, err = catchup.NewConsumer(pool, catchup.ConsumerConfig{Inbox: inbox.Config{LockTimeout: time.Second}, Finalization: b.finalization})
	require.NoError(t, err)
	b.worker, err = catchup.NewWorker(pool, catchup.WorkerConfig{Metering: b.metering, Ledger: b.ledger, Cases: ids,
		Now: func() time.Time { return catchUpAt.Add(time.Hour) }})
	require.NoError(t, err)
	return &lateCaseBundle{catchUpBundle: b, identities: ids}
}

// exposureCase is what one exposure row says of its case.
type exposureCase struct {
	Revision   int64
	Generation int64
	CaseRef    string
	EventID    string
	Body       string
}

func (b *lateCaseBundle) exposures(t *testing.T, d billingc.SettlementDimension) []exposureCase {
	t.Helper()
	rows, err := b.admin.Query(t.Context(), `SELECT settlement_state_revision, case_generation, reconciliation_case_ref,
		case_event_id::text, exposure_body FROM billing.late_settlement_exposures WHERE settlement_dimension_id = $1
		ORDER BY settlement_state_revision`, d.SettlementDimensionID())
	require.NoError(t, err)
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (exposureCase, error) {
		var e exposureCase
		return e, r.Scan(&e.Revision, &e.Generation, &e.CaseRef, &e.EventID, &e.Body)
	})
	require.NoError(t, err)
	return out
}

// caseRequested reads the exposure's case-requested event from the outbox.
func (b *lateCaseBundle) caseRequested(t *testing.T, eventID string) envelope.BillingLateSettlementExposureCaseRequestedV1Payload {
	t.Helper()
	var raw string
	require.NoError(t, b.admin.QueryRow(t.Context(), `SELECT event_envelope FROM outbox.outbox_events WHERE event_id = $1`, eventID).Scan(&raw))
	e, err := envelope.DecodeEnvelope([]byte(raw))
	require.NoError(t, err)
	require.Equal(t, envelope.BillingLateExposureCaseRequestedV1, e.EventType)
	p, err := envelope.PayloadOf[envelope.BillingLateSettlementExposureCaseRequestedV1Payload](e)
	require.NoError(t, err)
	return p
}

// BI-2 (issue 32): an exposure opens its Operations case through its
// case-requested event with a stable identity: the first exposure of a
// dimension reserves generation 1 with Operations and records it open;
// a second positive difference while the generation is open joins the
// same case (same ref, generation and identity) with its own event; every
// event binds its exposure and names the exposure transition's event as
// its cause.
func TestBI2ExposureOpensItsCaseAndJoinsTheOpenGeneration(t *testing.T) {
	t.Parallel()
	b := setupLateCases(t)
	d := catchUpDimension(1)
	b.metering.append(d, 1, "100")
	b.metering.append(d, 2, "130")
	b.finalize(t, "100", d)
	b.drain(t)
	b.metering.append(d, 3, "150")
	b.ack(t, inputEvent(d, 2))
	b.ack(t, inputEvent(d, 3))
	b.drain(t)
	require.Equal(t, []string{"1>2 late_settlement_exposure 30 v2", "2>3 late_settlement_exposure 50 v3"}, b.transitions(t, d))

	got := b.exposures(t, d)
	require.Len(t, got, 2)
	dimID := d.SettlementDimensionID()
	want := reconciliation.LateSettlementCaseRef(dimID, 1)
	for _, e := range got {
		require.EqualValues(t, 1, e.Generation, "an open generation is joined, not replaced")
		require.Equal(t, want, e.CaseRef)
		x, err := billingc.DecodeLateSettlementExposure([]byte(e.Body))
		require.NoError(t, err)
		require.NotNil(t, x.Case)
		require.Equal(t, want, x.Case.ReconciliationCaseRef)
		p := b.caseRequested(t, e.EventID)
		require.Equal(t, x.Exposure, p.LateSettlementExposure())
		require.Equal(t, x.Case.Identity, p.LateSettlementCaseIdentityReservation())
		require.Equal(t, x.ExposureAmount, p.ExposureAmount)
		require.Equal(t, x.ExposureID(), p.LateSettlementExposureID)
		var cause, transitionEvent string
		require.NoError(t, b.admin.QueryRow(t.Context(), `SELECT causation_id::text FROM outbox.outbox_events WHERE event_id = $1`, e.EventID).Scan(&cause))
		require.NoError(t, b.admin.QueryRow(t.Context(), `SELECT event_id::text FROM billing.settlement_transitions
			WHERE settlement_dimension_id = $1 AND to_settlement_state_revision = $2`, dimID, e.Revision).Scan(&transitionEvent))
		require.Equal(t, transitionEvent, cause)
	}
	var generations int
	require.NoError(t, b.admin.QueryRow(t.Context(), `SELECT count(*) FROM billing.late_settlement_cases WHERE settlement_dimension_id = $1 AND state = 'open'`,
		dimID).Scan(&generations))
	require.Equal(t, 1, generations)
	var reserved int
	require.NoError(t, b.admin.QueryRow(t.Context(), `SELECT count(*) FROM operations.late_settlement_case_identities WHERE settlement_dimension_id = $1`,
		dimID).Scan(&reserved))
	require.Equal(t, 1, reserved, "joining an open generation reserves nothing new")
}

// BI-2 (issue 32): once a dimension's case generation is resolving, a new
// positive difference reserves generation + 1 with a new identity and case
// ref naming its predecessor; PostgreSQL refuses an exposure joining a
// generation that is not open (BC013.exposure-case-not-open), so an old
// generation cannot take in a new difference.
func TestBI2NewDifferenceAfterResolvingUsesTheNextGeneration(t *testing.T) {
	t.Parallel()
	b := setupLateCases(t)
	d := catchUpDimension(2)
	dimID := d.SettlementDimensionID()
	b.metering.append(d, 1, "100")
	b.finalize(t, "100", d)
	b.drain(t)
	// Generation 1 already moved to resolving (the late settlement command's
	// funding started): written here as the owner, as that command will.
	first, err := b.identities.ReserveLateSettlementCaseIdentity(t.Context(), operationsread.LateCaseScope{
		Tenant:    operationsread.Tenant{Kind: catchUpTenant.Kind, ID: catchUpTenant.ID, WorkspaceID: catchUpTenant.WorkspaceID},
		Dimension: d, Generation: 1})
	require.NoError(t, err)
	q := first.Identity
	_, err = b.admin.Exec(t.Context(), `INSERT INTO billing.late_settlement_cases VALUES ($1, 1, $2, $3, $4, $5, $6, $7, NULL, $8, $9, 'resolving', now())`,
		dimID, first.CaseRef, q.Ref, q.SchemaVersion, string(q.DigestAlgorithmVersion), q.Digest, first.CaseRequestOperationID,
		d.BillingReservationID, d.BillingAccountID)
	require.NoError(t, err)

	b.metering.append(d, 2, "125")
	b.ack(t, inputEvent(d, 2))
	b.drain(t)
	got := b.exposures(t, d)
	require.Len(t, got, 1)
	require.EqualValues(t, 2, got[0].Generation)
	require.Equal(t, reconciliation.LateSettlementCaseRef(dimID, 2), got[0].CaseRef)
	x, err := billingc.DecodeLateSettlementExposure([]byte(got[0].Body))
	require.NoError(t, err)
	require.NotEqual(t, first.Identity, x.Case.Identity)
	var body string
	require.NoError(t, b.admin.QueryRow(t.Context(), `SELECT identity_body FROM operations.late_settlement_case_identities
		WHERE settlement_dimension_id = $1 AND case_generation = 2`, dimID).Scan(&body))
	id2, err := reconciliation.DecodeLateCaseIdentityReservation([]byte(body))
	require.NoError(t, err)
	require.Equal(t, first.Identity, id2.Predecessor.Identity)

	// The database refuses an exposure joining the resolving generation 1,
	// even as the table owner (the trigger answers before any grant).
	err = pgx.BeginFunc(t.Context(), b.admin, func(tx pgx.Tx) error {
		_, err := tx.Exec(t.Context(), `INSERT INTO billing.late_settlement_exposures (late_settlement_exposure_id, settlement_dimension_id,
			settlement_state_revision, billing_reservation_id, billing_account_id, exposure_ref, exposure_schema_version,
			exposure_digest_algorithm_version, exposure_digest, exposure_amount, exposure_state, automatic_charge, exposure_body, recorded_at,
			case_generation, reconciliation_case_ref, case_event_id, case_event_envelope_sha256)
			SELECT gen_random_uuid(), settlement_dimension_id, settlement_state_revision, billing_reservation_id, billing_account_id,
			  exposure_ref || '-forged', exposure_schema_version, exposure_digest_algorithm_version, exposure_digest, exposure_amount,
			  exposure_state, automatic_charge, exposure_body, recorded_at, 1, $1, gen_random_uuid(), case_event_envelope_sha256
			FROM billing.late_settlement_exposures`, first.CaseRef)
		return err
	})
	require.Equal(t, catchup.CodeExposureCaseNotOpen, db.SQLState(err), "%v", err)
}

// BI-2 (issue 32 part 2; BC017.late-case-forward): a case generation Billing
// recorded moves only open -> resolving (with its funding decision) ->
// resolved (with its late result) and is never deleted: the billing role
// cannot skip a state or move without the fact, has no DELETE grant, and the
// trigger refuses even the owner.
func TestBI2LateCaseGenerationMovesForwardOnly(t *testing.T) {
	t.Parallel()
	b := setupLateCases(t)
	d := catchUpDimension(3)
	b.metering.append(d, 1, "10")
	b.metering.append(d, 2, "12")
	b.finalize(t, "10", d)
	b.drain(t)
	require.Len(t, b.exposures(t, d), 1)
	for _, c := range []struct {
		sql, state string
		asRole     bool
	}{
		{"UPDATE billing.late_settlement_cases SET state = 'resolved'", catchup.CodeLateCaseForward, true},
		{"UPDATE billing.late_settlement_cases SET state = 'resolving'", catchup.CodeLateCaseForward, true},
		{"UPDATE billing.late_settlement_cases SET reconciliation_case_ref = 'lcase-other'", pgerrcode.InsufficientPrivilege, true},
		{"DELETE FROM billing.late_settlement_cases", pgerrcode.InsufficientPrivilege, true},
		{"UPDATE billing.late_settlement_cases SET state = 'resolved'", catchup.CodeLateCaseForward, false},
		{"UPDATE billing.late_settlement_cases SET opened_at = now()", catchup.CodeLateCaseForward, false},
		{"DELETE FROM billing.late_settlement_cases", catchup.CodeLateCaseForward, false},
	} {
		err := pgx.BeginFunc(t.Context(), b.admin, func(tx pgx.Tx) error {
			if c.asRole {
				if _, err := tx.Exec(t.Context(), "SET LOCAL ROLE oceanway_billing"); err != nil {
					return err
				}
			}
			_, err := tx.Exec(t.Context(), c.sql)
			return err
		})
		require.Equal(t, c.state, db.SQLState(err), "%s: %v", c.sql, err)
	}
}

// BI-2 (issue 32): readLateSettlementExposureForOperations answers found
// only for the exact exposure, case and case-requested event Billing
// committed together; any field the event states differently is
// conflicting, an unknown exposure not_found, and a request without its
// quadruples is refused.
func TestBI2LateExposureReadForOperations(t *testing.T) {
	t.Parallel()
	b := setupLateCases(t)
	d := catchUpDimension(4)
	b.metering.append(d, 1, "10")
	b.metering.append(d, 2, "14")
	b.finalize(t, "10", d)
	b.drain(t)
	got := b.exposures(t, d)
	require.Len(t, got, 1)
	p := b.caseRequested(t, got[0].EventID)
	var sha string
	require.NoError(t, b.admin.QueryRow(t.Context(), `SELECT event_envelope_sha256 FROM outbox.outbox_events WHERE event_id = $1`,
		got[0].EventID).Scan(&sha))
	req := coreread.LateExposureCaseRequestRead{
		EventID: got[0].EventID, EventEnvelopeDigest: digest.Digest{Algorithm: digest.JCSSHA256V1, Value: sha},
		LateSettlementExposureID: p.LateSettlementExposureID, Exposure: p.LateSettlementExposure(), SettlementDimensionID: p.SettlementDimensionID,
		BillingReservationID: p.BillingReservationID, BillingAccountID: p.BillingAccountID, RunID: p.RunID, RunStepID: p.RunStepID,
		ExecutionAttemptID: p.ExecutionAttemptID, ChargeDimensionKey: p.ChargeDimensionKey, CaseRef: p.ReconciliationCaseRef,
		CaseGeneration: p.CaseGeneration, CaseIdentity: p.LateSettlementCaseIdentityReservation(), CaseRequestOperationID: p.CaseRequestOperationID,
		ExposureAmount: p.ExposureAmount,
	}
	reads := catchup.Reads{DB: b.pool}
	ans, err := reads.ReadLateSettlementExposureForOperations(t.Context(), req)
	require.NoError(t, err)
	require.Equal(t, ownerread.Found, ans)
	for name, edit := range map[string]func(r *coreread.LateExposureCaseRequestRead){
		"another event":        func(r *coreread.LateExposureCaseRequestRead) { r.EventID = cid("other-event") },
		"another digest":       func(r *coreread.LateExposureCaseRequestRead) { r.EventEnvelopeDigest.Value = cquad("x").Digest },
		"another amount":       func(r *coreread.LateExposureCaseRequestRead) { r.ExposureAmount = "5" },
		"another generation":   func(r *coreread.LateExposureCaseRequestRead) { r.CaseGeneration = 2 },
		"another identity":     func(r *coreread.LateExposureCaseRequestRead) { r.CaseIdentity = cquad("lcir-other") },
		"another case ref":     func(r *coreread.LateExposureCaseRequestRead) { r.CaseRef = "lcase-other" },
		"another exposure":     func(r *coreread.LateExposureCaseRequestRead) { r.Exposure = cquad("lse-other") },
		"another account":      func(r *coreread.LateExposureCaseRequestRead) { r.BillingAccountID = cid("other-account") },
		"another charge key":   func(r *coreread.LateExposureCaseRequestRead) { r.ChargeDimensionKey = "tokens.input" },
		"another case request": func(r *coreread.LateExposureCaseRequestRead) { r.CaseRequestOperationID = cid("other-op") },
	} {
		r := req
		edit(&r)
		ans, err := reads.ReadLateSettlementExposureForOperations(t.Context(), r)
		require.NoError(t, err, name)
		require.Equal(t, ownerread.Conflicting, ans, name)
	}
	unknown := req
	unknown.LateSettlementExposureID = cid("no-such-exposure")
	ans, err = reads.ReadLateSettlementExposureForOperations(t.Context(), unknown)
	require.NoError(t, err)
	require.Equal(t, ownerread.NotFound, ans)
	bad := req
	bad.Exposure = strict.Quadruple{}
	_, err = reads.ReadLateSettlementExposureForOperations(t.Context(), bad)
	require.ErrorIs(t, err, ownerread.ErrInvalidRequest)
}
