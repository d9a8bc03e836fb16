// Package coreread is the Core owner's directed reads (Admission and
// Billing) as the other owners and the Operations projector call them: the
// requests, the answers and the contract versions and audiences, with no
// database behind them. Core answers them (admission.Reads, billing.Reads
// and catchup.Reads, in process); a caller depends only on this package.
package coreread

import (
	"context"

	"github.com/oceanway/core/contracts/digest"
	"github.com/oceanway/core/contracts/execution"
	"github.com/oceanway/core/contracts/strict"
	"github.com/oceanway/core/internal/ownerread"
)

// ManifestReader is Core's readRunAdmissionManifest@1.
type ManifestReader interface {
	ReadRunAdmissionManifest(ctx context.Context, req RunAdmissionManifestRead) (ManifestResult, error)
}

// FinalizationCommittedReader is Billing's readBillingFinalizationCommitted
// (billing.Reads in process), which the Operations projector calls.
type FinalizationCommittedReader interface {
	ReadBillingFinalizationCommitted(ctx context.Context, req FinalizationCommittedRead) (ownerread.Answer, error)
}

// SettlementTransitionReader is Billing's readBillingSettlementTransition
// (catchup.Reads in process), which the Operations projector calls.
type SettlementTransitionReader interface {
	ReadBillingSettlementTransition(ctx context.Context, req SettlementTransitionRead) (ownerread.Answer, error)
}

// ReadRunAdmissionManifestV1 is the contract version of Core's manifest read.
const ReadRunAdmissionManifestV1 = "readRunAdmissionManifest@1"

// AudienceMeteringSettlementInput is the Metering worker's purpose: the
// settlement input's economic identity is the one the manifest froze. (The
// Execution owner reads the manifest as execution.AudienceRunExecutionState.)
const AudienceMeteringSettlementInput = "metering_settlement_input"

// RunAdmissionManifestRead is the request of readRunAdmissionManifest@1
// (ADR-031: exact workload audience, tenant, run, schema, algorithm; no bare
// ref, no "latest", no list). Every field is required except ProjectID,
// which must equal the manifest's (empty when the run has no project).
type RunAdmissionManifestRead struct {
	ContractVersion string
	Audience        string
	Tenant          execution.Tenant
	RunID           string
	Manifest        strict.Quadruple
}

// ManifestResult is the answer of readRunAdmissionManifest@1.
type ManifestResult = ownerread.Result[*execution.RunAdmissionManifest]

// FinalizationCommittedRead is the event-bound request of
// readBillingFinalizationCommitted: the BillingFinalizationCommitted@1
// quadruple the event carries and every identity the event states, so the
// owner recomputes and compares them all.
type FinalizationCommittedRead struct {
	Committed            strict.Quadruple
	EventID              string
	EventEnvelopeDigest  digest.Digest
	BillingReservationID string
	BillingAccountID     string
	RunID                string
	FenceID              string
	OperationID          string
	FenceRevision        int64
	Decision             string
	SettledAmount        string
	ReleasedAmount       string
}

// SettlementTransitionRead is the event-bound request of
// readBillingSettlementTransition: the BillingSettlementTransition@1
// quadruple the event carries and every identity and amount the event
// states, so the owner recomputes and compares them all.
type SettlementTransitionRead struct {
	Transition                  strict.Quadruple
	EventID                     string
	EventEnvelopeDigest         digest.Digest
	BillingReservationID        string
	BillingAccountID            string
	RunID                       string
	RunStepID                   string
	ExecutionAttemptID          string
	ChargeDimensionKey          string
	SettlementDimensionID       string
	TransitionKind              string
	TransitionAmount            string
	FromSettlementStateRevision int64
	ToSettlementStateRevision   int64
	LogicalOperationID          string
	SettlementBasis             digest.Digest
	ValidationOperationID       string
}

// LateExposureCaseRequestReader is Billing's
// readLateSettlementExposureForOperations, which the Operations projector
// calls for billing.late-settlement-exposure.case-requested@1 before it
// opens or joins the case (issue 32).
type LateExposureCaseRequestReader interface {
	ReadLateSettlementExposureForOperations(ctx context.Context, req LateExposureCaseRequestRead) (ownerread.Answer, error)
}

// LateExposureCaseRequestRead is the event-bound request of
// readLateSettlementExposureForOperations: every identity the case-requested
// event states, so Billing compares its own exposure, case generation and
// event with all of them.
type LateExposureCaseRequestRead struct {
	EventID                  string
	EventEnvelopeDigest      digest.Digest
	LateSettlementExposureID string
	Exposure                 strict.Quadruple
	SettlementDimensionID    string
	BillingReservationID     string
	BillingAccountID         string
	RunID                    string
	RunStepID                string
	ExecutionAttemptID       string
	ChargeDimensionKey       string
	CaseRef                  string
	CaseGeneration           int64
	CaseIdentity             strict.Quadruple
	CaseRequestOperationID   string
	ExposureAmount           string
}

