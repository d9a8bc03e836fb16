package demo

import (
	"context"
	"encoding/json"

	"fmt"
	"net/http"

	"github.com/google/uuid"

	"github.com/oceanway/core/apiclient"
	"github.com/oceanway/core/contracts/digest"
	contract "github.com/oceanway/core/contracts/execution"
	"github.com/oceanway/core/contracts/strict"
	"github.com/oceanway/core/internal/admission"
	"github.com/oceanway/core/internal/api"
	"github.com/oceanway/core/internal/execution"
	"github.com/oceanway/core/internal/gateway"
	"github.com/oceanway/core/internal/workload"
)

// APIPlatform calls the owners over the platform API with the generated
// client (apiclient), as the platform's workload: a fresh single-use token
// per call for the operation's owner and scope, and an Idempotency-Key
// derived from what the call is about, so a replay is the same request.
type APIPlatform struct {
	clients map[api.Owner]*apiclient.ClientWithResponses
	signer  *workload.Signer
}

var _ Platform = (*APIPlatform)(nil)

// NewAPIPlatform calls each owner's operations at its base URL (one URL
// for all on a one-machine install), signing as signer.
func NewAPIPlatform(urls map[api.Owner]string, signer *workload.Signer, hc *http.Client) (*APIPlatform, error) {
	p := &APIPlatform{clients: map[api.Owner]*apiclient.ClientWithResponses{}, signer: signer}
	for _, o := range api.Owners {
		u, ok := urls[o]
		if !ok {
			return nil, fmt.Errorf("demo --via api: no URL for the %s owner's operations", o)
		}
		c, err := apiclient.NewClientWithResponses(u, apiclient.WithHTTPClient(hc))
		if err != nil {
			return nil, err
		}
		p.clients[o] = c
	}
	return p, nil
}

// bearer signs one token for operationID of owner o.
func (p *APIPlatform) bearer(o api.Owner, operationID string) apiclient.RequestEditorFn {
	return func(_ context.Context, req *http.Request) error {
		tok, err := p.signer.Sign(api.Audience(o), api.Scope(operationID))
		if err != nil {
			return err
		}
		req.Header.Set("Authorization", "Bearer "+tok)
		return nil
	}
}

// unanswered is a call that got no answer: the scenario replays it.
func unanswered(op string, err error) error { return fmt.Errorf("%s: %w: %w", op, ErrRetry, err) }

// answered turns a non-success answer into an error: ErrRetry for what the
// scenario replays (503, the same key still in progress), otherwise the
// problem's code and detail.
func answered(op string, status int, body []byte) error {
	if status >= 200 && status <= 299 {
		return nil
	}
	var pr apiclient.Problem
	_ = json.Unmarshal(body, &pr) // a body that is not a problem still fails below
	if status == http.StatusServiceUnavailable || pr.Code == api.CodeIdempotencyInProgress {
		return fmt.Errorf("%s: %w: %d %s", op, ErrRetry, status, pr.Code)
	}
	detail := ""
	if pr.Detail != nil {
		detail = *pr.Detail
	}
	return &APIError{Operation: op, Status: status, Code: pr.Code, Detail: detail}
}

// APIError is a refusal of the platform API.
type APIError struct {
	Operation string
	Status    int
	Code      string
	Detail    string
}

func (e *APIError) Error() string {
	return fmt.Sprintf("%s: %d %s: %s", e.Operation, e.Status, e.Code, e.Detail)
}

func (p *APIPlatform) Admit(ctx context.Context, req admission.Request) (Admitted, error) {
	body := apiclient.AdmitRunRequest{OrganizationId: uuid.MustParse(req.TenantID), WorkspaceId: uuid.MustParse(req.WorkspaceID),
		BillingAccountId: uuid.MustParse(req.BillingAccountID), ReservedCredits: req.ReservedCredits}
	if req.ProjectID != "" {
		pid := uuid.MustParse(req.ProjectID)
		body.ProjectId = &pid
	}
	r, err := p.clients[api.OwnerCore].AdmitRunWithResponse(ctx, &apiclient.AdmitRunParams{IdempotencyKey: "admit-" + req.AdmissionOperationID},
		body, p.bearer(api.OwnerCore, "admitRun"))
	if err != nil {
		return Admitted{}, unanswered("admitRun", err)
	}
	if err := answered("admitRun", r.StatusCode(), r.Body); err != nil {
		return Admitted{}, err
	}
	return Admitted{RunID: r.JSON201.RunId.String(), BillingReservationID: r.JSON201.BillingReservationId.String()}, nil
}

