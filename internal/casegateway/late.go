package casegateway

import (
	"context"

	"github.com/oceanway/core/contracts/reconciliation"
	"github.com/oceanway/core/internal/billing/catchup"
)

// LateBilling is Billing's side of the late settlement command (issue 32):
// its FundingDecision@1 for an Operations decision, and the one ledger
// transaction that applies the command (catchup.LateCommands in process).
type LateBilling interface {
	// DecideFunding returns Billing's FundingDecision@1 for the decision's
	// command operation (the stored one after a lost response), or a
	// refusal (catchup.ErrFundingRefused, ErrExposureNotOpen,
	// ErrLateCaseGeneration).
	DecideFunding(ctx context.Context, decision *reconciliation.LateDecision) (*reconciliation.FundingDecision, error)
	// ApplyLateSettlementCommand applies the command, or returns the first
	// outcome of the same command operation.
	ApplyLateSettlementCommand(ctx context.Context, cmd catchup.LateSettlementCommand) (catchup.LateSettlementOutcome, error)
}
