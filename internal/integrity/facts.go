package integrity

import (
	"bytes"
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/oceanway/core/contracts/billing"
	"github.com/oceanway/core/contracts/deliveryset"
	"github.com/oceanway/core/contracts/digest"
	"github.com/oceanway/core/contracts/envelope"
	"github.com/oceanway/core/contracts/execution"
	"github.com/oceanway/core/contracts/jcs"
	"github.com/oceanway/core/contracts/kinds"
	"github.com/oceanway/core/contracts/meterfacts"
	"github.com/oceanway/core/contracts/receipt"
	"github.com/oceanway/core/contracts/reconciliation"
	"github.com/oceanway/core/contracts/settlement"
	"github.com/oceanway/core/contracts/strict"
	"github.com/oceanway/core/internal/boundary"
)

// Fact is one table of stored content-addressed bodies: where the body and
// its stored address live and how its digest is computed. Exactly one of
// Kind, Kinds, KindColumn, Self, Bare or Whole says how.
type Fact struct {
	// Boundaries holding the table (every producer database for outbox).
	Boundaries []boundary.Boundary
	Table      string   // schema.table
	Key        []string // columns that name a row
	Body       string   // the canonical body (RFC 8785 text)
	Digest     string   // the stored digest column
	Alg        string   // the stored digest algorithm column ("" when none)
	Ref        string   // the stored ref column ("" when none)
	// Prefix of the body's own quadruple ({prefix}Ref, ...{prefix}Digest);
	// "" when the body does not carry its address.
	Prefix string

	// Kind is a contracts/kinds name: strict decode, refinement rules and
	// the recomputed digest are the contract's own.
	Kind string
	// KindColumn names the column holding the row's kind (one of Kinds,
	// whose prefixes are KindPrefix).
	KindColumn string
	// Kinds are tried in order when the row does not say its kind (the
	// first that decodes wins); KindPrefix gives each one's prefix.
	Kinds      []string
	KindPrefix map[string]string
	// Self is the self-addressing of an object defined outside contracts/
	// (candidate = body without its ref, digest and own time fields).
	Self *strict.SelfAddressed
	// Bare: the candidate is the body without the three address fields
	// ({prefix}Ref, {prefix}DigestAlgorithmVersion, {prefix}Digest).
	Bare bool
	// Whole: the digest is the digest of the whole body.
	Whole bool

	// Extra checks a decoded row further (nil: nothing more).
	Extra func(body []byte, row map[string]string) []string
	// ExtraColumns are the columns Extra reads.
	ExtraColumns []string
}

// Exempt is a body column the verifier knows and deliberately does not
// recompute, with the reason.
type Exempt struct {
	Table, Column, Reason string
}

var (
	core      = []boundary.Boundary{boundary.Core}
	exec      = []boundary.Boundary{boundary.Execution}
	gateway   = []boundary.Boundary{boundary.Gateway}
	metering  = []boundary.Boundary{boundary.Metering}
	producers = boundary.All

	// Objects of internal/billing/objects.go (not in contracts/): their
	// self-addressing as its seal computes it.
	triggerSnapshotSelf  = strict.SelfAddressed{Prefix: "billingFinalizationTriggerSnapshot", TimeFields: []string{"capturedAt"}}
	finalizationWorkSelf = strict.SelfAddressed{Prefix: "billingFinalizationWork", TimeFields: []string{"createdAt"}}
)

