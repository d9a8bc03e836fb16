package admintest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	billingc "github.com/oceanway/core/contracts/billing"
	"github.com/oceanway/core/contracts/digest"
	"github.com/oceanway/core/contracts/envelope"
	"github.com/oceanway/core/contracts/route"
	"github.com/oceanway/core/contracts/strict"
	"github.com/oceanway/core/internal/admin"
	"github.com/oceanway/core/internal/admission"
	"github.com/oceanway/core/internal/billing"
	"github.com/oceanway/core/internal/billing/billingtest"
	billingschema "github.com/oceanway/core/internal/billing/schema"
	"github.com/oceanway/core/internal/boundary"
	"github.com/oceanway/core/internal/db"
	"github.com/oceanway/core/internal/dbtest"
	"github.com/oceanway/core/internal/lines"
	meteringschema "github.com/oceanway/core/internal/metering/schema"
	"github.com/oceanway/core/internal/operations/projector"
	"github.com/oceanway/core/internal/outbox/transport"
	"github.com/oceanway/core/internal/release"
)

// The money world's amounts, in credits.
const (
	// WaitingReserved is the waiting reservation's amount; it is still held.
	WaitingReserved = 40
	// PendingReserved is the amount of the reservation still pending its
	// closure; it is still held.
	PendingReserved = 25
	// SettledReserved is the settled reservation's amount: SettledAmount
	// settled, the rest released.
	SettledReserved = 100
	SettledAmount   = "30"
	SettledReleased = "70"
	// ExposureAmount is the open exposure's amount.
	ExposureAmount = "7.5"
	// WaitingReason is the waiting reservation's fence reason.
	WaitingReason = billing.EvaluationReconciliationDeferred + ":target_above_reservation"
	// BlockedReason and BlockedStage are the blocked Work's evidence.
	BlockedReason = "disposition_differs"
	BlockedStage  = "eligibility_basis"
	// BlockedLane is the blocked Work's lane.
	BlockedLane = "eligibility_and_settlement_input"
)

// MoneyWorld is a core database with the billing line and a metering
// database, holding (issue 36, OBS-4):
//
//   - Waiting: a reservation whose fence is awaiting_finalization with
//     WaitingReason (admitted, closed, evaluated reconciliation_deferred);
//   - Pending: a reservation admitted and never closed (pending_evaluation);
//   - Settled: a reservation finalized settle_and_release_remainder;
//   - an open late settlement exposure (ExposureRef) of the settled
//     reservation;
//   - in metering, one active eligibility Work (BlockedWorkRef) with a
//     recorded Blocked fact, and one active Work that is not blocked.
//
// The reservations go through the owners' Go APIs: admission.Service.Admit
// (which opens the billing fence), billing.Coordinator.Consume of the
// run's closure, billing.RecordEvaluationTx, and billingtest.StoreDecisionTx
// with billing.CommitFinalizationTx, as the billing role. The exposure and
// the Metering rows have no light owner API: the exposure and its
// transition are written as the table owner with the guards off, as
// internal/demo's catch-up tests write theirs; the Metering Work chain
// (fence, Work, queue row, attempt, Blocked fact) is written as
// oceanway_metering with every guard on.
type MoneyWorld struct {
	Bundle *dbtest.Bundle
	Reader *admin.Reader

	Waiting, Pending, Settled admission.Result

	ExposureRef, ExposureRunID string

	BlockedWorkRef, BlockedRunID, UnblockedWorkRef string
}

