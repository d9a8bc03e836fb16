// Package executionread is the Execution owner's directed reads as the other
// owners call them: the requests, the answers and the contract versions and
// audiences, with no database behind them. The Execution owner answers them
// (execution.Reads, in process); a caller depends only on this package and
// on a Reader, so it never imports the Execution owner nor holds its DSN.
package executionread

import (
	"context"

	contract "github.com/oceanway/core/contracts/execution"
	"github.com/oceanway/core/contracts/strict"
	"github.com/oceanway/core/internal/ownerread"
)

// Reader is every directed read the Execution owner answers.
type Reader interface {
	ReadEligibilityFact(ctx context.Context, req EligibilityFactRead) (EligibilityFactResult, error)
	ReadAttemptManifest(ctx context.Context, req AttemptManifestRead) (AttemptManifestResult, error)
	ReadRunFinalizationPrecondition(ctx context.Context, req RunFinalizationPreconditionRead) (PreconditionResult, error)
	ReadRunExecutionFinalization(ctx context.Context, req RunExecutionFinalizationRead) (RunExecutionFinalizationResult, error)
}

// Audiences (workload purposes) of the Execution reads.
const (
	// AudienceMeteringInput is the Metering input processor and worker.
	AudienceMeteringInput = "metering_input_processor"
	// AudienceBillingFinalization is the Billing finalization worker (it
	// calls the closure reads after applying the closure event).
	AudienceBillingFinalization = "billing_finalization_coordinator"
)

// ReadEligibilityFactV1 is the contract version of the event-bound
// eligibility read the Metering input processor calls before it accepts an
// execution.attempt-eligibility.finalized@1 event.
const ReadEligibilityFactV1 = "readExecutionEligibilityFact@1"

// EligibilityFactRead is the request: the event's attempt identities and the
// exact fact and attempt manifest quadruples it carried.
type EligibilityFactRead struct {
	ContractVersion      string
	Audience             string
	BillingReservationID string
	BillingAccountID     string
	RunID                string
	RunStepID            string
	ExecutionAttemptID   string
	AttemptManifest      strict.Quadruple
	Fact                 strict.Quadruple
}

// EligibilityFactResult is the answer: found with the fact and its body;
// not_found; conflicting with the reason and Execution's stored
// ExecutionEligibilityConflictFact@1 and its canonical body (issue 32: the
// quadruple a Blocked@1 of cause execution_eligibility_owner_conflict names).
type EligibilityFactResult struct {
	ownerread.Result[*contract.ExecutionEligibilityFact]
	Conflict     *contract.ExecutionEligibilityConflictFact
	ConflictBody []byte
}

// ReadAttemptManifestV1 is the contract version of the attempt manifest
// read: the Metering worker's cost lane checks that the attempt an
// availability snapshot names has exactly the manifest the snapshot cites;
// the Metering eligibility Work and the Billing finalization worker take
// the attempt's frozen charge dimension set from it (issue 32 part 4).
const ReadAttemptManifestV1 = "readAttemptExecutionManifest@1"

// AttemptManifestRead is the request: the attempt and the exact manifest
// quadruple the caller holds (never a bare attempt id).
type AttemptManifestRead struct {
	ContractVersion    string
	Audience           string
	ExecutionAttemptID string
	AttemptManifest    strict.Quadruple
}

// AttemptManifestResult is the answer: found with the manifest and its body.
type AttemptManifestResult = ownerread.Result[*contract.AttemptExecutionManifest]

// ReadRunFinalizationPreconditionV1 is the contract version of the closure
// precondition read.
const ReadRunFinalizationPreconditionV1 = "readRunFinalizationPrecondition@1"

// Answers of readRunFinalizationPrecondition@1.
const (
	PreconditionClosed      = "closed"
	PreconditionNotClosed   = "not_closed"
	PreconditionRunNotFound = "run_not_found"
	PreconditionConflicting = "conflicting"
)

// RunFinalizationPreconditionRead is the request: the exact identities and
// quadruples the closure event carried.
type RunFinalizationPreconditionRead struct {
	ContractVersion      string
	Audience             string
	RunID                string
	BillingReservationID string
	BillingAccountID     string
	RunAdmissionManifest strict.Quadruple
	Finalization         strict.Quadruple
	StateVersion         int64
	AttemptSet           strict.Quadruple
	AttemptCount         int64
}

// PreconditionResult is closed (with the fact and its body) | not_closed |
// run_not_found | conflicting (with a sealed
// RunExecutionFinalizationConflictFact@1).
type PreconditionResult struct {
	Answer       string
	Fact         *contract.RunExecutionFinalizationFact
	Body         []byte
	Conflict     *contract.RunExecutionFinalizationConflictFact
	ConflictBody []byte
}

// RunExecutionFinalizationRead is the request of
// readRunExecutionFinalization@1: the Billing finalization operation and the
// input manifest the receipt will be bound to, and every closure identity
// and quadruple the manifest names.
type RunExecutionFinalizationRead struct {
	ContractVersion         string
	Audience                string
	Purpose                 string
	FinalizationOperationID string
	InputManifest           strict.Quadruple
	RunID                   string
	BillingReservationID    string
	BillingAccountID        string
	RunAdmissionManifest    strict.Quadruple
	Finalization            strict.Quadruple
	StateVersion            int64
	AttemptSet              strict.Quadruple
	AttemptCount            int64
}

// RunExecutionFinalizationResult is found (the sealed
// RunExecutionFinalizationReceipt@1 and its body) | not_found (the run is
// unknown or still accepting attempts: a normal wait for Billing, never a
// negative fact) | conflicting (with the sealed
// RunExecutionFinalizationConflictFact@1, never a case ref).
type RunExecutionFinalizationResult struct {
	ownerread.Result[*contract.RunExecutionFinalizationReceipt]
	Conflict     *contract.RunExecutionFinalizationConflictFact
	ConflictBody []byte
}
