package metering

import (
	"context"

	"github.com/oceanway/core/internal/db"
	"github.com/oceanway/core/internal/ownerread/meteringread"
)

// Reads answers Metering's reads for Billing in process, over the metering
// database: what the Billing finalization and catch-up workers hold in a
// one-machine install (over HTTP when the owners run apart, the same
// answers).
type Reads struct {
	DB interface {
		db.Executor
		db.Beginner
	}
}

var _ meteringread.Reader = Reads{}

func (r Reads) ReadAttemptSettlementInputs(ctx context.Context, executionAttemptID string) ([]*meteringread.SettlementInput, error) {
	return ReadAttemptSettlementInputs(ctx, r.DB, executionAttemptID)
}

func (r Reads) ReadCurrentSettlementInput(ctx context.Context, settlementDimensionID string) (*meteringread.SettlementInput, error) {
	return ReadCurrentSettlementInput(ctx, r.DB, settlementDimensionID)
}

func (r Reads) ReadSettlementInputAt(ctx context.Context, settlementDimensionID string, stateVersion int64) (*meteringread.SettlementInput, error) {
	return ReadSettlementInputAt(ctx, r.DB, settlementDimensionID, stateVersion)
}

// ValidateSettlementInputCurrent runs in its own metering transaction: the
// receipt is Metering's.
func (r Reads) ValidateSettlementInputCurrent(ctx context.Context, req meteringread.SettlementValidationRequest) (meteringread.SettlementValidation, error) {
	return ValidateSettlementInputCurrent(ctx, r.DB, req)
}
