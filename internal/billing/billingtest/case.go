package billingtest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/oceanway/core/contracts/digest"
	"github.com/oceanway/core/contracts/envelope"
	"github.com/oceanway/core/contracts/reconciliation"
	"github.com/oceanway/core/contracts/route"
	"github.com/oceanway/core/contracts/strict"
	"github.com/oceanway/core/internal/billing"
	"github.com/oceanway/core/internal/db"
	"github.com/oceanway/core/internal/inbox"
	"github.com/oceanway/core/internal/outbox/transport"
	"github.com/oceanway/core/internal/ownerread/operationsread"
)

// InCase is a reservation in its first Finalization reconciliation case.
type InCase struct {
	Case reconciliation.Case
	// CaseRequested is billing.finalization-reconciliation.case-requested@1.
	CaseRequested *envelope.Envelope
}

// EnterCase admits a reservation (admission's rows as the owner admin),
// applies its closure through the coordinator and enters its first case
// generation with the identity ids reserves, on billingPool (as
// oceanway_billing): what the finalization worker does when a decision is
// reconciliation_required.
func EnterCase(t testing.TB, admin, billingPool *pgxpool.Pool, ids operationsread.CaseIdentities) InCase {
	t.Helper()
	ctx := context.Background()
	runID, reservationID, accountID, fenceID := uuid.NewString(), uuid.NewString(), uuid.NewString(), uuid.NewString()
	tenantID, workspaceID, correlation := uuid.NewString(), uuid.NewString(), uuid.NewString()
	at := time.Now().UTC().Truncate(time.Microsecond)
	admissionOp := uuid.NewString()
	m := fakeQuad("ram-" + runID)
	_, err := db.WithTxV(ctx, admin, func(ctx context.Context, tx pgx.Tx) (billing.Opened, error) {
		for _, stmt := range []struct {
			sql  string
			args []any
		}{
			{`INSERT INTO admission.admission_requests VALUES ($1, 'jcs-sha256-v1', $2, '{}', $3, $4)`, []any{admissionOp, m.Digest, runID, at}},
			{`INSERT INTO admission.run_admission_manifests VALUES ($1, $2, $3, $4, $5, '{}', $6)`,
				[]any{m.Ref, m.SchemaVersion, string(m.DigestAlgorithmVersion), m.Digest, runID, at}},
			{`INSERT INTO admission.runs VALUES ($1, $2, 'organization', $3, $4, NULL, $5, $6, $7, $8, $9, $10, $11, $12, $13)`,
				[]any{runID, admissionOp, tenantID, workspaceID, correlation, accountID, reservationID,
					m.Ref, m.SchemaVersion, string(m.DigestAlgorithmVersion), m.Digest, uuid.NewString(), at}},
			{`INSERT INTO admission.reservations VALUES ($1, $2, $3, 'credits', 2500, 'reserved', $4, $5)`,
				[]any{reservationID, accountID, runID, uuid.NewString(), at}},
		} {
			if _, err := tx.Exec(ctx, stmt.sql, stmt.args...); err != nil {
				return billing.Opened{}, err
			}
		}
		return billing.OpenFinalizationTx(ctx, tx, billing.OpenParams{FenceID: fenceID, BillingReservationID: reservationID,
			BillingAccountID: accountID, RunID: runID, ReservedCredits: 2500, Manifest: m, At: at})
	})
	must(t, err)

	p := envelope.ExecutionRunFinalizationClosedV1Payload{BillingReservationID: reservationID, BillingAccountID: accountID,
		RunID: runID, ClosureOperationID: uuid.NewString(), RunExecutionFinalizationStateVersion: 1, AttemptCount: 0}
	p.SetRunAdmissionManifest(m)
	p.SetRunExecutionFinalization(fakeQuad("ref-" + runID))
	p.SetAttemptSetManifest(fakeQuad("asm-" + runID))
	closure, err := envelope.Build(envelope.Envelope{EventID: uuid.NewString(), EventType: envelope.ExecutionRunFinalizationClosedV1,
		EventSchemaVersion: "1", AggregateType: envelope.AggregateRun, AggregateID: runID, AggregateRevision: 1,
		TenantKind: envelope.TenantOrganization, TenantID: tenantID, WorkspaceID: workspaceID, CorrelationID: correlation,
		OperationID: p.ClosureOperationID, OccurredAt: at, Payload: p.Map()})
	must(t, err)
	c, err := billing.NewCoordinator(billingPool, billing.CoordinatorConfig{Inbox: inbox.Config{LockTimeout: time.Second}})
	must(t, err)
	d, err := CoordinatorDelivery(closure)
	must(t, err)
	_, err = c.Consume(ctx, d)
	must(t, err)

	res, err := db.WithTxV(ctx, billingPool, func(ctx context.Context, tx pgx.Tx) (billing.ReconciliationResult, error) {
		scope, err := billing.NextCaseScopeTx(ctx, tx, fenceID)
		if err != nil {
			return billing.ReconciliationResult{}, err
		}
		id, err := ids.ReserveFinalizationCaseIdentity(ctx, scope)
		if err != nil {
			return billing.ReconciliationResult{}, err
		}
		var op string
		if err := tx.QueryRow(ctx, `SELECT billing_finalization_operation_id FROM billing.billing_finalization_works
			WHERE billing_finalization_fence_id = $1 AND work_generation = 2`, fenceID).Scan(&op); err != nil {
			return billing.ReconciliationResult{}, err
		}
		return billing.RecordReconciliationTx(ctx, tx, billing.Reconciliation{FenceID: fenceID, WorkGeneration: 2, OperationID: op,
			ReasonCode: "input_conflicting", ReasonDetail: "test fixture", Decision: fakeQuad("bfd-" + runID), Case: id})
	})
	must(t, err)
	var body []byte
	must(t, admin.QueryRow(ctx, `SELECT event_envelope FROM outbox.outbox_events WHERE event_id = $1`, res.EventID).Scan(&body))
	ev, err := envelope.DecodeEnvelope(body)
	must(t, err)
	cp, err := envelope.PayloadOf[envelope.BillingFinalizationReconciliationCaseRequestedV1Payload](ev)
	must(t, err)
	return InCase{CaseRequested: ev, Case: reconciliation.Case{ReconciliationCaseRef: cp.ReconciliationCaseRef, ReconciliationGeneration: 1,
		Identity: strict.Quadruple{Ref: cp.FinalizationCaseIdentityReservationRef, SchemaVersion: cp.FinalizationCaseIdentityReservationSchemaVersion,
			DigestAlgorithmVersion: digest.Algorithm(cp.FinalizationCaseIdentityReservationDigestAlgorithmVersion), Digest: cp.FinalizationCaseIdentityReservationDigest},
		BillingAccountID: accountID, BillingReservationID: reservationID, RunID: runID, FenceID: fenceID}}
}

