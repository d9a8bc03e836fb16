// Package operationstest holds test helpers for the Operations projector and
// read model: deterministic sample operations (run.created@2.0,
// wallet.reserved@2.0, billing.finalization.committed@1), sample fences in
// reconciliation (billing.finalization-reconciliation.case-requested@1 and
// billing.finalization-reconciliation-resolution.applied@1 over reserved
// case identities), frozen core_operations members, deliveries, fake
// Billing owner reads and a fingerprint of the projection state.
package operationstest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/oceanway/core/contracts/digest"
	"github.com/oceanway/core/contracts/envelope"
	"github.com/oceanway/core/contracts/route"
	"github.com/oceanway/core/contracts/strict"
	"github.com/oceanway/core/internal/db"
	"github.com/oceanway/core/internal/operations/projector"
	"github.com/oceanway/core/internal/outbox/transport"
	"github.com/oceanway/core/internal/ownerread/coreread"
)

// Target returns the projection target of version v.
func Target(v int64) route.ProjectionTarget { return route.Required(projector.ProjectionName, v) }

// Member returns the frozen core_operations member of a pair for projection version v.
func Member(eventType, eventSchemaVersion string, v int64) route.Member {
	return route.Member{
		EventType: eventType, EventSchemaVersion: eventSchemaVersion,
		Destination: route.CoreOperations, ConsumerName: route.OperationsProjector,
		ExpectedReceiptType: route.OperationsProjectionAppliedReceipt, ExpectedReceiptSchemaVersion: route.ReceiptSchemaVersion1,
		ProjectionTarget: Target(v), Mandatory: true,
	}
}

// Delivery is the delivery of e to member m, as a dispatcher hands it over.
func Delivery(e *envelope.Envelope, m route.Member) transport.Delivery {
	canonical, err := e.Canonical()
	if err != nil {
		panic(err)
	}
	d, err := e.Digest()
	if err != nil {
		panic(err)
	}
	return transport.Delivery{
		EventID: e.EventID, EventType: e.EventType, EventSchemaVersion: e.EventSchemaVersion,
		Envelope: canonical, EnvelopeDigest: d, Member: m, AttemptID: uuid.NewString(), AttemptNumber: 1,
	}
}

// DeliveryV1 is Delivery to the version-1 member of e's pair.
func DeliveryV1(e *envelope.Envelope) transport.Delivery {
	return Delivery(e, Member(e.EventType, e.EventSchemaVersion, 1))
}

// ID returns a deterministic UUID for sample n, slot k.
func ID(n, k int) string { return fmt.Sprintf("00000000-0000-7000-8%03d-%012d", k, n) }

func hexOf(label string) string {
	sum := sha256.Sum256([]byte(label))
	return hex.EncodeToString(sum[:])
}

// Sample identities shared by every sample operation.
var (
	TenantID    = ID(0, 901)
	WorkspaceID = ID(0, 902)
	ProjectID   = ID(0, 903)
	occurred    = time.Date(2026, 9, 4, 10, 0, 0, 0, time.UTC)
)

// Operation is one sample operation's three events and identities.
type Operation struct {
	N                               int
	RunID, AccountID, ReservationID string
	CorrelationID, OperationID      string
	Run, Wallet, Finalization       *envelope.Envelope
}

// Events returns the operation's events in applicable order.
func (o Operation) Events() []*envelope.Envelope {
	return []*envelope.Envelope{o.Run, o.Wallet, o.Finalization}
}

// quad is a sample content-address quadruple whose digest is derived from ref.
func quad(ref string) strict.Quadruple {
	return strict.Quadruple{Ref: ref, SchemaVersion: "1", DigestAlgorithmVersion: digest.JCSSHA256V1, Digest: hexOf(ref)}
}