// LateCommandResultReader is Billing's
// readLateSettlementCommandResultForOperations, which the Operations
// projector calls for billing.late-settlement-command-result.committed@1
// before it records the result in its dimension's revision sequence
// (issue 32).
type LateCommandResultReader interface {
	ReadLateSettlementCommandResultForOperations(ctx context.Context, req LateCommandResultRead) (ownerread.Answer, error)
}

// LateCommandResultRead is the event-bound request of
// readLateSettlementCommandResultForOperations: every identity the
// result-committed event states. Found only when Billing's stored
// LateSettlementCommandResult@1 recomputes to Result and equals all of them
// and its event is this event (id and envelope digest).
type LateCommandResultRead struct {
	EventID                     string
	EventEnvelopeDigest         digest.Digest
	Result                      strict.Quadruple
	CommandOperationID          string
	SettlementDimensionID       string
	LateSettlementExposureID    string
	CaseRef                     string
	CaseGeneration              int64
	CaseIdentity                strict.Quadruple
	FromSettlementStateRevision int64
	ToSettlementStateRevision   int64
	AdjustmentAmount            string
	Actor                       string
}

// CaseResolutionAppliedReader is Billing's
// readBillingCaseResolutionAppliedForOperations, which the Operations
// projector calls for billing.case-resolution.applied@1 before it marks the
// exposure resolved (and closes its case once every exposure of the
// generation is resolved) (issue 32).
type CaseResolutionAppliedReader interface {
	ReadBillingCaseResolutionAppliedForOperations(ctx context.Context, req CaseResolutionAppliedRead) (ownerread.Answer, error)
}

// CaseResolutionAppliedRead is the event-bound request of
// readBillingCaseResolutionAppliedForOperations: every identity the
// applied event states.
type CaseResolutionAppliedRead struct {
	EventID                  string
	EventEnvelopeDigest      digest.Digest
	Applied                  strict.Quadruple
	LateSettlementExposureID string
	SettlementDimensionID    string
	CaseRef                  string
	CaseGeneration           int64
	CaseIdentity             strict.Quadruple
	ResolutionSource         string
	ResolutionOperationID    string
}

// FinalizationDecisionForOperationsReader is Billing's
// readBillingFinalizationDecisionForOperations (billing.Reads in process),
// which the Operations projector calls for
// billing.finalization-reconciliation.case-requested@1 before it creates
// the case.
type FinalizationDecisionForOperationsReader interface {
	ReadBillingFinalizationDecisionForOperations(ctx context.Context, req FinalizationDecisionForOperationsRead) (ownerread.Answer, error)
}

// ResolutionAppliedForOperationsReader is Billing's
// readFinalizationReconciliationResolutionAppliedForOperations, which the
// projector calls for billing.finalization-reconciliation-resolution.applied@1
// before it closes the case.
type ResolutionAppliedForOperationsReader interface {
	ReadFinalizationReconciliationResolutionAppliedForOperations(ctx context.Context, req ResolutionAppliedForOperationsRead) (ownerread.Answer, error)
}

// FinalizationDecisionForOperationsRead is the event-bound request of
// readBillingFinalizationDecisionForOperations: every identity the
// case-requested event states, so Billing recomputes the decision, the
// winning Work and its generation from its own records and compares them
// all (Operations never infers the generation from an operation hash).
type FinalizationDecisionForOperationsRead struct {
	EventID                  string
	EventEnvelopeDigest      digest.Digest
	BillingReservationID     string
	BillingAccountID         string
	RunID                    string
	FenceID                  string
	CaseRef                  string
	Generation               int64
	CaseRequestOperationID   string
	CaseIdentity             strict.Quadruple
	Decision                 strict.Quadruple
	TriggeringWork           strict.Quadruple
	TriggeringWorkGeneration int64
	FinalizationOperationID  string
	ReasonCode               string
	// PredecessorGeneration is 0 for the first case generation.
	PredecessorGeneration int64
}

// ResolutionAppliedForOperationsRead is the event-bound request of
// readFinalizationReconciliationResolutionAppliedForOperations: every
// identity the resolution-applied event states.
type ResolutionAppliedForOperationsRead struct {
	EventID               string
	EventEnvelopeDigest   digest.Digest
	BillingReservationID  string
	BillingAccountID      string
	RunID                 string
	FenceID               string
	CaseRef               string
	Generation            int64
	ResolutionRevision    int64
	ResolutionOperationID string
	CaseIdentity          strict.Quadruple
	Applied               strict.Quadruple
	Actor                 string
}
