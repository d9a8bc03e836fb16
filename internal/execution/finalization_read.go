package execution

import (
	"context"
	"fmt"
	"time"

	contract "github.com/oceanway/core/contracts/execution"
	"github.com/oceanway/core/contracts/strict"
	"github.com/oceanway/core/internal/db"
	"github.com/oceanway/core/internal/ownerread"
)

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

// FinalizationReceiptRef is the deterministic ref of the receipt issued for
// one finalization operation and one input manifest digest: a repeated read
// issues the same receipt (validatedAt is outside the digest candidate).
func FinalizationReceiptRef(finalizationOperationID, inputManifestDigest string) string {
	return "rxr-" + finalizationOperationID + "-" + inputManifestDigest[:16]
}

// ReadRunExecutionFinalization answers readRunExecutionFinalization@1 for the
// Billing finalization worker (ADR-031 "恰好一份 Execution Receipt"). It runs
// the same comparisons as readRunFinalizationPrecondition@1 and, when the
// closure equals the request item by item, issues a receipt that echoes the
// purpose, the operation and the input manifest quadruple.
func ReadRunExecutionFinalization(ctx context.Context, q db.Executor, req RunExecutionFinalizationRead) (RunExecutionFinalizationResult, error) {
	switch {
	case req.ContractVersion != contract.ReadRunExecutionFinalizationV1:
		return RunExecutionFinalizationResult{}, fmt.Errorf("%w: contract version %q", ownerread.ErrInvalidRequest, req.ContractVersion)
	case req.Purpose != contract.PurposeBillingFinalization:
		return RunExecutionFinalizationResult{}, fmt.Errorf("%w: purpose %q", ownerread.ErrInvalidRequest, req.Purpose)
	case !strict.IsUUID(req.FinalizationOperationID):
		return RunExecutionFinalizationResult{}, fmt.Errorf("%w: finalization operation id is required", ownerread.ErrInvalidRequest)
	case req.AttemptCount < 0:
		return RunExecutionFinalizationResult{}, fmt.Errorf("%w: negative attempt count", ownerread.ErrInvalidRequest)
	}
	if err := req.InputManifest.Validate(); err != nil {
		return RunExecutionFinalizationResult{}, fmt.Errorf("%w: input manifest: %w", ownerread.ErrInvalidRequest, err)
	}
	pre, err := ReadRunFinalizationPrecondition(ctx, q, RunFinalizationPreconditionRead{
		ContractVersion: ReadRunFinalizationPreconditionV1, Audience: req.Audience, RunID: req.RunID,
		BillingReservationID: req.BillingReservationID, BillingAccountID: req.BillingAccountID,
		RunAdmissionManifest: req.RunAdmissionManifest, Finalization: req.Finalization, StateVersion: req.StateVersion,
		AttemptSet: req.AttemptSet, AttemptCount: req.AttemptCount,
	})
	if err != nil {
		return RunExecutionFinalizationResult{}, err
	}
	switch pre.Answer {
	case PreconditionNotClosed, PreconditionRunNotFound:
		return RunExecutionFinalizationResult{Result: ownerread.Missing[*contract.RunExecutionFinalizationReceipt]()}, nil
	case PreconditionConflicting:
		return RunExecutionFinalizationResult{
			Result:   ownerread.Conflict[*contract.RunExecutionFinalizationReceipt](pre.Conflict.ReasonCode),
			Conflict: pre.Conflict, ConflictBody: pre.ConflictBody,
		}, nil
	}
	f := pre.Fact
	r := &contract.RunExecutionFinalizationReceipt{
		Receipt:    strict.Quadruple{Ref: FinalizationReceiptRef(req.FinalizationOperationID, req.InputManifest.Digest)},
		RunClosure: f.RunClosure, FinalizationOperationID: req.FinalizationOperationID, InputManifest: req.InputManifest,
		ClosureOperationID: f.ClosureOperationID, Finalization: f.Fact, StateVersion: f.StateVersion,
		AttemptSet: f.AttemptSet, AttemptCount: int64(len(f.Attempts)), ValidatedAt: time.Now().UTC().Truncate(time.Microsecond),
	}
	body, err := contract.Seal(r)
	if err != nil {
		return RunExecutionFinalizationResult{}, fmt.Errorf("seal finalization receipt: %w", err)
	}
	return RunExecutionFinalizationResult{Result: ownerread.FoundWith(r, body)}, nil
}
