package catchup

import (
	"errors"
	"time"

	"github.com/oceanway/core/contracts/reconciliation"
)

// The late settlement command (issue 32, ADR-031 "终局后变化采用追加式
// Transition"): the only way a late settlement exposure is charged. The
// admin command gateway presents Operations' candidate and decision, Core's
// signed single-use grant and Billing's own FundingDecision@1; Billing takes
// Metering's current late_settlement_command receipt and commits, in one
// ledger transaction, both JTIs consumed, the post-release adjustment, the
// exposure resolved, the dimension's settlement state advanced,
// LateSettlementCommandResult@1 and BillingCaseResolutionApplied@1 with their
// events.

// LateSettlementCommand is one late settlement command as the gateway
// presents it.
type LateSettlementCommand struct {
	// Grant is the compact JWS of SignedWorkforceCommandExecutionGrant@1
	// (audience billing_late_settlement_command).
	Grant     string
	Candidate *reconciliation.LateCandidate
	Decision  *reconciliation.LateDecision
	// Funding is Billing's FundingDecision@1 for this decision's command
	// operation (DecideFunding).
	Funding *reconciliation.FundingDecision
	// Now is the time the grant and the funding must be valid at
	// (time.Now when zero).
	Now time.Time
}

// LateSettlementOutcome is the command's stable result.
type LateSettlementOutcome struct {
	Result  *reconciliation.LateResult
	Applied *reconciliation.CaseResolutionApplied
	// Replayed: the command operation committed before with exactly this
	// command; nothing was written and the first result is returned.
	Replayed bool
}

// Refusals of the late settlement command and of the funding decision.
var (
	// ErrExposureNotOpen: the exposure is resolved, superseded or not the
	// one the case generation funds.
	ErrExposureNotOpen = errors.New("billing: the late settlement exposure is not open")
	// ErrLateCaseGeneration: the command's case generation is not the
	// exposure's, or not open / resolving as the step requires.
	ErrLateCaseGeneration = errors.New("billing: the command's case generation is not the exposure's current one")
	// ErrLateCommandConflict: the command operation committed before with
	// another candidate, decision, grant or funding decision.
	ErrLateCommandConflict = errors.New("billing: late settlement command operation committed with other content")
	// ErrJTIConsumed: the grant's or the funding decision's jti was consumed
	// by another command.
	ErrJTIConsumed = errors.New("billing: single-use jti already consumed")
	// ErrFundingRefused: Billing's funding policy does not fund the
	// command (or the funding decision is stale: the account's source
	// revision moved).
	ErrFundingRefused = errors.New("billing: the late settlement command is not funded")
	// ErrSettlementInputNotCurrent: Metering answered that the exposure's
	// settlement input is no longer the dimension's current one.
	ErrSettlementInputNotCurrent = errors.New("billing: the exposure's settlement input is not current")
)
