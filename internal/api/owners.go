package api

import (
	"context"
	"errors"
	"fmt"

	"github.com/oceanway/core/internal/api/apigen"
	"github.com/oceanway/core/internal/workload"
)

// Owner is the owner of a set of operations: the operation's one tag in
// the document. Each owner serves its own operations, with its own
// database for the idempotency keys and its own token audience, so the API
// stays per owner when the owners run apart.
type Owner string

const (
	OwnerCore      Owner = "core"
	OwnerExecution Owner = "execution"
	OwnerGateway   Owner = "gateway"
	OwnerMetering  Owner = "metering"
	// OwnerOperations is Operations in Core's process: its callers are
	// operators with actor assertions, not workloads.
	OwnerOperations Owner = "operations"
)

// Owners lists the owners of the document's operations.
var Owners = []Owner{OwnerCore, OwnerExecution, OwnerGateway, OwnerMetering, OwnerOperations}

// AudienceCore is the token audience of Core's operations.
const AudienceCore = "core_api"

// Audience is the token audience of an owner's operations (core_api,
// execution_api, gateway_api).
func Audience(o Owner) string { return string(o) + "_api" }

// CoreOperations are Core's operations (tag core).
type CoreOperations interface {
	AdmitRun(ctx context.Context, request apigen.AdmitRunRequestObject) (apigen.AdmitRunResponseObject, error)
	GetRun(ctx context.Context, request apigen.GetRunRequestObject) (apigen.GetRunResponseObject, error)
	GetReservation(ctx context.Context, request apigen.GetReservationRequestObject) (apigen.GetReservationResponseObject, error)
	IssueRunExecutionToken(ctx context.Context, request apigen.IssueRunExecutionTokenRequestObject) (apigen.IssueRunExecutionTokenResponseObject, error)
	RecordCanaryProof(ctx context.Context, request apigen.RecordCanaryProofRequestObject) (apigen.RecordCanaryProofResponseObject, error)
}

// ExecutionOperations are Execution's operations (tag execution).
type ExecutionOperations interface {
	OpenRun(ctx context.Context, request apigen.OpenRunRequestObject) (apigen.OpenRunResponseObject, error)
	CreateAttempt(ctx context.Context, request apigen.CreateAttemptRequestObject) (apigen.CreateAttemptResponseObject, error)
	FinalizeAttemptEligibility(ctx context.Context, request apigen.FinalizeAttemptEligibilityRequestObject) (apigen.FinalizeAttemptEligibilityResponseObject, error)
	GetAttemptEligibility(ctx context.Context, request apigen.GetAttemptEligibilityRequestObject) (apigen.GetAttemptEligibilityResponseObject, error)
	CloseRun(ctx context.Context, request apigen.CloseRunRequestObject) (apigen.CloseRunResponseObject, error)
	GetRunClosure(ctx context.Context, request apigen.GetRunClosureRequestObject) (apigen.GetRunClosureResponseObject, error)
}

// GatewayOperations are the Gateway's operations (tag gateway).
type GatewayOperations interface {
	DispatchAttempt(ctx context.Context, request apigen.DispatchAttemptRequestObject) (apigen.DispatchAttemptResponseObject, error)
	ReportProviderObservation(ctx context.Context, request apigen.ReportProviderObservationRequestObject) (apigen.ReportProviderObservationResponseObject, error)
}

// MeteringOperations are Metering's operations (tag metering): reads only.
type MeteringOperations interface {
	GetReservationSettlementInputs(ctx context.Context, request apigen.GetReservationSettlementInputsRequestObject) (apigen.GetReservationSettlementInputsResponseObject, error)
}

