// Package coreapi answers Core's operations of the platform API (admitRun,
// issueRunExecutionToken, getRun, getReservation) with the Core owner's own
// code: admission and billing over the core database. It is the one place
// the API meets Core.
package coreapi

import (
	"context"
	"errors"
	"net/http"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/oceanway/core/contracts/envelope"
	"github.com/oceanway/core/internal/admission"
	"github.com/oceanway/core/internal/api"
	"github.com/oceanway/core/internal/api/apigen"
	"github.com/oceanway/core/internal/billing"
	"github.com/oceanway/core/internal/billing/catchup"
	"github.com/oceanway/core/internal/db"
	"github.com/oceanway/core/internal/runtoken"
)

// DerivationAdmissionOperation derives a run's admission operation id from
// the caller and its Idempotency-Key: even without the API's stored
// response, the same key can only ever admit one run (admission is
// idempotent by operation id).
const DerivationAdmissionOperation = "api_admit_run_operation@1"

// Server is Core's part of the API (api.CoreOperations).
type Server struct {
	// Admission is the core database as oceanway_admission (admitRun,
	// getRun); a mutating call runs in the API's transaction instead.
	Admission *pgxpool.Pool
	// Billing is the core database as oceanway_billing (getReservation).
	Billing *pgxpool.Pool
	// Tokens signs run execution tokens with Core's token key.
	Tokens *runtoken.Signer
	// Operations is the core database as oceanway_operations: the read
	// model recordCanaryProof checks (nil: canary proofs are not served).
	Operations *pgxpool.Pool
	// Public is the deployment's PUBLIC_ADMISSION_MODE and its public
	// callers.
	Public PublicAdmission
}

// PublicAdmission is PUBLIC_ADMISSION_MODE (ADR-031): while it is not
// Enabled, admitRun from a public caller (a workload in Callers) is
// refused with public_admission_disabled; internal callers are unaffected.
// serve enables it only on a deployment with a passed canary proof.
type PublicAdmission struct {
	Enabled bool
	Proof   string // the passed canary proof it was enabled on
	Callers map[string]bool
}

var _ api.CoreOperations = Server{}

// IssueRunExecutionToken returns the run's one execution token, signed by
// Core: its ref is the run's and it is issued at the run's admission, so
// every call (any key, any caller) returns the same token and signature,
// and Execution can never be handed two tokens for one run.
func (s Server) IssueRunExecutionToken(ctx context.Context, req apigen.IssueRunExecutionTokenRequestObject) (apigen.IssueRunExecutionTokenResponseObject, error) {
	tx, ok := api.TxOf(ctx)
	if !ok {
		return nil, errors.New("coreapi: issueRunExecutionToken outside its idempotent transaction")
	}
	if s.Tokens == nil {
		return nil, errors.New("coreapi: no token key to sign run execution tokens with")
	}
	runID := req.RunId.String()
	run, err := admission.Lookup(ctx, tx, runID)
	if errors.Is(err, db.ErrNotFound) {
		return apigen.IssueRunExecutionToken404ApplicationProblemPlusJSONResponse(api.NewProblem(http.StatusNotFound, api.CodeNotFound, "no run "+runID)), nil
	}
	if err != nil {
		return nil, err
	}
	tok, body, err := admission.IssueRunExecutionToken(ctx, tx, runID, RunExecutionTokenRef(runID), run.AdmittedAt)
	if err != nil {
		return nil, err
	}
	jws, err := s.Tokens.Sign(body)
	if err != nil {
		return nil, err
	}
	return apigen.IssueRunExecutionToken201JSONResponse{RunId: req.RunId, Token: jws, RunExecutionToken: api.Quad(tok.Token), TokenBody: string(body)}, nil
}

// RunExecutionTokenRef is the ref of a run's one execution token.
func RunExecutionTokenRef(runID string) string { return "ret-" + runID }

// AdmitRun admits one run under the caller's Idempotency-Key.
func (s Server) AdmitRun(ctx context.Context, req apigen.AdmitRunRequestObject) (apigen.AdmitRunResponseObject, error) {
	call := api.CallOf(ctx)
	tx, ok := api.TxOf(ctx)
	if !ok || call.IdempotencyKey == "" {
		return nil, errors.New("coreapi: admitRun outside its idempotent transaction")
	}
	if s.Public.Callers[call.Caller] && !s.Public.Enabled {
		return apigen.AdmitRun403ApplicationProblemPlusJSONResponse(
			api.NewProblem(http.StatusForbidden, api.CodePublicAdmission, call.Caller+" is a public caller and PUBLIC_ADMISSION_MODE is disabled on this deployment")), nil
	}
	b := req.Body
	areq := admission.Request{
		AdmissionOperationID: envelope.DeriveID(DerivationAdmissionOperation, map[string]any{"caller": call.Caller, "idempotencyKey": call.IdempotencyKey}),
		TenantKind:           "organization", TenantID: b.OrganizationId.String(), WorkspaceID: b.WorkspaceId.String(),
		BillingAccountID: b.BillingAccountId.String(), ReservedCredits: b.ReservedCredits,
	}
	if b.ProjectId != nil {
		areq.ProjectID = b.ProjectId.String()
	}
	res, err := admission.New(tx).Admit(ctx, areq)
	switch {
	case errors.Is(err, admission.ErrInvalidRequest) || errors.Is(err, admission.ErrUnsupportedTenant):
		return apigen.AdmitRun400ApplicationProblemPlusJSONResponse{ProblemApplicationProblemPlusJSONResponse: apigen.ProblemApplicationProblemPlusJSONResponse(
			api.NewProblem(http.StatusBadRequest, api.CodeInvalidRequest, err.Error()))}, nil
	case err != nil:
		return nil, err
	}
	return apigen.AdmitRun201JSONResponse(runOf(res)), nil
}