// Facts lists every stored content-addressed body of the four owner
// databases (a test fails when a *_body column exists that is neither here
// nor in Exempts).
var Facts = []Fact{
	// core: admission
	{Boundaries: core, Table: "admission.admission_requests", Key: []string{"admission_operation_id"}, Body: "request_body",
		Digest: "request_digest", Alg: "request_digest_algorithm_version", Whole: true},
	{Boundaries: core, Table: "admission.run_admission_manifests", Key: []string{"run_admission_manifest_ref"}, Body: "manifest_body",
		Digest: "run_admission_manifest_digest", Alg: "run_admission_manifest_digest_algorithm_version", Ref: "run_admission_manifest_ref",
		Prefix: "runAdmissionManifest", Kind: execution.KindRunAdmissionManifest},
	// core: billing finalization
	{Boundaries: core, Table: "billing.billing_finalization_trigger_snapshots", Key: []string{"trigger_snapshot_ref"}, Body: "snapshot_body",
		Digest: "trigger_snapshot_digest", Alg: "trigger_snapshot_digest_algorithm_version", Ref: "trigger_snapshot_ref",
		Prefix: triggerSnapshotSelf.Prefix, Self: &triggerSnapshotSelf},
	{Boundaries: core, Table: "billing.billing_finalization_works", Key: []string{"billing_finalization_fence_id", "work_generation"}, Body: "work_body",
		Digest: "work_digest", Alg: "work_digest_algorithm_version", Ref: "work_ref",
		Prefix: finalizationWorkSelf.Prefix, Self: &finalizationWorkSelf},
	{Boundaries: core, Table: "billing.coordinator_receipts", Key: []string{"consumer_name", "event_id"}, Body: "receipt_body",
		Digest: "receipt_digest", Alg: "receipt_digest_algorithm_version", Ref: "receipt_ref",
		Prefix: "billingFinalizationCoordinatorConsumerReceipt", Kind: receipt.KindBillingFinalizationCoordinatorConsumerReceipt},
	{Boundaries: core, Table: "billing.finalization_committed", Key: []string{"committed_ref"}, Body: "committed_body",
		Digest: "committed_digest", Alg: "committed_digest_algorithm_version", Ref: "committed_ref",
		Prefix: billing.PrefixCommitted, Kind: billing.KindBillingFinalizationCommitted, Extra: committedColumns,
		ExtraColumns: []string{"billing_reservation_id", "decision", "reserved_amount", "settled_amount", "released_amount", "posting_group_id"}},
	{Boundaries: core, Table: "billing.finalization_decisions", Key: []string{"decision_ref"}, Body: "decision_body",
		Digest: "decision_digest", Alg: "decision_digest_algorithm_version", Ref: "decision_ref",
		Prefix: billing.PrefixDecision, Kind: billing.KindBillingFinalizationDecision},
	{Boundaries: core, Table: "billing.finalization_input_manifests", Key: []string{"manifest_ref"}, Body: "manifest_body",
		Digest: "manifest_digest", Alg: "manifest_digest_algorithm_version", Ref: "manifest_ref",
		Prefix: billing.PrefixInputManifest, Kind: billing.KindFinalizationInputManifest},
	{Boundaries: core, Table: "billing.finalization_owner_receipts", Key: []string{"receipt_ref"}, Body: "receipt_body",
		Digest: "receipt_digest", Alg: "receipt_digest_algorithm_version", Ref: "receipt_ref",
		KindColumn: "receipt_kind", KindPrefix: map[string]string{
			execution.KindRunExecutionFinalizationReceipt:          execution.PrefixRunExecutionFinalizationReceipt,
			meterfacts.KindSettlementInputCurrentValidationReceipt: "settlementInputCurrentValidationReceipt",
			execution.KindAvailabilityCurrentValidationReceipt:     settlement.PrefixAvailabilityValidationReceipt,
		}},
	{Boundaries: core, Table: "billing.finalization_validation_bundles", Key: []string{"bundle_ref"}, Body: "bundle_body",
		Digest: "bundle_digest", Alg: "bundle_digest_algorithm_version", Ref: "bundle_ref",
		Prefix: billing.PrefixValidationBundle, Kind: billing.KindFinalizationValidationBundle},
	// core: billing settlement catch-up
	{Boundaries: core, Table: "billing.late_settlement_exposures", Key: []string{"late_settlement_exposure_id"}, Body: "exposure_body",
		Digest: "exposure_digest", Alg: "exposure_digest_algorithm_version", Ref: "exposure_ref",
		Prefix: "lateSettlementExposure", Kind: billing.KindLateSettlementExposure},
	{Boundaries: core, Table: "billing.settlement_catch_up_blocks", Key: []string{"settlement_dimension_id", "work_generation", "attempt_number"}, Body: "blocked_body",
		Digest: "blocked_digest", Alg: "blocked_digest_algorithm_version", Ref: "blocked_ref",
		Prefix: "billingSettlementCatchUpWorkAttemptBlocked", Kind: receipt.KindBillingSettlementCatchUpWorkAttemptBlocked},
	{Boundaries: core, Table: "billing.settlement_catch_up_finishes", Key: []string{"settlement_dimension_id", "work_generation"}, Body: "finished_body",
		Digest: "finished_digest", Alg: "finished_digest_algorithm_version", Ref: "finished_ref",
		Prefix: "billingSettlementCatchUpWorkAttemptFinished", Kind: billing.KindBillingSettlementCatchUpWorkAttemptFinished},
	{Boundaries: core, Table: "billing.settlement_catch_up_receipts", Key: []string{"consumer_name", "event_id"}, Body: "receipt_body",
		Digest: "receipt_digest", Alg: "receipt_digest_algorithm_version", Ref: "receipt_ref",
		Prefix: "billingSettlementCatchUpConsumerReceipt", Kind: receipt.KindBillingSettlementCatchUpConsumerReceipt},
	{Boundaries: core, Table: "billing.settlement_catch_up_works", Key: []string{"settlement_dimension_id", "work_generation"}, Body: "work_body",
		Digest: "work_digest", Alg: "work_digest_algorithm_version", Ref: "work_ref",
		Prefix: "billingSettlementCatchUpWork", Kind: billing.KindBillingSettlementCatchUpWork},
	{Boundaries: core, Table: "billing.settlement_transitions", Key: []string{"settlement_dimension_id", "to_settlement_state_revision"}, Body: "transition_body",
		Digest: "transition_digest", Alg: "transition_digest_algorithm_version", Ref: "transition_ref",
		Prefix: "billingSettlementTransition", Kind: billing.KindBillingSettlementTransition},
	// core: operations
	{Boundaries: core, Table: "operations.applied_receipts", Key: []string{"consumer_name", "projection_name", "projection_version", "event_id"}, Body: "receipt_body",
		Digest: "receipt_digest", Alg: "receipt_digest_algorithm_version", Ref: "receipt_ref",
		Prefix: "operationsProjectionAppliedReceipt", Kind: receipt.KindOperationsProjectionAppliedReceipt},
	{Boundaries: core, Table: "operations.readiness_proofs", Key: []string{"proof_digest"}, Body: "proof_body",
		Digest: "proof_digest", Alg: "proof_digest_algorithm_version", Whole: true},
	// execution
	{Boundaries: exec, Table: "execution.attempt_not_dispatched_facts", Key: []string{"execution_attempt_id"}, Body: "fact_body",
		Digest: "attempt_not_dispatched_fact_digest", Alg: "attempt_not_dispatched_fact_digest_algorithm_version", Ref: "attempt_not_dispatched_fact_ref",
		Prefix: execution.PrefixAttemptNotDispatchedFact, Kind: execution.KindAttemptNotDispatchedFact},
	{Boundaries: exec, Table: "execution.attempt_set_manifests", Key: []string{"run_id"}, Body: "manifest_body",
		Digest: "attempt_set_manifest_digest", Alg: "attempt_set_manifest_digest_algorithm_version", Ref: "attempt_set_manifest_ref",
		Prefix: execution.PrefixRunAttemptSetManifest, Kind: execution.KindRunAttemptSetManifest},
	{Boundaries: exec, Table: "execution.attempts", Key: []string{"execution_attempt_id"}, Body: "manifest_body",
		Digest: "attempt_execution_manifest_digest", Alg: "attempt_execution_manifest_digest_algorithm_version", Ref: "attempt_execution_manifest_ref",
		Prefix: execution.PrefixAttemptExecutionManifest, Kind: execution.KindAttemptExecutionManifest},
	{Boundaries: exec, Table: "execution.eligibility_facts", Key: []string{"execution_attempt_id"}, Body: "fact_body",
		Digest: "execution_eligibility_fact_digest", Alg: "execution_eligibility_fact_digest_algorithm_version", Ref: "execution_eligibility_fact_ref",
		Prefix: execution.PrefixExecutionEligibilityFact, Kind: execution.KindExecutionEligibilityFact},
	{Boundaries: exec, Table: "execution.eligibility_conflict_facts", Key: []string{"execution_eligibility_conflict_fact_ref"}, Body: "fact_body",
		Digest: "execution_eligibility_conflict_fact_digest", Alg: "execution_eligibility_conflict_fact_digest_algorithm_version", Ref: "execution_eligibility_conflict_fact_ref",
		Prefix: execution.PrefixExecutionEligibilityConflictFact, Kind: execution.KindExecutionEligibilityConflictFact},
	{Boundaries: exec, Table: "execution.run_finalization_conflict_facts", Key: []string{"run_execution_finalization_conflict_ref"}, Body: "fact_body",
		Digest: "run_execution_finalization_conflict_digest", Alg: "run_execution_finalization_conflict_digest_algorithm_version", Ref: "run_execution_finalization_conflict_ref",
		Prefix: "runExecutionFinalizationConflict", Kind: execution.KindRunExecutionFinalizationConflictFact},
	{Boundaries: exec, Table: "execution.gateway_rejection_evidence", Key: []string{"execution_attempt_id"}, Body: "rejection_fact_body",
		Digest: "gateway_pre_binding_rejection_fact_digest", Alg: "gateway_pre_binding_rejection_fact_digest_algorithm_version", Ref: "gateway_pre_binding_rejection_fact_ref",
		Prefix: execution.PrefixGatewayPreBindingRejectionFact, Kind: execution.KindGatewayPreBindingRejectionFact},
	{Boundaries: exec, Table: "execution.run_execution_states", Key: []string{"run_id"}, Body: "run_execution_token_body",
		Digest: "run_execution_token_digest", Alg: "run_execution_token_digest_algorithm_version", Ref: "run_execution_token_ref",
		Prefix: execution.PrefixRunExecutionToken, Kind: execution.KindRunExecutionToken},
	{Boundaries: exec, Table: "execution.run_finalizations", Key: []string{"run_id"}, Body: "fact_body",
		Digest: "run_execution_finalization_digest", Alg: "run_execution_finalization_digest_algorithm_version", Ref: "run_execution_finalization_ref",
		Prefix: execution.PrefixRunExecutionFinalization, Kind: execution.KindRunExecutionFinalizationFact},
	// gateway
	{Boundaries: gateway, Table: "gateway.attempt_route_bindings", Key: []string{"attempt_route_binding_ref"}, Body: "binding_body",
		Digest: "attempt_route_binding_digest", Alg: "attempt_route_binding_digest_algorithm_version", Ref: "attempt_route_binding_ref",
		Prefix: settlement.PrefixAttemptRouteBinding, Kind: execution.KindAttemptRouteBinding},
	{Boundaries: gateway, Table: "gateway.availability_snapshots", Key: []string{"current_availability_ref"}, Body: "snapshot_body",
		Digest: "current_availability_digest", Alg: "current_availability_digest_algorithm_version", Ref: "current_availability_ref",
		Prefix: settlement.PrefixCurrentAvailability, Kind: execution.KindAvailabilitySnapshot},
	{Boundaries: gateway, Table: "gateway.availability_validation_receipts", Key: []string{"validation_operation_id"}, Body: "receipt_body",
		Digest: "receipt_digest", Alg: "receipt_digest_algorithm_version", Ref: "receipt_ref",
		Prefix: settlement.PrefixAvailabilityValidationReceipt, Kind: execution.KindAvailabilityCurrentValidationReceipt},
	{Boundaries: gateway, Table: "gateway.dispatch_slots", Key: []string{"execution_attempt_id"}, Body: "manifest_body",
		Digest: "attempt_execution_manifest_digest", Alg: "attempt_execution_manifest_digest_algorithm_version", Ref: "attempt_execution_manifest_ref",
		Prefix: execution.PrefixAttemptExecutionManifest, Kind: execution.KindAttemptExecutionManifest},
	{Boundaries: gateway, Table: "gateway.evidence_conflict_facts", Key: []string{"gateway_evidence_conflict_fact_ref"}, Body: "fact_body",
		Digest: "gateway_evidence_conflict_fact_digest", Alg: "gateway_evidence_conflict_fact_digest_algorithm_version", Ref: "gateway_evidence_conflict_fact_ref",
		Prefix: execution.PrefixGatewayEvidenceConflictFact, Kind: execution.KindGatewayEvidenceConflictFact},
	{Boundaries: gateway, Table: "gateway.pre_binding_rejections", Key: []string{"gateway_pre_binding_rejection_fact_ref"}, Body: "fact_body",
		Digest: "gateway_pre_binding_rejection_fact_digest", Alg: "gateway_pre_binding_rejection_fact_digest_algorithm_version", Ref: "gateway_pre_binding_rejection_fact_ref",
		Prefix: execution.PrefixGatewayPreBindingRejectionFact, Kind: execution.KindGatewayPreBindingRejectionFact},
	{Boundaries: gateway, Table: "gateway.provider_evidence", Key: []string{"provider_evidence_ref"}, Body: "evidence_body",
		Digest: "provider_evidence_digest", Alg: "provider_evidence_digest_algorithm_version", Ref: "provider_evidence_ref",
		Prefix: settlement.PrefixProviderEvidence, Kind: execution.KindProviderEvidence},
	{Boundaries: gateway, Table: "gateway.route_snapshots", Key: []string{"gateway_route_snapshot_ref"}, Body: "snapshot_body",
		Digest: "gateway_route_snapshot_digest", Alg: "gateway_route_snapshot_digest_algorithm_version", Ref: "gateway_route_snapshot_ref",
		Prefix: settlement.PrefixGatewayRouteSnapshot, Kind: execution.KindGatewayRouteSnapshot},
	// metering
	{Boundaries: metering, Table: "metering.cost_processing_facts", Key: []string{"processing_ref"}, Body: "processing_body",
		Digest: "processing_digest", Ref: "processing_ref",
		Prefix: "providerCostAvailabilityProcessing", Kind: meterfacts.KindProviderCostAvailabilityProcessingFact},
	{Boundaries: metering, Table: "metering.eligibility_decisions", Key: []string{"decision_ref"}, Body: "decision_body",
		Digest: "decision_digest", Ref: "decision_ref", Prefix: settlement.PrefixEligibilityDecision, Bare: true},
	{Boundaries: metering, Table: "metering.input_receipts", Key: []string{"consumer_name", "event_id"}, Body: "receipt_body",
		Digest: "receipt_digest", Alg: "receipt_digest_algorithm_version", Ref: "receipt_ref",
		Prefix: "meteringInputProcessorConsumerReceipt", Kind: receipt.KindMeteringInputProcessorConsumerReceipt},
	{Boundaries: metering, Table: "metering.input_works", Key: []string{"work_ref"}, Body: "work_body",
		Digest: "work_digest", Alg: "work_digest_algorithm_version", Ref: "work_ref", Prefix: "meteringInputWork", Bare: true},
	{Boundaries: metering, Table: "metering.meter_events", Key: []string{"meter_event_ref"}, Body: "meter_event_body",
		Digest: "meter_event_digest", Whole: true},
	{Boundaries: metering, Table: "metering.provider_cost_facts", Key: []string{"provider_cost_fact_ref"}, Body: "fact_body",
		Digest: "provider_cost_fact_digest", Ref: "provider_cost_fact_ref",
		Prefix: "providerCostFact", Kind: meterfacts.KindProviderCostFact},
	{Boundaries: metering, Table: "metering.settlement_input_snapshots", Key: []string{"settlement_dimension_id", "state_version"}, Body: "snapshot_body",
		Digest: "snapshot_digest", Alg: "snapshot_digest_algorithm_version", Ref: "snapshot_ref",
		Prefix: settlement.PrefixSnapshot, Kind: settlement.Kind, Extra: snapshotContentDigest, ExtraColumns: []string{"content_digest"}},
	{Boundaries: metering, Table: "metering.settlement_validation_receipts", Key: []string{"receipt_ref"}, Body: "receipt_body",
		Digest: "receipt_digest", Ref: "receipt_ref",
		Prefix: "settlementInputCurrentValidationReceipt", Kind: meterfacts.KindSettlementInputCurrentValidationReceipt},
	{Boundaries: metering, Table: "metering.settlement_input_conflict_facts", Key: []string{"settlement_input_conflict_fact_ref"}, Body: "fact_body",
		Digest: "settlement_input_conflict_fact_digest", Alg: "settlement_input_conflict_fact_digest_algorithm_version", Ref: "settlement_input_conflict_fact_ref",
		Prefix: meterfacts.PrefixSettlementInputConflictFact, Kind: meterfacts.KindSettlementInputConflictFact},
	{Boundaries: metering, Table: "metering.work_blocks", Key: []string{"work_ref", "attempt_number"}, Body: "blocked_body",
		Digest: "blocked_digest", Ref: "blocked_ref",
		Prefix: "meteringInputWorkAttemptBlocked", Kind: receipt.KindMeteringInputWorkAttemptBlocked},
	{Boundaries: metering, Table: "metering.work_blocks", Key: []string{"work_ref", "attempt_number"}, Body: "evidence_body",
		Digest: "evidence_digest", Ref: "evidence_ref",
		Kinds: []string{receipt.KindEligibilityProcessingConflictEvidence, receipt.KindProviderCostProcessingConflictEvidence},
		KindPrefix: map[string]string{
			receipt.KindEligibilityProcessingConflictEvidence:  "eligibilityProcessingConflictEvidence",
			receipt.KindProviderCostProcessingConflictEvidence: "providerCostProcessingConflictEvidence",
		}},
	{Boundaries: metering, Table: "metering.work_finishes", Key: []string{"work_ref", "attempt_number"}, Body: "finished_body",
		Digest: "finished_digest", Ref: "finished_ref",
		Prefix: "meteringInputWorkAttemptFinished", Kind: receipt.KindMeteringInputWorkAttemptFinished},
	// outbox (every producer database): the canonical envelope and the
	// core: Finalization reconciliation (issue 31): Billing's applied
	// resolutions, Core's grant exchange results, Operations' case
	// identities and command chain.
	{Boundaries: core, Table: "billing.funding_decisions", Key: []string{"command_operation_id"}, Body: "funding_decision_body",
		Digest: "decision_digest", Alg: "decision_digest_algorithm_version", Ref: "decision_ref",
		Prefix: reconciliation.PrefixFundingDecision, Kind: reconciliation.KindFundingDecision},
	{Boundaries: core, Table: "billing.late_settlement_command_results", Key: []string{"command_operation_id"}, Body: "result_body",
		Digest: "result_digest", Alg: "result_digest_algorithm_version", Ref: "result_ref",
		Prefix: reconciliation.PrefixLateResult, Kind: reconciliation.KindLateResult},
	{Boundaries: core, Table: "billing.late_settlement_exposure_resolutions", Key: []string{"late_settlement_exposure_id"}, Body: "applied_body",
		Digest: "applied_digest", Alg: "applied_digest_algorithm_version", Ref: "applied_ref",
		Prefix: reconciliation.PrefixCaseResolutionApplied, Kind: reconciliation.KindCaseResolutionApplied},
	{Boundaries: core, Table: "billing.finalization_reconciliation_resolutions", Key: []string{"billing_finalization_fence_id", "reconciliation_generation"},
		Body: "applied_body", Digest: "applied_digest", Alg: "applied_digest_algorithm_version", Ref: "applied_ref",
		Prefix: reconciliation.PrefixApplied, Kind: reconciliation.KindApplied},
	{Boundaries: core, Table: "grants.command_grant_exchanges", Key: []string{"command_grant_exchange_operation_id"}, Body: "result_body",
		Digest: "result_digest", Alg: "result_digest_algorithm_version", Ref: "result_ref",
		Prefix: reconciliation.PrefixExchangeResult, Kind: reconciliation.KindGrantExchangeResult},
	{Boundaries: core, Table: "operations.late_settlement_case_identities", Key: []string{"case_identity_ref"}, Body: "identity_body",
		Digest: "case_identity_digest", Alg: "case_identity_digest_algorithm_version", Ref: "case_identity_ref",
		Prefix: reconciliation.PrefixLateCaseIdentity, Kind: reconciliation.KindLateCaseIdentityReservation},
	{Boundaries: core, Table: "operations.finalization_case_identities", Key: []string{"case_identity_ref"}, Body: "identity_body",
		Digest: "case_identity_digest", Alg: "case_identity_digest_algorithm_version", Ref: "case_identity_ref",
		Prefix: reconciliation.PrefixCaseIdentity, Kind: reconciliation.KindCaseIdentityReservation},
	{Boundaries: core, Table: "operations.resolution_command_requests", Key: []string{"command_request_operation_id"}, Body: "request_body",
		Digest: "request_digest", Ref: "request_ref", Prefix: reconciliation.PrefixCommandRequest, Kind: reconciliation.KindCommandRequest},
	{Boundaries: core, Table: "operations.resolution_command_requests", Key: []string{"command_request_operation_id"}, Body: "preview_body",
		Digest: "preview_digest", Ref: "preview_ref", Prefix: reconciliation.PrefixImpactPreview, Kind: reconciliation.KindImpactPreview},
	{Boundaries: core, Table: "operations.resolution_command_approvals", Key: []string{"request_ref"}, Body: "approval_body",
		Digest: "approval_digest", Ref: "approval_ref", Prefix: reconciliation.PrefixApproval, Kind: reconciliation.KindApproval},
	{Boundaries: core, Table: "operations.resolution_decisions", Key: []string{"request_ref"}, Body: "jit_body",
		Digest: "jit_digest", Ref: "jit_ref", Prefix: reconciliation.PrefixJitActivation, Kind: reconciliation.KindJitActivation},
	{Boundaries: core, Table: "operations.resolution_decisions", Key: []string{"request_ref"}, Body: "candidate_body",
		Digest: "candidate_digest", Ref: "candidate_ref", Prefix: reconciliation.PrefixCandidate, Kind: reconciliation.KindCandidate},
	{Boundaries: core, Table: "operations.resolution_decisions", Key: []string{"request_ref"}, Body: "decision_body",
		Digest: "decision_digest", Ref: "decision_ref", Prefix: reconciliation.PrefixDecision, Kind: reconciliation.KindDecision},
	{Boundaries: core, Table: "operations.late_command_requests", Key: []string{"command_request_operation_id"}, Body: "request_body",
		Digest: "request_digest", Ref: "request_ref", Prefix: reconciliation.PrefixLateCommandRequest, Kind: reconciliation.KindLateCommandRequest},
	{Boundaries: core, Table: "operations.late_command_requests", Key: []string{"command_request_operation_id"}, Body: "preview_body",
		Digest: "preview_digest", Ref: "preview_ref", Prefix: reconciliation.PrefixLateImpactPreview, Kind: reconciliation.KindLateImpactPreview},
	{Boundaries: core, Table: "operations.late_command_approvals", Key: []string{"request_ref"}, Body: "approval_body",
		Digest: "approval_digest", Ref: "approval_ref", Prefix: reconciliation.PrefixLateApproval, Kind: reconciliation.KindLateApproval},
	{Boundaries: core, Table: "operations.late_command_decisions", Key: []string{"request_ref"}, Body: "jit_body",
		Digest: "jit_digest", Ref: "jit_ref", Prefix: reconciliation.PrefixLateJitActivation, Kind: reconciliation.KindLateJitActivation},
	{Boundaries: core, Table: "operations.late_command_decisions", Key: []string{"request_ref"}, Body: "candidate_body",
		Digest: "candidate_digest", Ref: "candidate_ref", Prefix: reconciliation.PrefixLateCandidate, Kind: reconciliation.KindLateCandidate},
	{Boundaries: core, Table: "operations.late_command_decisions", Key: []string{"request_ref"}, Body: "decision_body",
		Digest: "decision_digest", Ref: "decision_ref", Prefix: reconciliation.PrefixLateDecision, Kind: reconciliation.KindLateDecision},
	// registered Delivery Set Definitions.
	{Boundaries: producers, Table: "outbox.outbox_events", Key: []string{"event_id"}, Body: "event_envelope",
		Digest: "event_envelope_sha256", Alg: "event_envelope_digest_algorithm_version", Kind: envelope.Kind,
		Extra: envelopeIdentity, ExtraColumns: []string{"event_id", "event_type", "schema_version"}},
	{Boundaries: producers, Table: "outbox.delivery_set_versions", Key: []string{"delivery_set_version"}, Body: "definition_canonical_json",
		Digest: "delivery_set_definition_digest", Alg: "delivery_set_definition_digest_algorithm_version", Kind: deliveryset.Kind},
}

