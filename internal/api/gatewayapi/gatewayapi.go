// Package gatewayapi answers the Gateway's operations of the platform API
// (dispatchAttempt, reportProviderObservation) with the Gateway owner's own
// code over the gateway database. It is the one place the API meets the
// Gateway, and the entry point a real provider adapter calls: the adapter
// decides a route (or a rejection) before any provider side effect, and
// reports the provider's evidence and availability afterwards.
//
// Both operations are mutating: they run in the API's idempotent
// transaction (api.TxOf), the Gateway's own transactions becoming its
// savepoints, so the slot, the facts, the availability event and the
// stored response commit together or not at all.
package gatewayapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	contract "github.com/oceanway/core/contracts/execution"
	"github.com/oceanway/core/internal/api"
	"github.com/oceanway/core/internal/api/apigen"
	"github.com/oceanway/core/internal/gateway"
)

// TenantKind is the tenant kind of every dispatch through the API: the
// request's organizationId is the tenant.
const TenantKind = "organization"

// AvailableReasonCode is the state reason an available observation records
// when the caller gives none (the document requires a reason only for the
// other states; the availability snapshot always carries one).
const AvailableReasonCode = "provider_reported"

// Server is the Gateway's part of the API (api.GatewayOperations).
type Server struct {
	// Pool is the gateway database as oceanway_gateway; a mutating call runs
	// in the API's transaction on it instead (api.TxOf).
	Pool *pgxpool.Pool
}

var _ api.GatewayOperations = Server{}

// DispatchAttempt reserves the attempt's dispatch slot and binds it to the
// request's route or rejects it with the request's reason (GW-1). A slot
// that is terminal already answers its stored reply, whatever this
// request's decision.
func (s Server) DispatchAttempt(ctx context.Context, req apigen.DispatchAttemptRequestObject) (apigen.DispatchAttemptResponseObject, error) {
	tx, ok := api.TxOf(ctx)
	if !ok {
		return nil, errors.New("gatewayapi: dispatchAttempt outside its idempotent transaction")
	}
	b := req.Body
	if b == nil {
		return nil, api.Refuse(http.StatusBadRequest, api.CodeInvalidRequest, "a request body is required")
	}
	if (b.Route == nil) == (b.RejectReason == nil) {
		return nil, api.Refuse(http.StatusBadRequest, api.CodeInvalidRequest, "exactly one of route (bind) and rejectReason (reject before binding) is required")
	}
	dreq := gateway.DispatchRequest{
		Tenant:       contract.Tenant{Kind: TenantKind, TenantID: b.OrganizationId.String(), WorkspaceID: b.WorkspaceId.String()},
		ManifestBody: []byte(b.AttemptManifestBody),
	}
	if b.ProjectId != nil {
		dreq.Tenant.ProjectID = b.ProjectId.String()
	}
	if r := b.Route; r != nil {
		dreq.Decision.Route = &contract.Route{ChannelID: r.ChannelId, SupplyID: r.SupplyId, CredentialVersion: r.CredentialVersion,
			ProviderModel: r.ProviderModel, AdapterID: r.AdapterId}
	} else {
		dreq.Decision.RejectReason = *b.RejectReason
	}
	reply, err := gateway.New(tx).Dispatch(ctx, dreq)
	switch {
	case errors.Is(err, gateway.ErrInvalidDispatch):
		return nil, api.Refuse(http.StatusBadRequest, api.CodeInvalidRequest, err.Error())
	case errors.Is(err, gateway.ErrSlotKeyConflict):
		return nil, api.Refuse(http.StatusConflict, api.CodeSlotConflict, err.Error())
	case err != nil:
		return nil, err
	}
	slot, err := slotOf(reply)
	if err != nil {
		return nil, err
	}
	return apigen.DispatchAttempt201JSONResponse(slot), nil
}

// slotOf is the answer for a slot's terminal reply: its quadruples and its
// canonical body, the attempt and deployment read from that body.
func slotOf(r gateway.Reply) (apigen.DispatchSlot, error) {
	var key struct {
		ExecutionAttemptID  string `json:"executionAttemptId"`
		GatewayDeploymentID string `json:"gatewayDeploymentId"`
	}
	if err := json.Unmarshal(r.Body, &key); err != nil {
		return apigen.DispatchSlot{}, fmt.Errorf("gatewayapi: slot reply: %w", err)
	}
	attempt, err := uuid.Parse(key.ExecutionAttemptID)
	if err != nil {
		return apigen.DispatchSlot{}, fmt.Errorf("gatewayapi: slot reply: attempt: %w", err)
	}
	out := apigen.DispatchSlot{ExecutionAttemptId: attempt, GatewayDeploymentId: key.GatewayDeploymentID,
		State: apigen.DispatchSlotState(r.State), ReplyBody: string(r.Body)}
	switch r.State {
	case string(apigen.Bound):
		binding, snapshot := api.Quad(r.Binding), api.Quad(r.RouteSnapshot)
		out.Binding, out.RouteSnapshot = &binding, &snapshot
	case string(apigen.TerminalRejected):
		rejection, reason := api.Quad(r.Rejection), r.ReasonCode
		out.Rejection, out.RejectionReasonCode = &rejection, &reason
	default:
		return apigen.DispatchSlot{}, fmt.Errorf("gatewayapi: slot reply in state %q", r.State)
	}
	return out, nil
}