// Sample builds sample operation n (deterministic: same n, same events).
func Sample(n int) Operation {
	o := Operation{N: n, RunID: ID(n, 1), AccountID: ID(n, 2), ReservationID: ID(n, 3), CorrelationID: ID(n, 4), OperationID: ID(n, 5)}
	at := occurred.Add(time.Duration(n) * time.Second)
	base := func(eventID, eventType, schemaVersion, aggType, aggID string, rev int64, causation string, off time.Duration, p map[string]any) *envelope.Envelope {
		e, err := envelope.Build(envelope.Envelope{
			EventID: eventID, EventType: eventType, EventSchemaVersion: schemaVersion,
			AggregateType: aggType, AggregateID: aggID, AggregateRevision: rev,
			TenantKind: envelope.TenantOrganization, TenantID: TenantID, WorkspaceID: WorkspaceID, ProjectID: ProjectID,
			CorrelationID: o.CorrelationID, CausationID: causation, OperationID: o.OperationID,
			OccurredAt: at.Add(off), Payload: p,
		})
		if err != nil {
			panic(fmt.Sprintf("operationstest: sample %s: %v", eventType, err))
		}
		return e
	}
	manifest := quad(fmt.Sprintf("run-admission-manifest-%d", n))
	credits := envelope.SettlementEconomicIdentityV1{Kind: "credits"}
	rp := envelope.RunCreatedV2_0Payload{RunID: o.RunID, BillingAccountID: o.AccountID, BillingReservationID: o.ReservationID}
	rp.SetRunAdmissionManifest(manifest)
	o.Run = base(ID(n, 6), envelope.RunCreatedV2, "2.0", envelope.AggregateRun, o.RunID, 1, "", 0, rp.Map())

	wp := envelope.WalletReservedV2_0Payload{BillingReservationID: o.ReservationID, BillingAccountID: o.AccountID, RunID: o.RunID,
		ReservationEconomicIdentity: credits, ReservedAmount: "1500"}
	wp.SetRunAdmissionManifest(manifest)
	o.Wallet = base(ID(n, 7), envelope.WalletReservedV2, "2.0", envelope.AggregateBillingReservation, o.ReservationID, 1, o.Run.EventID, time.Millisecond, wp.Map())

	fp := envelope.BillingFinalizationCommittedV1Payload{BillingReservationID: o.ReservationID, BillingAccountID: o.AccountID, RunID: o.RunID,
		BillingFinalizationFenceID: ID(n, 9), BillingFinalizationOperationID: ID(n, 10),
		FinalizationFenceRevision: 2, BillingFinalizationDecision: "settle_and_release_remainder",
		ReservationEconomicIdentity: credits, SettledAmount: "1234.5", ReleasedAmount: "265.5"}
	fp.SetBillingFinalizationCommitted(quad(fmt.Sprintf("billing-finalization-committed-%d", n)))
	o.Finalization = base(ID(n, 8), envelope.BillingFinalizationCommittedV1, "1", envelope.AggregateBillingReservation, o.ReservationID, 2, o.Wallet.EventID, time.Hour, fp.Map())
	return o
}

// Rebuild returns a copy of e changed by edit and validated again.
func Rebuild(e *envelope.Envelope, edit func(*envelope.Envelope)) *envelope.Envelope {
	c := *e
	c.Payload = e.ToJSON()["payload"].(map[string]any)
	edit(&c)
	out, err := envelope.Build(c)
	if err != nil {
		panic(fmt.Sprintf("operationstest: rebuild %s: %v", e.EventType, err))
	}
	return out
}

// BillingReads is a fake of the Billing owner reads the projector calls
// (readBillingFinalizationCommitted, readBillingFinalizationDecisionForOperations,
// readFinalizationReconciliationResolutionAppliedForOperations): it answers
// Answer (or Err), or for the two case reads what SetDecision and
// SetResolution set, and records the requests.
type BillingReads struct {
	mu       sync.Mutex
	Answer   projector.OwnerAnswer
	Err      error
	Requests []coreread.FinalizationCommittedRead
	// DecisionRequests and ResolutionRequests are the case reads' requests.
	DecisionRequests   []coreread.FinalizationDecisionForOperationsRead
	ResolutionRequests []coreread.ResolutionAppliedForOperationsRead
	// LateExposureRequests are readLateSettlementExposureForOperations'.
	LateExposureRequests []coreread.LateExposureCaseRequestRead
	// LateResultRequests are readLateSettlementCommandResultForOperations';
	// CaseResolutionRequests readBillingCaseResolutionAppliedForOperations'.
	LateResultRequests     []coreread.LateCommandResultRead
	CaseResolutionRequests []coreread.CaseResolutionAppliedRead

	decision, resolution, lateExposure, lateResult, caseResolution *fakeAnswer
}