// Exempts are the body columns that are not content-addressed objects of
// their own.
var Exempts = []Exempt{
	{Table: "gateway.dispatch_slots", Column: "reply_body",
		Reason: "the slot's stored reply to its reservation call; it carries no address of its own (its rejection fact is checked in gateway.pre_binding_rejections)"},
	{Table: "admission.api_idempotency_keys", Column: "response_body",
		Reason: "the platform API's stored first response to an Idempotency-Key, replayed byte for byte; it carries no address of its own (the run it reports is checked in admission.*), and AD001 keeps it from changing"},
	{Table: "execution.api_idempotency_keys", Column: "response_body",
		Reason: "the platform API's stored first response to an Idempotency-Key for Execution's operations, replayed byte for byte; it carries no address of its own (the facts it reports are checked in execution.*), and EX001 keeps it from changing"},
	{Table: "gateway.api_idempotency_keys", Column: "response_body",
		Reason: "the platform API's stored first response to an Idempotency-Key for the Gateway's operations, replayed byte for byte; it carries no address of its own (the facts it reports are checked in gateway.*), and GW001 keeps it from changing"},
	{Table: "operations.api_idempotency_keys", Column: "response_body",
		Reason: "the platform API's stored first response to an operator's Idempotency-Key for a case operation, replayed byte for byte; the chain objects it reports are checked in operations.*, grants.* and billing.*, and OP001 keeps it from changing"},
	{Table: "outbox.legacy_quarantine", Column: "legacy_envelope",
		Reason: "a legacy row quarantined because it could not be adopted: kept as received, never trusted"},
}

