// Package meteringapi answers Metering's operation of the platform API
// (getReservationSettlementInputs) with the Metering owner's own code over
// the metering database. It is the one place the API meets Metering.
//
// Metering's part is read-only: a caller never writes a Metering fact
// through the API (ME-1: Metering is the only writer, its worker forms the
// settlement inputs from the other owners' events), so there is no
// idempotent transaction and no key store; each call is one statement on
// the pool. Nothing here imports another owner.
package meteringapi

import (
	"context"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/oceanway/core/internal/api"
	"github.com/oceanway/core/internal/api/apigen"
	"github.com/oceanway/core/internal/metering"
	"github.com/oceanway/core/internal/ownerread/meteringread"
)

// Server is Metering's part of the API (api.MeteringOperations).
type Server struct {
	// Pool is the metering database as oceanway_metering.
	Pool *pgxpool.Pool
}

var _ api.MeteringOperations = Server{}

// GetReservationSettlementInputs answers every settlement dimension of the
// reservation's attempts at its Current state version, each verified by
// Metering (its body decodes strictly and its digest recomputes), in
// settlement dimension order; an empty list when Metering has none for the
// reservation (yet, or a run without attempts). A stored input that does not
// verify fails the call (503, logged), never answered.
func (s Server) GetReservationSettlementInputs(ctx context.Context, req apigen.GetReservationSettlementInputsRequestObject) (apigen.GetReservationSettlementInputsResponseObject, error) {
	reservationID := req.ReservationId.String()
	inputs, err := metering.ReadReservationSettlementInputs(ctx, s.Pool, reservationID)
	if err != nil {
		return nil, err
	}
	out := apigen.ReservationSettlementInputs{BillingReservationId: req.ReservationId, Inputs: make([]apigen.SettlementInput, 0, len(inputs))}
	for _, in := range inputs {
		si, err := inputOf(in)
		if err != nil {
			return nil, err
		}
		out.Inputs = append(out.Inputs, si)
	}
	return apigen.GetReservationSettlementInputs200JSONResponse(out), nil
}

// inputOf is one verified input as the document answers it: the ids and
// the reconciliation state from its decoded body, the five-tuple, and the
// canonical body itself.
func inputOf(in *meteringread.SettlementInput) (apigen.SettlementInput, error) {
	dim, err := uuid.Parse(in.Snapshot.SettlementDimensionID)
	if err != nil {
		return apigen.SettlementInput{}, fmt.Errorf("meteringapi: settlement dimension id: %w", err)
	}
	attempt, err := uuid.Parse(in.Snapshot.ExecutionAttemptID)
	if err != nil {
		return apigen.SettlementInput{}, fmt.Errorf("meteringapi: execution attempt id: %w", err)
	}
	return apigen.SettlementInput{SettlementDimensionId: dim, ExecutionAttemptId: attempt, StateVersion: in.Ref.StateVersion,
		ReconciliationState: apigen.SettlementInputReconciliationState(in.Snapshot.ReconciliationState),
		Snapshot:            api.Quad(in.Ref.Snapshot), SnapshotBody: string(in.Body)}, nil
}