type fakeAnswer struct {
	ans projector.OwnerAnswer
	err error
}

// Found returns a fake that answers found.
func Found() *BillingReads { return &BillingReads{Answer: projector.OwnerFound} }

// Set changes the answer.
func (b *BillingReads) Set(ans projector.OwnerAnswer, err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.Answer, b.Err = ans, err
}

// SetDecision sets the answer of readBillingFinalizationDecisionForOperations
// (instead of Answer/Err).
func (b *BillingReads) SetDecision(ans projector.OwnerAnswer, err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.decision = &fakeAnswer{ans, err}
}

// SetResolution sets the answer of
// readFinalizationReconciliationResolutionAppliedForOperations (instead of
// Answer/Err).
func (b *BillingReads) SetResolution(ans projector.OwnerAnswer, err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.resolution = &fakeAnswer{ans, err}
}

// SetLateExposure sets the answer of readLateSettlementExposureForOperations
// (instead of Answer/Err).
func (b *BillingReads) SetLateExposure(ans projector.OwnerAnswer, err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.lateExposure = &fakeAnswer{ans, err}
}

// ReadLateSettlementExposureForOperations implements
// coreread.LateExposureCaseRequestReader.
func (b *BillingReads) ReadLateSettlementExposureForOperations(_ context.Context, req coreread.LateExposureCaseRequestRead) (projector.OwnerAnswer, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.LateExposureRequests = append(b.LateExposureRequests, req)
	return b.answer(b.lateExposure)
}

// SetLateResult sets the answer of
// readLateSettlementCommandResultForOperations (instead of Answer/Err).
func (b *BillingReads) SetLateResult(ans projector.OwnerAnswer, err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.lateResult = &fakeAnswer{ans, err}
}

// SetCaseResolution sets the answer of
// readBillingCaseResolutionAppliedForOperations (instead of Answer/Err).
func (b *BillingReads) SetCaseResolution(ans projector.OwnerAnswer, err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.caseResolution = &fakeAnswer{ans, err}
}

// ReadLateSettlementCommandResultForOperations implements
// coreread.LateCommandResultReader.
func (b *BillingReads) ReadLateSettlementCommandResultForOperations(_ context.Context, req coreread.LateCommandResultRead) (projector.OwnerAnswer, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.LateResultRequests = append(b.LateResultRequests, req)
	return b.answer(b.lateResult)
}

// ReadBillingCaseResolutionAppliedForOperations implements
// coreread.CaseResolutionAppliedReader.
func (b *BillingReads) ReadBillingCaseResolutionAppliedForOperations(_ context.Context, req coreread.CaseResolutionAppliedRead) (projector.OwnerAnswer, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.CaseResolutionRequests = append(b.CaseResolutionRequests, req)
	return b.answer(b.caseResolution)
}

func (b *BillingReads) answer(a *fakeAnswer) (projector.OwnerAnswer, error) {
	if a != nil {
		return a.ans, a.err
	}
	return b.Answer, b.Err
}

// ReadBillingFinalizationDecisionForOperations implements
// coreread.FinalizationDecisionForOperationsReader.
func (b *BillingReads) ReadBillingFinalizationDecisionForOperations(_ context.Context, req coreread.FinalizationDecisionForOperationsRead) (projector.OwnerAnswer, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.DecisionRequests = append(b.DecisionRequests, req)
	return b.answer(b.decision)
}

// ReadFinalizationReconciliationResolutionAppliedForOperations implements
// coreread.ResolutionAppliedForOperationsReader.
func (b *BillingReads) ReadFinalizationReconciliationResolutionAppliedForOperations(_ context.Context, req coreread.ResolutionAppliedForOperationsRead) (projector.OwnerAnswer, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.ResolutionRequests = append(b.ResolutionRequests, req)
	return b.answer(b.resolution)
}