// committedColumns compares finalization_committed's columns with its body.
func committedColumns(body []byte, row map[string]string) []string {
	c, err := billing.DecodeCommitted(body)
	if err != nil {
		return nil // the decode failure is already reported
	}
	var out []string
	same := func(col, want string) {
		if !sameAmount(row[col], want) && row[col] != want {
			out = append(out, fmt.Sprintf("column %s %q, body says %q", col, row[col], want))
		}
	}
	same("billing_reservation_id", c.BillingReservationID)
	same("decision", c.Outcome)
	same("posting_group_id", c.LedgerPostingGroupID)
	same("reserved_amount", c.ReservedAmount)
	same("settled_amount", c.SettledAmount)
	same("released_amount", c.ReleasedAmount)
	return out
}

// snapshotContentDigest recomputes a settlement input snapshot's content
// digest (the digest of its content without the chain position). Metering
// computes it before sealing (internal/metering/eligibility_apply.go), so
// the snapshot's own schema and algorithm versions are still empty then.
func snapshotContentDigest(body []byte, row map[string]string) []string {
	s, err := settlement.Decode(body)
	if err != nil {
		return nil
	}
	s.Snapshot.SchemaVersion, s.Snapshot.DigestAlgorithmVersion = "", ""
	d, err := settlement.ContentDigest(s)
	if err != nil {
		return []string{"content digest: " + err.Error()}
	}
	if d.Value != row["content_digest"] {
		return []string{fmt.Sprintf("content_digest %s, recomputed %s", row["content_digest"], d.Value)}
	}
	return nil
}