func (p *APIPlatform) OpenRun(ctx context.Context, runID string) error {
	id := uuid.MustParse(runID)
	t, err := p.clients[api.OwnerCore].IssueRunExecutionTokenWithResponse(ctx, id, &apiclient.IssueRunExecutionTokenParams{IdempotencyKey: "token-" + runID},
		p.bearer(api.OwnerCore, "issueRunExecutionToken"))
	if err != nil {
		return unanswered("issueRunExecutionToken", err)
	}
	if err := answered("issueRunExecutionToken", t.StatusCode(), t.Body); err != nil {
		return err
	}
	o, err := p.clients[api.OwnerExecution].OpenRunWithResponse(ctx, &apiclient.OpenRunParams{IdempotencyKey: "open-" + runID},
		apiclient.OpenRunRequest{Token: t.JSON201.Token}, p.bearer(api.OwnerExecution, "openRun"))
	if err != nil {
		return unanswered("openRun", err)
	}
	return answered("openRun", o.StatusCode(), o.Body)
}

func (p *APIPlatform) CreateAttempt(ctx context.Context, req execution.AttemptRequest) (Attempt, error) {
	body := apiclient.CreateAttemptRequest{RunStepId: uuid.MustParse(req.RunStepID), ExecutionAttemptId: uuid.MustParse(req.ExecutionAttemptID),
		ModelDeploymentId: req.ModelDeploymentID, GatewayDeploymentId: req.GatewayDeploymentID, RoutingPolicyRevision: req.RoutingPolicyRevision,
		OutputContract: apiclient.Quadruple{Ref: req.OutputContract.Ref, SchemaVersion: req.OutputContract.SchemaVersion,
			DigestAlgorithmVersion: string(req.OutputContract.DigestAlgorithmVersion), Digest: req.OutputContract.Digest}}
	r, err := p.clients[api.OwnerExecution].CreateAttemptWithResponse(ctx, uuid.MustParse(req.RunID),
		&apiclient.CreateAttemptParams{IdempotencyKey: "attempt-" + req.ExecutionAttemptID}, body, p.bearer(api.OwnerExecution, "createAttempt"))
	if err != nil {
		return Attempt{}, unanswered("createAttempt", err)
	}
	if err := answered("createAttempt", r.StatusCode(), r.Body); err != nil {
		return Attempt{}, err
	}
	m, err := contract.DecodeAttemptExecutionManifest([]byte(r.JSON201.ManifestBody))
	if err != nil {
		return Attempt{}, fmt.Errorf("createAttempt: the answered manifest: %w", err)
	}
	return Attempt{Manifest: m, Body: []byte(r.JSON201.ManifestBody)}, nil
}

func (p *APIPlatform) Dispatch(ctx context.Context, req gateway.DispatchRequest) (gateway.Reply, error) {
	m, err := contract.DecodeAttemptExecutionManifest(req.ManifestBody)
	if err != nil {
		return gateway.Reply{}, err
	}
	body := apiclient.DispatchRequest{OrganizationId: uuid.MustParse(req.Tenant.TenantID), WorkspaceId: uuid.MustParse(req.Tenant.WorkspaceID),
		AttemptManifestBody: string(req.ManifestBody)}
	if req.Tenant.ProjectID != "" {
		pid := uuid.MustParse(req.Tenant.ProjectID)
		body.ProjectId = &pid
	}
	if rt := req.Decision.Route; rt != nil {
		body.Route = &apiclient.Route{ChannelId: rt.ChannelID, SupplyId: rt.SupplyID, CredentialVersion: rt.CredentialVersion,
			ProviderModel: rt.ProviderModel, AdapterId: rt.AdapterID}
	} else {
		reason := req.Decision.RejectReason
		body.RejectReason = &reason
	}
	r, err := p.clients[api.OwnerGateway].DispatchAttemptWithResponse(ctx,
		&apiclient.DispatchAttemptParams{IdempotencyKey: "dispatch-" + m.ExecutionAttemptID + "-" + m.GatewayDeploymentID}, body,
		p.bearer(api.OwnerGateway, "dispatchAttempt"))
	if err != nil {
		return gateway.Reply{}, unanswered("dispatchAttempt", err)
	}
	if err := answered("dispatchAttempt", r.StatusCode(), r.Body); err != nil {
		return gateway.Reply{}, err
	}
	s := r.JSON201
	out := gateway.Reply{Body: []byte(s.ReplyBody), State: string(s.State), Binding: quad(s.Binding), RouteSnapshot: quad(s.RouteSnapshot),
		Rejection: quad(s.Rejection)}
	if s.RejectionReasonCode != nil {
		out.ReasonCode = *s.RejectionReasonCode
	}
	return out, nil
}