// Wire sets every Billing read of cfg that is nil to b.
func (b *BillingReads) Wire(cfg projector.Config) projector.Config {
	if cfg.BillingReads == nil {
		cfg.BillingReads = b
	}
	if cfg.FinalizationDecisionReads == nil {
		cfg.FinalizationDecisionReads = b
	}
	if cfg.ResolutionAppliedReads == nil {
		cfg.ResolutionAppliedReads = b
	}
	if cfg.LateExposureReads == nil {
		cfg.LateExposureReads = b
	}
	if cfg.LateResultReads == nil {
		cfg.LateResultReads = b
	}
	if cfg.CaseResolutionReads == nil {
		cfg.CaseResolutionReads = b
	}
	return cfg
}

// ReadBillingFinalizationCommitted implements projector.BillingReads.
func (b *BillingReads) ReadBillingFinalizationCommitted(_ context.Context, req coreread.FinalizationCommittedRead) (projector.OwnerAnswer, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.Requests = append(b.Requests, req)
	return b.Answer, b.Err
}

// stateSQL fingerprints everything the projector decided for one projection
// target: receipts (without ref and appliedAt), aggregates, mutations,
// summaries (without times), the identifier index, reservations still
// waiting for their Run, finalization cases (without the event and time of
// the transaction that materialised or closed them), case resolutions and
// successors still pending, unresolved gaps and unsupported records. Audit
// of how the state was reached (resolved gaps, linked or taken pending
// rows, effects, build summaries) is left out.
const stateSQL = `
SELECT COALESCE(string_agg(x, E'\n' ORDER BY x), '') FROM (
  SELECT concat_ws('|', 'receipt', event_id, event_type, event_envelope_sha256, receipt_schema_version, receipt_digest)
    FROM operations.applied_receipts WHERE projection_name = @projection_name AND projection_version = @projection_version
  UNION ALL
  SELECT concat_ws('|', 'aggregate', aggregate_type, aggregate_id, applied_revision, last_event_id)
    FROM operations.projection_aggregates WHERE projection_name = @projection_name AND projection_version = @projection_version
  UNION ALL
  SELECT concat_ws('|', 'event', event_id, aggregate_type, aggregate_id, aggregate_revision, run_id, billing_reservation_id,
         correlation_id, causation_id, operation_id, occurred_at)
    FROM operations.projected_events WHERE projection_name = @projection_name AND projection_version = @projection_version
  UNION ALL
  SELECT concat_ws('|', 'summary', run_id, operation_id, correlation_id, tenant_kind, tenant_id, workspace_id, project_id,
         billing_account_id, billing_reservation_id, run_admission_manifest_ref, run_admission_manifest_digest, run_event_id,
         run_occurred_at, reservation_state, reservation_event_id, reservation_occurred_at, reservation_economic_identity,
         reserved_amount, finalization_event_id, finalization_occurred_at, billing_finalization_decision, settled_amount, released_amount)
    FROM operations.operation_summaries WHERE projection_name = @projection_name AND projection_version = @projection_version
  UNION ALL
  SELECT concat_ws('|', 'index', identifier_kind, identifier_value, run_id)
    FROM operations.identifier_index WHERE projection_name = @projection_name AND projection_version = @projection_version
  UNION ALL
  SELECT concat_ws('|', 'pending', billing_reservation_id, run_id, wallet_event_id, finalization_event_id)
    FROM operations.pending_unlinked_reservations WHERE projection_name = @projection_name AND projection_version = @projection_version AND status = 'pending'
  UNION ALL
  SELECT concat_ws('|', 'case', reconciliation_case_ref, billing_finalization_fence_id, reconciliation_generation,
         case_identity_ref, case_identity_digest, case_request_operation_id, predecessor_reconciliation_case_ref,
         predecessor_generation, predecessor_case_identity_ref, predecessor_case_identity_digest, billing_reservation_id,
         billing_account_id, run_id, tenant_kind, tenant_id, workspace_id, project_id, decision_ref, decision_digest,
         triggering_work_ref, triggering_work_digest, triggering_work_generation, billing_finalization_operation_id,
         reconciliation_reason_code, request_event_id, request_event_envelope_sha256, requested_at, state,
         resolution_event_id, resolution_event_envelope_sha256, resolution_operation_id, resolution_applied_ref,
         resolution_applied_digest, resolution_actor_workforce_principal_id, resolved_at)
    FROM operations.finalization_cases WHERE projection_name = @projection_name AND projection_version = @projection_version
  UNION ALL
  SELECT concat_ws('|', 'pending_case_resolution', reconciliation_case_ref, reconciliation_generation, resolution_event_id)
    FROM operations.pending_finalization_case_resolutions
   WHERE projection_name = @projection_name AND projection_version = @projection_version AND status = 'pending'
  UNION ALL
  SELECT concat_ws('|', 'pending_case_successor', reconciliation_case_ref, reconciliation_generation, request_event_id)
    FROM operations.pending_finalization_case_successors
   WHERE projection_name = @projection_name AND projection_version = @projection_version AND status = 'pending'
  UNION ALL
  SELECT concat_ws('|', 'late_case', reconciliation_case_ref, settlement_dimension_id, case_generation, case_identity_ref,
         case_identity_schema_version, case_identity_digest_algorithm_version, case_identity_digest, case_request_operation_id,
         billing_reservation_id, billing_account_id, run_id, run_step_id, execution_attempt_id, charge_dimension_key,
         tenant_kind, tenant_id, workspace_id, project_id, state, resolution_event_id)
    FROM operations.late_settlement_cases WHERE projection_name = @projection_name AND projection_version = @projection_version
  UNION ALL
  SELECT concat_ws('|', 'late_case_exposure', late_settlement_exposure_id, reconciliation_case_ref, exposure_ref,
         exposure_schema_version, exposure_digest_algorithm_version, exposure_digest, exposure_amount, request_event_id,
         request_event_envelope_sha256, requested_at, resolution_event_id, resolution_event_envelope_sha256, resolution_operation_id,
         resolution_source, resolution_applied_ref, resolution_applied_digest, resolved_at)
    FROM operations.late_settlement_case_exposures WHERE projection_name = @projection_name AND projection_version = @projection_version
  UNION ALL
  SELECT concat_ws('|', 'gap', waiting_event_id, aggregate_type, aggregate_id, waiting_revision)
    FROM operations.revision_gaps WHERE projection_name = @projection_name AND projection_version = @projection_version AND resolved_at IS NULL
  UNION ALL
  SELECT concat_ws('|', 'unsupported', event_id, event_type)
    FROM operations.unsupported_events WHERE projection_name = @projection_name AND projection_version = @projection_version AND resolved_at IS NULL
) t(x)`