// envelopeIdentity compares an event row's identity columns with its
// envelope.
func envelopeIdentity(body []byte, row map[string]string) []string {
	if _, err := envelope.StoredIdentity(body, row["event_id"], row["event_type"], row["schema_version"]); err != nil {
		return []string{"identity columns: " + err.Error()}
	}
	return nil
}

// factCheck reads one fact table and reports its mismatches.
type factCheck struct {
	f     Fact
	kinds map[string]kinds.Kind
}

func (c factCheck) columns() []string {
	cols := append([]string(nil), c.f.Key...)
	cols = append(cols, c.f.Body, c.f.Digest)
	for _, col := range []string{c.f.Alg, c.f.Ref, c.f.KindColumn} {
		if col != "" {
			cols = append(cols, col)
		}
	}
	for _, col := range c.f.ExtraColumns {
		if !contains(cols, col) {
			cols = append(cols, col)
		}
	}
	return cols
}

// run scans the table in key order; rows are counted in res.
func (c factCheck) run(ctx context.Context, tx pgx.Tx, db string, report func(Mismatch)) (int64, error) {
	cols := c.columns()
	sel := make([]string, len(cols))
	for i, col := range cols {
		sel[i] = pgx.Identifier{col}.Sanitize() + "::text"
	}
	schema, table, _ := strings.Cut(c.f.Table, ".")
	order := make([]string, len(c.f.Key))
	for i, k := range c.f.Key {
		order[i] = pgx.Identifier{k}.Sanitize()
	}
	q := fmt.Sprintf("SELECT %s FROM %s ORDER BY %s", strings.Join(sel, ", "), pgx.Identifier{schema, table}.Sanitize(), strings.Join(order, ", "))
	rows, err := tx.Query(ctx, q)
	if err != nil {
		return 0, fmt.Errorf("read %s: %w", c.f.Table, err)
	}
	defer rows.Close()
	var n int64
	vals := make([]*string, len(cols))
	dest := make([]any, len(cols))
	for i := range vals {
		dest[i] = &vals[i]
	}
	for rows.Next() {
		if err := rows.Scan(dest...); err != nil {
			return n, fmt.Errorf("read %s: %w", c.f.Table, err)
		}
		n++
		row := map[string]string{}
		for i, col := range cols {
			if vals[i] != nil {
				row[col] = *vals[i]
			}
		}
		if vals[len(c.f.Key)] == nil { // no body (a nullable body column)
			continue
		}
		key := make([]string, len(c.f.Key))
		for i, k := range c.f.Key {
			key[i] = k + "=" + row[k]
		}
		for _, p := range c.check([]byte(row[c.f.Body]), row) {
			report(Mismatch{Database: db, Table: c.f.Table, Key: strings.Join(key, ","), Column: c.f.Body, Problem: p})
		}
	}
	return n, rows.Err()
}