// NewMoneyWorld builds the world in fresh core and metering databases.
func NewMoneyWorld(t testing.TB) *MoneyWorld {
	t.Helper()
	ctx := context.Background()
	b := dbtest.New(t, dbtest.Opts{Boundaries: []boundary.Boundary{boundary.Core, boundary.Metering}, Lines: lines.All(), MaxConns: 8})
	for _, p := range []*pgxpool.Pool{b.Core(), b.Metering()} {
		_, err := release.Bootstrap(ctx, p, release.BootstrapParams{
			ProjectionName: projector.ProjectionName, ProjectionVersion: 1, SourceRelease: "admin-test",
		})
		require.NoError(t, err)
	}
	w := &MoneyWorld{Bundle: b}
	billingPool := dbtest.RolePool(t, b.DSNs[boundary.Core], billingschema.RoleBilling)
	coordinator, err := billing.NewCoordinator(billingPool, billing.CoordinatorConfig{})
	require.NoError(t, err)

	svc := admission.New(b.Core())
	tenant, workspace, account := uuid.NewString(), uuid.NewString(), uuid.NewString()
	admit := func(credits int64) admission.Result {
		t.Helper()
		res, err := svc.Admit(ctx, admission.Request{AdmissionOperationID: uuid.NewString(), TenantKind: envelope.TenantOrganization,
			TenantID: tenant, WorkspaceID: workspace, BillingAccountID: account, ReservedCredits: credits})
		require.NoError(t, err)
		return res
	}
	closeRun := func(res admission.Result) (gen int64, op string) {
		t.Helper()
		_, err := coordinator.Consume(ctx, closureDelivery(t, res, tenant, workspace))
		require.NoError(t, err)
		require.NoError(t, b.Core().QueryRow(ctx, `SELECT f.active_work_generation, w.billing_finalization_operation_id::text
			  FROM billing.billing_finalization_fences f
			  JOIN billing.billing_finalization_works w
			    ON w.billing_finalization_fence_id = f.billing_finalization_fence_id AND w.work_generation = f.active_work_generation
			 WHERE f.billing_finalization_fence_id = $1`, res.FenceID).Scan(&gen, &op))
		return gen, op
	}

	// Waiting: closed, then evaluated reconciliation_deferred.
	w.Waiting = admit(WaitingReserved)
	gen, op := closeRun(w.Waiting)
	_, err = db.WithTxV(ctx, billingPool, func(ctx context.Context, tx pgx.Tx) (billing.EvaluationResult, error) {
		return billing.RecordEvaluationTx(ctx, tx, billing.Evaluation{FenceID: w.Waiting.FenceID, WorkGeneration: gen, OperationID: op,
			Outcome: billing.EvaluationReconciliationDeferred, ReasonCode: "target_above_reservation",
			ReasonDetail: "target above the reservation"})
	})
	require.NoError(t, err)

	// Pending: admitted, its closure never delivered.
	w.Pending = admit(PendingReserved)

	// Settled: closed, then committed settle_and_release_remainder.
	w.Settled = admit(SettledReserved)
	gen, op = closeRun(w.Settled)
	d := billing.Decision{FenceID: w.Settled.FenceID, WorkGeneration: gen, OperationID: op,
		Outcome: billingc.SuccessSettleAndReleaseRemainder, SettledAmount: SettledAmount,
		ReleasedAmount: SettledReleased, InputManifest: quad("fim-" + w.Settled.RunID),
		ValidationBundle: quad("fvb-" + w.Settled.RunID), DecisionObject: quad("bfd-" + w.Settled.RunID)}
	_, err = db.WithTxV(ctx, billingPool, func(ctx context.Context, tx pgx.Tx) (billing.CommitResult, error) {
		if err := billingtest.StoreDecisionTx(ctx, tx, d); err != nil {
			return billing.CommitResult{}, err
		}
		return billing.CommitFinalizationTx(ctx, tx, d, billing.CommitOpts{})
	})
	require.NoError(t, err)

	w.ExposureRunID = w.Settled.RunID
	w.ExposureRef = insertExposure(t, b.Core(), w.Settled, account)
	w.BlockedWorkRef, w.BlockedRunID = insertWork(t, b.DSNs[boundary.Metering], true)
	w.UnblockedWorkRef, _ = insertWork(t, b.DSNs[boundary.Metering], false)

	w.Reader = admin.NewReader(w.Boundaries(), admin.Config{})
	return w
}

// Boundaries are the world's pools by boundary name.
func (w *MoneyWorld) Boundaries() admin.Boundaries {
	return admin.Boundaries{"core": w.Bundle.Core(), "metering": w.Bundle.Metering()}
}

func quad(ref string) strict.Quadruple {
	return strict.Quadruple{Ref: ref, SchemaVersion: "1", DigestAlgorithmVersion: digest.JCSSHA256V1, Digest: hexOf(ref)}
}

