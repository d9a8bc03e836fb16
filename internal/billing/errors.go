package billing

import "errors"

// SQLSTATEs billing's migrations raise (schema/migrations/00001, 00002,
// 00040; docs/billing.md lists the rule each guards).
const (
	CodeInsertOnly           = "BL001" // update/delete of an insert-only billing fact
	CodeTransitionRefused    = "BL002" // a transition the state graph refuses
	CodeReconciliationGuard  = "BL003" // reconciliation_required entered without its case request, left without its resolution
	CodeLedgerUnbalanced     = "BL004" // unbalanced posting group / line off identity
	CodeLedgerMismatch       = "BL005" // finalized reservation whose ledger does not add up
	CodeLedgerUnjustified    = "BL006" // posting group without its justifying fact, or lines off its amounts
	CodeCommittedUnproven    = "BL007" // committed fact whose fence, Work, reservation, group, decision or event does not commit with it
	CodeDecisionAfterSuccess = "BL008" // a finalization decision for a committed fence
	CodeFactEventUnbacked    = "BL009" // a billing fact event without the one fact naming it
	CodeNegativeBalance      = "BL010" // a ledger balance below zero
)

var (
	// ErrInvalidDecision: the decision is not a committable success (outcome,
	// amounts, quadruples); nothing was written.
	ErrInvalidDecision = errors.New("billing: invalid finalization decision")
	// ErrInvalidEvaluation: the evaluation is malformed; nothing was written.
	ErrInvalidEvaluation = errors.New("billing: invalid finalization evaluation")
	// ErrFenceNotFound: no fence for the reservation/run (yet).
	ErrFenceNotFound = errors.New("billing: finalization fence not found")
	// ErrStaleWork: the Work generation is not the fence's active one (a
	// newer generation superseded it, or the fence is not pending).
	ErrStaleWork = errors.New("billing: work generation is not the fence's active work")
	// ErrClosureNotApplied: the fence has no applied closure event; only the
	// closure_event_not_applied blocked evaluation is possible.
	ErrClosureNotApplied = errors.New("billing: closure event not applied")
	// ErrAlreadyFinalized: the reservation was finalized by another decision.
	ErrAlreadyFinalized = errors.New("billing: reservation already finalized with another decision")
	// ErrEvaluationConflict: this generation's evaluation was recorded with other content.
	ErrEvaluationConflict = errors.New("billing: evaluation already recorded with other content")
	// ErrCaseIdentityMismatch: the case identity is not the fence's next
	// case generation (or not the one this fence's case is bound to).
	ErrCaseIdentityMismatch = errors.New("billing: case identity does not match the fence's case generation")
)