// CoordinatorDelivery is e's delivery to the Billing finalization
// coordinator, as a dispatcher hands it over.
func CoordinatorDelivery(e *envelope.Envelope) (transport.Delivery, error) {
	canonical, err := e.Canonical()
	if err != nil {
		return transport.Delivery{}, err
	}
	d, err := e.Digest()
	if err != nil {
		return transport.Delivery{}, err
	}
	return transport.Delivery{EventID: e.EventID, EventType: e.EventType, EventSchemaVersion: e.EventSchemaVersion,
		Envelope: canonical, EnvelopeDigest: d, AttemptID: uuid.NewString(), AttemptNumber: 1,
		Member: route.Member{EventType: e.EventType, EventSchemaVersion: e.EventSchemaVersion, Destination: route.BillingFinalizationCoordinator,
			ConsumerName: route.BillingFinalizationCoordinatorConsumer, ExpectedReceiptType: route.BillingFinalizationCoordinatorConsumerReceipt,
			ExpectedReceiptSchemaVersion: route.ReceiptSchemaVersion1, ProjectionTarget: route.NotApplicable, Mandatory: true}}, nil
}

func fakeQuad(ref string) strict.Quadruple {
	d, err := digest.Of(digest.JCSSHA256V1, ref)
	if err != nil {
		panic(err)
	}
	return strict.Quadruple{Ref: ref, SchemaVersion: "1", DigestAlgorithmVersion: digest.JCSSHA256V1, Digest: d.Value}
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(fmt.Errorf("billingtest: %w", err))
	}
}