func hexOf(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

// closureDelivery is the first delivery of res's
// execution.run-finalization.closed@1 to the billing coordinator.
func closureDelivery(t testing.TB, res admission.Result, tenant, workspace string) transport.Delivery {
	t.Helper()
	p := envelope.ExecutionRunFinalizationClosedV1Payload{BillingReservationID: res.BillingReservationID,
		BillingAccountID: res.BillingAccountID, RunID: res.RunID, ClosureOperationID: uuid.NewString(),
		RunExecutionFinalizationStateVersion: 1, AttemptCount: 1}
	p.SetRunAdmissionManifest(res.Manifest)
	p.SetRunExecutionFinalization(quad("ref-" + res.RunID))
	p.SetAttemptSetManifest(quad("asm-" + res.RunID))
	e, err := envelope.Build(envelope.Envelope{
		EventID: uuid.NewString(), EventType: envelope.ExecutionRunFinalizationClosedV1, EventSchemaVersion: "1",
		AggregateType: envelope.AggregateRun, AggregateID: res.RunID, AggregateRevision: 1,
		TenantKind: envelope.TenantOrganization, TenantID: tenant, WorkspaceID: workspace,
		CorrelationID: res.CorrelationID, OperationID: p.ClosureOperationID, OccurredAt: time.Now().UTC(), Payload: p.Map(),
	})
	require.NoError(t, err)
	canonical, err := e.Canonical()
	require.NoError(t, err)
	d, err := e.Digest()
	require.NoError(t, err)
	return transport.Delivery{EventID: e.EventID, EventType: e.EventType, EventSchemaVersion: e.EventSchemaVersion,
		Envelope: canonical, EnvelopeDigest: d, AttemptID: uuid.NewString(), AttemptNumber: 1,
		Member: route.Member{EventType: e.EventType, EventSchemaVersion: e.EventSchemaVersion,
			Destination: route.BillingFinalizationCoordinator, ConsumerName: route.BillingFinalizationCoordinatorConsumer,
			ExpectedReceiptType: route.BillingFinalizationCoordinatorConsumerReceipt, ExpectedReceiptSchemaVersion: route.ReceiptSchemaVersion1,
			ProjectionTarget: route.NotApplicable, Mandatory: true}}
}

// insertExposure records an open late settlement exposure of res (and its
// late_settlement_exposure transition) as the table owner with triggers and
// foreign keys off (session_replication_role = replica): the catch-up
// worker that writes them needs a settled catch-up fence and a Metering
// validation. The rows satisfy every CHECK of their tables.
func insertExposure(t testing.TB, core *pgxpool.Pool, res admission.Result, account string) string {
	t.Helper()
	dim, ref, transitionRef := uuid.NewString(), "lse-"+uuid.NewString(), "bst-"+uuid.NewString()
	body, err := json.Marshal(map[string]any{"lateSettlementExposureRef": ref, "billingReservationId": res.BillingReservationID,
		"runId": res.RunID, "chargeDimensionKey": "text.output_tokens", "exposureAmount": ExposureAmount,
		"exposureState": "open", "automaticCharge": "blocked", "settlementDimensionId": dim, "settlementStateRevision": 2})
	require.NoError(t, err)
	require.NoError(t, db.WithTx(context.Background(), core, func(ctx context.Context, tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SET LOCAL session_replication_role = replica`); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO billing.settlement_transitions (settlement_dimension_id,
			from_settlement_state_revision, to_settlement_state_revision, billing_reservation_id, billing_account_id,
			transition_ref, transition_schema_version, transition_digest_algorithm_version, transition_digest,
			transition_kind, settled_amount_before, settled_amount_after, transition_amount, settlement_input_state_version,
			validation_operation_id, work_generation, event_id, event_envelope_sha256, transition_body, committed_at)
			VALUES ($1, 1, 2, $2, $3, $4, '1', 'jcs-sha256-v1', $5, 'late_settlement_exposure', $6, $6, $7, 2, $8, 1, $9, $5, '{}', now())`,
			dim, res.BillingReservationID, account, transitionRef, hexOf(transitionRef), SettledAmount, ExposureAmount,
			uuid.NewString(), uuid.NewString()); err != nil {
			return fmt.Errorf("insert transition: %w", err)
		}
		_, err := tx.Exec(ctx, `INSERT INTO billing.late_settlement_exposures (late_settlement_exposure_id, settlement_dimension_id,
			settlement_state_revision, billing_reservation_id, billing_account_id, exposure_ref, exposure_schema_version,
			exposure_digest_algorithm_version, exposure_digest, exposure_amount, exposure_state, automatic_charge, exposure_body, recorded_at)
			VALUES ($1, $2, 2, $3, $4, $5, '1', 'jcs-sha256-v1', $6, $7, 'open', 'blocked', $8, now())`,
			uuid.NewString(), dim, res.BillingReservationID, account, ref, hexOf(ref), ExposureAmount, string(body))
		if err != nil {
			return fmt.Errorf("insert exposure: %w", err)
		}
		return nil
	}))
	return ref
}