// State returns the projection state fingerprint of target t.
func State(ctx context.Context, q db.Executor, t route.ProjectionTarget) (string, error) {
	rows, err := q.Query(ctx, stateSQL, targetArgs(t))
	if err != nil {
		return "", err
	}
	return pgx.CollectExactlyOneRow(rows, pgx.RowTo[string])
}

func targetArgs(t route.ProjectionTarget) pgx.NamedArgs {
	return pgx.NamedArgs{"projection_name": t.Name, "projection_version": t.Version}
}

// Count returns the number of rows of an operations table for target t.
func Count(ctx context.Context, q db.Executor, table string, t route.ProjectionTarget) (int, error) {
	rows, err := q.Query(ctx, "SELECT count(*) FROM operations."+table+
		" WHERE projection_name = @projection_name AND projection_version = @projection_version", targetArgs(t))
	if err != nil {
		return 0, err
	}
	n, err := pgx.CollectExactlyOneRow(rows, pgx.RowTo[int64])
	return int(n), err
}

// QueryOne runs sql with named arguments and reads its single row with fn
// (pgx.RowToStructByName for columns read by name, pgx.RowTo for one value).
func QueryOne[T any](ctx context.Context, q db.Executor, fn pgx.RowToFunc[T], sql string, args pgx.NamedArgs) (T, error) {
	rows, err := q.Query(ctx, sql, args)
	if err != nil {
		var zero T
		return zero, err
	}
	return pgx.CollectExactlyOneRow(rows, fn)
}
