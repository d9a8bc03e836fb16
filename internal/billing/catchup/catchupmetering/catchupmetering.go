// Package catchupmetering adapts the Metering owner's reads to the Billing
// settlement catch-up worker (catchup.Metering), in process. It is a package
// of its own because Metering's package depends on Execution, which depends
// on Admission, which opens Billing's rows: billing itself cannot import
// metering, and the catch-up reads the Metering owner only through
// catchup.Metering.
package catchupmetering

import (
	"context"
	"fmt"

	billingc "github.com/oceanway/core/contracts/billing"
	"github.com/oceanway/core/contracts/settlement"
	"github.com/oceanway/core/internal/billing/catchup"
	"github.com/oceanway/core/internal/db"
	"github.com/oceanway/core/internal/metering"
)

// Reads is catchup.Metering over the Metering owner's database,
// in process: validateSettlementInputCurrent (metering.ValidateSettlementInputCurrent,
// one receipt per operation, the basis digest as the input manifest digest)
// and the exact lineage read (metering.ReadSettlementInputAt, verified against
// the five-tuple).
type Reads struct {
	// DB is the metering database (a pool).
	DB db.Executor
}

var _ catchup.Metering = Reads{}

// ValidateSettlementInputCurrent implements catchup.Metering.
func (m Reads) ValidateSettlementInputCurrent(ctx context.Context, req catchup.ValidationRequest) (catchup.Validation, error) {
	v, err := metering.ValidateSettlementInputCurrent(ctx, m.DB, metering.SettlementValidationRequest{
		Purpose: req.Purpose, OperationID: req.OperationID, SettlementDimensionID: req.SettlementDimensionID,
		Snapshot: settlement.Ref{Snapshot: req.Input.Snapshot, StateVersion: req.Input.StateVersion}, InputManifestDigest: req.BasisDigest,
	})
	if err != nil {
		return catchup.Validation{}, err
	}
	return catchup.Validation{Current: v.Receipt.Current, Receipt: v.Receipt.Receipt,
		CurrentInput: billingc.SettlementInput{Snapshot: v.Current.Snapshot, StateVersion: v.Current.StateVersion}}, nil
}

// SettlementInputTarget implements catchup.Metering: the target net amount
// of exactly in, which must be settleable (reconciliation not required).
func (m Reads) SettlementInputTarget(ctx context.Context, settlementDimensionID string, in billingc.SettlementInput) (string, error) {
	s, err := metering.ReadSettlementInputAt(ctx, m.DB, settlementDimensionID, in.StateVersion)
	if err != nil {
		return "", err
	}
	if s.Ref.Snapshot != in.Snapshot || s.Ref.StateVersion != in.StateVersion {
		return "", fmt.Errorf("%w: %s v%d is %s in Metering", catchup.ErrConflict, settlementDimensionID, in.StateVersion, s.Ref.Snapshot.Ref)
	}
	if s.Snapshot.ReconciliationState != settlement.ReconciliationNotRequired {
		return "", fmt.Errorf("%w: %s v%d is %s", catchup.ErrSettlementInputNotSettleable, settlementDimensionID, in.StateVersion, s.Snapshot.ReconciliationState)
	}
	return s.Snapshot.TargetNetAmount, nil
}