// insertWork writes an active eligibility Work of a new execution attempt
// as oceanway_metering, every guard on: its input fence (latest generation
// 1), the Work, its queue row and a first attempt; blocked adds a Blocked
// fact on that attempt whose evidence names BlockedStage, BlockedReason and
// the run. It returns the Work ref and the run id.
func insertWork(t testing.TB, dsn string, blocked bool) (string, string) {
	t.Helper()
	pool := dbtest.RolePool(t, dsn, meteringschema.RoleMetering)
	attempt, runID, token := uuid.NewString(), uuid.NewString(), uuid.NewString()
	workRef := "miw-" + uuid.NewString()
	require.NoError(t, db.WithTx(context.Background(), pool, func(ctx context.Context, tx pgx.Tx) error {
		for _, s := range []struct {
			sql  string
			args []any
		}{
			{`INSERT INTO metering.input_fences (execution_attempt_id, latest_eligibility_work_generation) VALUES ($1, 1)`,
				[]any{attempt}},
			{`INSERT INTO metering.input_works (work_ref, work_schema_version, work_digest_algorithm_version, work_digest,
				execution_attempt_id, lane_kind, work_generation, operation_id, trigger_digest, work_body)
				VALUES ($1, '1', 'jcs-sha256-v1', $2, $3, $4, 1, $5, $2, '{}')`,
				[]any{workRef, hexOf(workRef), attempt, BlockedLane, uuid.NewString()}},
			{`INSERT INTO metering.pending_works (work_ref, lane_kind, lease_until) VALUES ($1, $2, now() + interval '1 hour')`,
				[]any{workRef, BlockedLane}},
			{`INSERT INTO metering.work_attempts (work_ref, attempt_number, fencing_token, lease_until)
				VALUES ($1, 1, $2, now() + interval '1 hour')`, []any{workRef, token}},
		} {
			if _, err := tx.Exec(ctx, s.sql, s.args...); err != nil {
				return err
			}
		}
		if !blocked {
			return nil
		}
		blockedRef, evidenceRef := "mwb-"+uuid.NewString(), "epce-"+uuid.NewString()
		blockedBody, err := json.Marshal(map[string]any{"meteringInputWorkAttemptBlockedRef": blockedRef, "meteringInputWorkRef": workRef,
			"attemptNumber": 1, "fencingToken": token,
			"blockingCause": map[string]any{"kind": "eligibility_processing_conflict", "eligibilityProcessingConflictEvidenceRef": evidenceRef}})
		if err != nil {
			return err
		}
		evidenceBody, err := json.Marshal(map[string]any{"eligibilityProcessingConflictEvidenceRef": evidenceRef, "runId": runID,
			"executionAttemptId": attempt, "validationStage": BlockedStage, "reasonCode": BlockedReason})
		if err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `INSERT INTO metering.work_blocks (work_ref, attempt_number, fencing_token, blocked_ref, blocked_digest,
			blocked_body, evidence_ref, evidence_digest, evidence_body) VALUES ($1, 1, $2, $3, $4, $5, $6, $7, $8)`,
			workRef, token, blockedRef, hexOf(blockedRef), string(blockedBody), evidenceRef, hexOf(evidenceRef), string(evidenceBody))
		return err
	}))
	return workRef, runID
}

// AddBlockedWork adds one more blocked active Work to the metering database
// and returns its Work ref and run id.
func (w *MoneyWorld) AddBlockedWork(t testing.TB) (string, string) {
	t.Helper()
	return insertWork(t, w.Bundle.DSNs[boundary.Metering], true)
}