func (p *APIPlatform) FinalizeEligibility(ctx context.Context, attemptID, disposition string) error {
	r, err := p.clients[api.OwnerExecution].FinalizeAttemptEligibilityWithResponse(ctx, uuid.MustParse(attemptID),
		&apiclient.FinalizeAttemptEligibilityParams{IdempotencyKey: "eligibility-" + attemptID + "-" + disposition},
		apiclient.FinalizeEligibilityRequest{Disposition: apiclient.FinalizeEligibilityRequestDisposition(disposition)},
		p.bearer(api.OwnerExecution, "finalizeAttemptEligibility"))
	if err != nil {
		return unanswered("finalizeAttemptEligibility", err)
	}
	return answered("finalizeAttemptEligibility", r.StatusCode(), r.Body)
}

func (p *APIPlatform) CloseRun(ctx context.Context, runID string) error {
	r, err := p.clients[api.OwnerExecution].CloseRunWithResponse(ctx, uuid.MustParse(runID),
		&apiclient.CloseRunParams{IdempotencyKey: "close-" + runID}, p.bearer(api.OwnerExecution, "closeRun"))
	if err != nil {
		return unanswered("closeRun", err)
	}
	return answered("closeRun", r.StatusCode(), r.Body)
}

func (p *APIPlatform) Observe(ctx context.Context, key, attemptID string, o gateway.Observation) (strict.Quadruple, error) {
	body := apiclient.ObservationRequest{EvidenceKind: apiclient.ObservationRequestEvidenceKind(o.EvidenceKind), DimensionKey: o.DimensionKey,
		State: apiclient.ObservationRequestState(o.State)}
	body.ReasonCode, body.Quantity, body.ReportId = optional(o.ReasonCode), optional(o.Quantity), optional(o.ReportID)
	r, err := p.clients[api.OwnerGateway].ReportProviderObservationWithResponse(ctx, uuid.MustParse(attemptID),
		&apiclient.ReportProviderObservationParams{IdempotencyKey: "observation-" + key}, body, p.bearer(api.OwnerGateway, "reportProviderObservation"))
	if err != nil {
		return strict.Quadruple{}, unanswered("reportProviderObservation", err)
	}
	if err := answered("reportProviderObservation", r.StatusCode(), r.Body); err != nil {
		return strict.Quadruple{}, err
	}
	return quad(&r.JSON201.AvailabilitySnapshot), nil
}

func (p *APIPlatform) ReservationState(ctx context.Context, reservationID string) (string, error) {
	r, err := p.clients[api.OwnerCore].GetReservationWithResponse(ctx, uuid.MustParse(reservationID), p.bearer(api.OwnerCore, "getReservation"))
	if err != nil {
		return "", unanswered("getReservation", err)
	}
	if err := answered("getReservation", r.StatusCode(), r.Body); err != nil {
		return "", err
	}
	return string(r.JSON200.State), nil
}

func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func quad(q *apiclient.Quadruple) strict.Quadruple {
	if q == nil {
		return strict.Quadruple{}
	}
	return strict.Quadruple{Ref: q.Ref, SchemaVersion: q.SchemaVersion, DigestAlgorithmVersion: digest.Algorithm(q.DigestAlgorithmVersion), Digest: q.Digest}
}