// GetRun reads what a run's admission created.
func (s Server) GetRun(ctx context.Context, req apigen.GetRunRequestObject) (apigen.GetRunResponseObject, error) {
	res, err := admission.Lookup(ctx, s.Admission, req.RunId.String())
	if errors.Is(err, db.ErrNotFound) {
		return apigen.GetRun404ApplicationProblemPlusJSONResponse(api.NewProblem(http.StatusNotFound, api.CodeNotFound, "no run "+req.RunId.String())), nil
	}
	if err != nil {
		return nil, err
	}
	return apigen.GetRun200JSONResponse(runOf(res)), nil
}

// GetReservation reads a reservation's billing state, with its settlement
// transitions and late exposures after finality.
func (s Server) GetReservation(ctx context.Context, req apigen.GetReservationRequestObject) (apigen.GetReservationResponseObject, error) {
	id := req.ReservationId.String()
	v, err := billing.LookupReservation(ctx, s.Billing, id)
	if errors.Is(err, db.ErrNotFound) {
		return apigen.GetReservation404ApplicationProblemPlusJSONResponse(api.NewProblem(http.StatusNotFound, api.CodeNotFound, "no reservation "+id)), nil
	}
	if err != nil {
		return nil, err
	}
	cu, err := catchup.Lookup(ctx, s.Billing, id)
	if err != nil {
		return nil, err
	}
	return apigen.GetReservation200JSONResponse(reservationOf(v, cu)), nil
}

func runOf(r admission.Result) apigen.Run {
	return apigen.Run{
		RunId: uuid.MustParse(r.RunID), BillingAccountId: uuid.MustParse(r.BillingAccountID), BillingReservationId: uuid.MustParse(r.BillingReservationID),
		ReservedCredits: r.ReservedCredits, CorrelationId: r.CorrelationID,
		Manifest: api.Quad(r.Manifest),
		FenceId:  uuid.MustParse(r.FenceID), FinalizationOperationId: uuid.MustParse(r.FinalizationOperationID),
		RunCreatedEventId: uuid.MustParse(r.RunCreatedEventID), WalletReservedEventId: uuid.MustParse(r.WalletReservedEventID),
		AdmittedAt: r.AdmittedAt.UTC(),
	}
}

func reservationOf(v billing.ReservationView, cu catchup.View) apigen.Reservation {
	out := apigen.Reservation{
		BillingReservationId: uuid.MustParse(v.BillingReservationID), BillingAccountId: uuid.MustParse(v.BillingAccountID),
		RunId: uuid.MustParse(v.RunID), EconomicIdentity: v.EconomicIdentity, ReservedAmount: v.ReservedAmount,
		State: apigen.ReservationState(v.State),
		Fence: apigen.Fence{FenceId: uuid.MustParse(v.FenceID), State: v.FenceState, Revision: v.FenceRevision,
			LatestGeneration: v.LatestGeneration, ClosureWatermark: v.ClosureWatermark, SettlementWatermark: v.SettlementWatermark},
		Evaluations: []apigen.Evaluation{}, Postings: []apigen.Posting{}, Transitions: []apigen.Transition{}, Exposures: []apigen.Exposure{},
	}
	out.SettledAmount, out.ReleasedAmount, out.CommittedRef = optional(v.SettledAmount), optional(v.ReleasedAmount), optional(v.CommittedRef)
	if v.ActiveGeneration != 0 {
		g := v.ActiveGeneration
		out.Fence.ActiveGeneration = &g
	}
	out.Fence.WaitingReason = optional(v.WaitingReason)
	for _, e := range v.Evaluations {
		out.Evaluations = append(out.Evaluations, apigen.Evaluation{WorkGeneration: e.WorkGeneration, OperationId: e.OperationID,
			Outcome: e.Outcome, ReasonCode: e.ReasonCode, ReasonDetail: optional(e.ReasonDetail), RecordedAt: e.RecordedAt.UTC()})
	}
	for _, p := range v.Postings {
		out.Postings = append(out.Postings, apigen.Posting{GroupKind: p.GroupKind, GroupId: p.GroupID, LineNo: p.LineNo,
			AccountKind: p.AccountKind, Direction: p.Direction, Amount: p.Amount, PostedAt: p.PostedAt.UTC()})
	}
	for _, t := range cu.Transitions {
		out.Transitions = append(out.Transitions, apigen.Transition{SettlementDimensionId: t.SettlementDimensionID,
			FromRevision: t.FromSettlementStateRevision, ToRevision: t.ToSettlementStateRevision, Kind: t.TransitionKind,
			Amount: t.TransitionAmount, TransitionRef: t.TransitionRef, CommittedAt: t.CommittedAt.UTC()})
	}
	for _, e := range cu.Exposures {
		out.Exposures = append(out.Exposures, apigen.Exposure{LateSettlementExposureId: e.LateSettlementExposureID,
			SettlementDimensionId: e.SettlementDimensionID, Amount: e.ExposureAmount, State: e.ExposureState,
			ExposureRef: e.ExposureRef, RecordedAt: e.RecordedAt.UTC()})
	}
	return out
}

func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