// CaseOperations are Operations' case operations (tag operations): an
// operator's reads of the Finalization reconciliation cases and the
// resolution command chain.
type CaseOperations interface {
	ListCases(ctx context.Context, request apigen.ListCasesRequestObject) (apigen.ListCasesResponseObject, error)
	GetCase(ctx context.Context, request apigen.GetCaseRequestObject) (apigen.GetCaseResponseObject, error)
	RequestCaseResolution(ctx context.Context, request apigen.RequestCaseResolutionRequestObject) (apigen.RequestCaseResolutionResponseObject, error)
	ApproveCaseResolution(ctx context.Context, request apigen.ApproveCaseResolutionRequestObject) (apigen.ApproveCaseResolutionResponseObject, error)
	ApplyCaseResolution(ctx context.Context, request apigen.ApplyCaseResolutionRequestObject) (apigen.ApplyCaseResolutionResponseObject, error)
}

// ActorAuthenticator authenticates an operator's actor assertion and
// returns its principal (casegateway.Authenticate behind a trusted
// identity provider's key).
type ActorAuthenticator interface {
	AuthenticateActor(assertion string) (principal string, err error)
}

// Served is one owner's part of the API in this process: its operations,
// the verifier of its callers' tokens (audience Audience(owner)) and the
// store of its idempotency keys (in its own database; none for an owner
// whose operations are all reads: Metering).
type Served struct {
	Verifier *workload.Verifier
	// Actors, instead of Verifier, authenticates operators (Operations).
	Actors ActorAuthenticator
	Keys   *KeyStore
}

// errNotServed is what an absent owner's operation answers; the handler
// refuses such a request before it reaches the operations.
var errNotServed = errors.New("api: operation not served by this process")

// operations is the document's whole interface over the owners this
// process serves.
type operations struct {
	core      CoreOperations
	execution ExecutionOperations
	gateway   GatewayOperations
	metering  MeteringOperations
	cases     CaseOperations
}

var _ apigen.StrictServerInterface = operations{}

func (o operations) AdmitRun(ctx context.Context, r apigen.AdmitRunRequestObject) (apigen.AdmitRunResponseObject, error) {
	if o.core == nil {
		return nil, errNotServed
	}
	return o.core.AdmitRun(ctx, r)
}

func (o operations) GetRun(ctx context.Context, r apigen.GetRunRequestObject) (apigen.GetRunResponseObject, error) {
	if o.core == nil {
		return nil, errNotServed
	}
	return o.core.GetRun(ctx, r)
}

func (o operations) GetReservation(ctx context.Context, r apigen.GetReservationRequestObject) (apigen.GetReservationResponseObject, error) {
	if o.core == nil {
		return nil, errNotServed
	}
	return o.core.GetReservation(ctx, r)
}

func (o operations) IssueRunExecutionToken(ctx context.Context, r apigen.IssueRunExecutionTokenRequestObject) (apigen.IssueRunExecutionTokenResponseObject, error) {
	if o.core == nil {
		return nil, errNotServed
	}
	return o.core.IssueRunExecutionToken(ctx, r)
}

func (o operations) RecordCanaryProof(ctx context.Context, r apigen.RecordCanaryProofRequestObject) (apigen.RecordCanaryProofResponseObject, error) {
	if o.core == nil {
		return nil, errNotServed
	}
	return o.core.RecordCanaryProof(ctx, r)
}

func (o operations) OpenRun(ctx context.Context, r apigen.OpenRunRequestObject) (apigen.OpenRunResponseObject, error) {
	if o.execution == nil {
		return nil, errNotServed
	}
	return o.execution.OpenRun(ctx, r)
}

func (o operations) CreateAttempt(ctx context.Context, r apigen.CreateAttemptRequestObject) (apigen.CreateAttemptResponseObject, error) {
	if o.execution == nil {
		return nil, errNotServed
	}
	return o.execution.CreateAttempt(ctx, r)
}

func (o operations) FinalizeAttemptEligibility(ctx context.Context, r apigen.FinalizeAttemptEligibilityRequestObject) (apigen.FinalizeAttemptEligibilityResponseObject, error) {
	if o.execution == nil {
		return nil, errNotServed
	}
	return o.execution.FinalizeAttemptEligibility(ctx, r)
}

