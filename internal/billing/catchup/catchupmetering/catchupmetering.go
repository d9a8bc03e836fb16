// Package catchupmetering adapts the Metering owner's reads
// (meteringread.Reader: metering.Reads in process, its HTTP client when the
// owners run apart) to the Billing settlement catch-up worker
// (catchup.Metering): validateSettlementInputCurrent and the exact lineage
// read, in the catch-up's own terms.
package catchupmetering

import (
	"context"
	"fmt"

	billingc "github.com/oceanway/core/contracts/billing"
	"github.com/oceanway/core/contracts/settlement"
	"github.com/oceanway/core/internal/billing/catchup"
	"github.com/oceanway/core/internal/ownerread/meteringread"
)

// Reads is catchup.Metering over the Metering owner's reads:
// validateSettlementInputCurrent (one receipt per operation, the basis digest
// as the input manifest digest) and the exact lineage read (verified against
// the five-tuple).
type Reads struct {
	Metering meteringread.Reader
}

var _ catchup.Metering = Reads{}

// ValidateSettlementInputCurrent implements catchup.Metering.
func (m Reads) ValidateSettlementInputCurrent(ctx context.Context, req catchup.ValidationRequest) (catchup.Validation, error) {
	v, err := m.Metering.ValidateSettlementInputCurrent(ctx, meteringread.SettlementValidationRequest{
		Purpose: req.Purpose, OperationID: req.OperationID, SettlementDimensionID: req.SettlementDimensionID,
		Snapshot: settlement.Ref{Snapshot: req.Input.Snapshot, StateVersion: req.Input.StateVersion}, InputManifestDigest: req.BasisDigest,
	})
	if err != nil {
		return catchup.Validation{}, err
	}
	if v.Conflict != nil {
		// Metering's stored SettlementInputConflictFact@1 (issue 32): the
		// Work blocks on it (BillingSettlementCatchUpWorkAttemptBlocked@1).
		return catchup.Validation{}, &catchup.SettlementInputOwnerConflictError{Fact: v.Conflict.Fact,
			Detail: fmt.Sprintf("%s: %s v%d (%s)", v.Conflict.ReasonCode, req.SettlementDimensionID, req.Input.StateVersion, v.Conflict.BlockingCauseKind)}
	}
	if v.Receipt == nil {
		return catchup.Validation{}, fmt.Errorf("%w: metering answered neither a receipt nor a conflict fact", catchup.ErrConflict)
	}
	return catchup.Validation{Current: v.Receipt.Current, Receipt: v.Receipt.Receipt,
		CurrentInput: billingc.SettlementInput{Snapshot: v.Current.Snapshot, StateVersion: v.Current.StateVersion}}, nil
}

// SettlementInputTarget implements catchup.Metering: the target net amount
// of exactly in, which must be settleable (reconciliation not required).
func (m Reads) SettlementInputTarget(ctx context.Context, settlementDimensionID string, in billingc.SettlementInput) (string, error) {
	s, err := m.Metering.ReadSettlementInputAt(ctx, settlementDimensionID, in.StateVersion)
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