// ReportProviderObservation records one report about one (evidence kind,
// dimension) of a bound attempt (GW-2): available with its quantity and the
// provider's report id, or another state with its reason. A report equal to
// the current state changes nothing (unchanged, no event).
func (s Server) ReportProviderObservation(ctx context.Context, req apigen.ReportProviderObservationRequestObject) (apigen.ReportProviderObservationResponseObject, error) {
	tx, ok := api.TxOf(ctx)
	if !ok {
		return nil, errors.New("gatewayapi: reportProviderObservation outside its idempotent transaction")
	}
	b := req.Body
	if b == nil {
		return nil, api.Refuse(http.StatusBadRequest, api.CodeInvalidRequest, "a request body is required")
	}
	o := gateway.Observation{EvidenceKind: string(b.EvidenceKind), DimensionKey: b.DimensionKey, State: string(b.State),
		ReasonCode: deref(b.ReasonCode), Quantity: deref(b.Quantity), ReportID: deref(b.ReportId)}
	if detail := observationRule(o); detail != "" {
		return nil, api.Refuse(http.StatusBadRequest, api.CodeInvalidRequest, detail)
	}
	if o.ReasonCode == "" {
		o.ReasonCode = AvailableReasonCode
	}
	attemptID := req.AttemptId.String()
	adv, err := gateway.New(tx).Observe(ctx, attemptID, o)
	switch {
	case errors.Is(err, gateway.ErrInvalidObservation):
		return nil, api.Refuse(http.StatusBadRequest, api.CodeInvalidRequest, err.Error())
	case errors.Is(err, gateway.ErrSlotNotFound):
		return nil, api.Refuse(http.StatusNotFound, api.CodeNotFound, "no dispatch slot for attempt "+attemptID)
	case errors.Is(err, gateway.ErrNotBound):
		return nil, api.Refuse(http.StatusConflict, api.CodeSlotNotBound, err.Error())
	case errors.Is(err, gateway.ErrChainMoved):
		// Another advance of the same chain committed first: nothing of this
		// call commits, and a retry with the same key sees the new current.
		return nil, api.Refuse(http.StatusServiceUnavailable, api.CodeUnavailable,
			"the availability chain moved concurrently; nothing was committed; retry with the same Idempotency-Key")
	case err != nil:
		return nil, err
	}
	out := apigen.ObservationResult{ExecutionAttemptId: req.AttemptId, EvidenceKind: adv.Snapshot.EvidenceKind, DimensionKey: adv.Snapshot.DimensionKey,
		State: adv.Snapshot.State, AvailabilitySnapshot: api.Quad(adv.Snapshot.Snapshot), SnapshotBody: string(adv.Body), Unchanged: adv.Unchanged}
	if ev := adv.Snapshot.Evidence; ev.Ref != "" {
		q := api.Quad(ev)
		out.ProviderEvidence = &q
	}
	if !adv.Unchanged {
		id, err := uuid.Parse(adv.EventID)
		if err != nil {
			return nil, fmt.Errorf("gatewayapi: availability event id: %w", err)
		}
		out.EventId = &id
	}
	return apigen.ReportProviderObservation201JSONResponse(out), nil
}

// observationRule is what the document says of a report beyond its schema:
// available carries its quantity and the provider's report id; any other
// state carries a reason and neither of them.
func observationRule(o gateway.Observation) string {
	if o.State == contract.AvailabilityAvailable {
		switch {
		case o.Quantity == "":
			return "an available report carries its quantity"
		case o.ReportID == "":
			return "an available report carries the provider's reportId"
		}
		return ""
	}
	switch {
	case o.ReasonCode == "":
		return fmt.Sprintf("a %s report carries its reasonCode", o.State)
	case o.Quantity != "" || o.ReportID != "":
		return fmt.Sprintf("a %s report carries no quantity or reportId (available only)", o.State)
	}
	return ""
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