// check returns what does not match in one row.
func (c factCheck) check(body []byte, row map[string]string) []string {
	var out []string
	canonical, err := jcs.Canonicalize(body)
	if err != nil {
		return []string{"body is not JSON: " + err.Error()}
	}
	if !bytes.Equal(canonical, body) {
		out = append(out, "body is not its RFC 8785 canonical form")
	}
	prefix := c.f.Prefix
	var got digest.Digest
	switch {
	case c.f.Kind != "" || c.f.KindColumn != "" || len(c.f.Kinds) > 0:
		names := c.f.Kinds
		if c.f.Kind != "" {
			names = []string{c.f.Kind}
		}
		if c.f.KindColumn != "" {
			names = []string{row[c.f.KindColumn]}
		}
		var errs []string
		for _, name := range names {
			k, ok := c.kinds[name]
			if !ok {
				errs = append(errs, fmt.Sprintf("unknown kind %q", name))
				continue
			}
			d, err := k.Digest(body)
			if err != nil {
				errs = append(errs, err.Error())
				continue
			}
			got, errs = d, nil
			if p, ok := c.f.KindPrefix[name]; ok {
				prefix = p
			}
			break
		}
		if errs != nil {
			return append(out, "body does not decode or its digest does not recompute: "+strings.Join(errs, "; "))
		}
	case c.f.Self != nil:
		m, err := parseObject(canonical)
		if err != nil {
			return append(out, err.Error())
		}
		if err := c.f.Self.Verify(m); err != nil {
			return append(out, "carried digest does not recompute: "+err.Error())
		}
		if got, err = c.f.Self.Compute(digest.JCSSHA256V1, m); err != nil {
			return append(out, err.Error())
		}
	case c.f.Bare:
		m, err := parseObject(canonical)
		if err != nil {
			return append(out, err.Error())
		}
		f := strict.Fields(prefix)
		if got, err = digest.Of(digest.JCSSHA256V1, strict.Candidate(m, f[0], f[2], f[3])); err != nil {
			return append(out, err.Error())
		}
	case c.f.Whole:
		if got, err = digest.OfCanonical(digest.JCSSHA256V1, canonical); err != nil {
			return append(out, err.Error())
		}
	}
	if row[c.f.Digest] != got.Value {
		out = append(out, fmt.Sprintf("%s %s, body recomputes to %s", c.f.Digest, row[c.f.Digest], got.Value))
	}
	if c.f.Alg != "" && row[c.f.Alg] != string(got.Algorithm) {
		out = append(out, fmt.Sprintf("%s %q, want %q", c.f.Alg, row[c.f.Alg], got.Algorithm))
	}
	if prefix != "" {
		m, err := parseObject(canonical)
		if err != nil {
			return append(out, err.Error())
		}
		f := strict.Fields(prefix)
		if carried, _ := m[f[3]].(string); carried != got.Value {
			out = append(out, fmt.Sprintf("body carries %s %s, recomputed %s", f[3], carried, got.Value))
		}
		if carried, _ := m[f[2]].(string); carried != string(got.Algorithm) {
			out = append(out, fmt.Sprintf("body carries %s %q", f[2], carried))
		}
		if carried, _ := m[f[0]].(string); c.f.Ref != "" && carried != row[c.f.Ref] {
			out = append(out, fmt.Sprintf("%s %s, body carries %s %s", c.f.Ref, row[c.f.Ref], f[0], carried))
		}
	}
	if c.f.Extra != nil {
		out = append(out, c.f.Extra(body, row)...)
	}
	return out
}

// parseObject reads a JSON object as the value tree jcs canonicalizes.
func parseObject(doc []byte) (map[string]any, error) {
	v, err := jcs.Parse(doc)
	if err != nil {
		return nil, fmt.Errorf("body is not JSON: %w", err)
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("body is not a JSON object")
	}
	return m, nil
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}
