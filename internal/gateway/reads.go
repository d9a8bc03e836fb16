package gateway

import (
	"context"

	"github.com/oceanway/core/internal/db"
	"github.com/oceanway/core/internal/ownerread/gatewayread"
)

// Reads answers every Gateway directed read in process, over the gateway
// database: what another owner's worker holds in a one-machine install
// (over HTTP when the owners run apart, the same answers).
type Reads struct {
	DB interface {
		db.Executor
		db.Beginner
	}
}

var _ gatewayread.Reader = Reads{}

func (r Reads) ReadDispatchSlot(ctx context.Context, req gatewayread.DispatchSlotRead) (gatewayread.SlotResult, error) {
	return ReadDispatchSlot(ctx, r.DB, req)
}

func (r Reads) ReadAvailabilitySnapshot(ctx context.Context, req gatewayread.AvailabilitySnapshotRead) (gatewayread.AvailabilityResult, error) {
	return ReadAvailabilitySnapshot(ctx, r.DB, req)
}

func (r Reads) ReadProviderEvidence(ctx context.Context, req gatewayread.ProviderEvidenceRead) (gatewayread.ProviderEvidenceResult, error) {
	return ReadProviderEvidence(ctx, r.DB, req)
}

// ValidateAvailabilityCurrent runs in its own gateway transaction: the
// receipt is the Gateway's.
func (r Reads) ValidateAvailabilityCurrent(ctx context.Context, req gatewayread.AvailabilityValidationRequest) (gatewayread.AvailabilityValidationResult, error) {
	return ValidateAvailabilityCurrent(ctx, r.DB, req)
}

func (r Reads) ReadAttemptUsageDimensions(ctx context.Context, req gatewayread.AttemptUsageDimensionsRead) ([]string, error) {
	return ReadAttemptUsageDimensions(ctx, r.DB, req)
}