func (o operations) GetAttemptEligibility(ctx context.Context, r apigen.GetAttemptEligibilityRequestObject) (apigen.GetAttemptEligibilityResponseObject, error) {
	if o.execution == nil {
		return nil, errNotServed
	}
	return o.execution.GetAttemptEligibility(ctx, r)
}

func (o operations) CloseRun(ctx context.Context, r apigen.CloseRunRequestObject) (apigen.CloseRunResponseObject, error) {
	if o.execution == nil {
		return nil, errNotServed
	}
	return o.execution.CloseRun(ctx, r)
}

func (o operations) GetRunClosure(ctx context.Context, r apigen.GetRunClosureRequestObject) (apigen.GetRunClosureResponseObject, error) {
	if o.execution == nil {
		return nil, errNotServed
	}
	return o.execution.GetRunClosure(ctx, r)
}

func (o operations) DispatchAttempt(ctx context.Context, r apigen.DispatchAttemptRequestObject) (apigen.DispatchAttemptResponseObject, error) {
	if o.gateway == nil {
		return nil, errNotServed
	}
	return o.gateway.DispatchAttempt(ctx, r)
}

func (o operations) ReportProviderObservation(ctx context.Context, r apigen.ReportProviderObservationRequestObject) (apigen.ReportProviderObservationResponseObject, error) {
	if o.gateway == nil {
		return nil, errNotServed
	}
	return o.gateway.ReportProviderObservation(ctx, r)
}

func (o operations) GetReservationSettlementInputs(ctx context.Context, r apigen.GetReservationSettlementInputsRequestObject) (apigen.GetReservationSettlementInputsResponseObject, error) {
	if o.metering == nil {
		return nil, errNotServed
	}
	return o.metering.GetReservationSettlementInputs(ctx, r)
}

func (o operations) ListCases(ctx context.Context, r apigen.ListCasesRequestObject) (apigen.ListCasesResponseObject, error) {
	if o.cases == nil {
		return nil, errNotServed
	}
	return o.cases.ListCases(ctx, r)
}

func (o operations) GetCase(ctx context.Context, r apigen.GetCaseRequestObject) (apigen.GetCaseResponseObject, error) {
	if o.cases == nil {
		return nil, errNotServed
	}
	return o.cases.GetCase(ctx, r)
}

func (o operations) RequestCaseResolution(ctx context.Context, r apigen.RequestCaseResolutionRequestObject) (apigen.RequestCaseResolutionResponseObject, error) {
	if o.cases == nil {
		return nil, errNotServed
	}
	return o.cases.RequestCaseResolution(ctx, r)
}

func (o operations) ApproveCaseResolution(ctx context.Context, r apigen.ApproveCaseResolutionRequestObject) (apigen.ApproveCaseResolutionResponseObject, error) {
	if o.cases == nil {
		return nil, errNotServed
	}
	return o.cases.ApproveCaseResolution(ctx, r)
}

func (o operations) ApplyCaseResolution(ctx context.Context, r apigen.ApplyCaseResolutionRequestObject) (apigen.ApplyCaseResolutionResponseObject, error) {
	if o.cases == nil {
		return nil, errNotServed
	}
	return o.cases.ApplyCaseResolution(ctx, r)
}

// OperationOwner is the owner of one of the document's operations (its
// tag): the audience a caller's token for it names.
func OperationOwner(operationID string) (Owner, error) {
	doc, err := LoadDocument()
	if err != nil {
		return "", err
	}
	for _, item := range doc.Paths.Map() {
		for _, op := range item.Operations() {
			if op.OperationID == operationID {
				if o := ownerOf(op); o != "" {
					return o, nil
				}
			}
		}
	}
	return "", fmt.Errorf("api: no operation %q in the document", operationID)
}
