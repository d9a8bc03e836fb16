package execution

import (
	"context"
	"fmt"
	"time"

	contract "github.com/oceanway/core/contracts/execution"
	"github.com/oceanway/core/contracts/strict"
	"github.com/oceanway/core/internal/db"
	"github.com/oceanway/core/internal/ownerread"
	"github.com/oceanway/core/internal/ownerread/executionread"
)

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
func ReadRunExecutionFinalization(ctx context.Context, q db.Executor, req executionread.RunExecutionFinalizationRead) (executionread.RunExecutionFinalizationResult, error) {
	switch {
	case req.ContractVersion != contract.ReadRunExecutionFinalizationV1:
		return executionread.RunExecutionFinalizationResult{}, fmt.Errorf("%w: contract version %q", ownerread.ErrInvalidRequest, req.ContractVersion)
	case req.Purpose != contract.PurposeBillingFinalization:
		return executionread.RunExecutionFinalizationResult{}, fmt.Errorf("%w: purpose %q", ownerread.ErrInvalidRequest, req.Purpose)
	case !strict.IsUUID(req.FinalizationOperationID):
		return executionread.RunExecutionFinalizationResult{}, fmt.Errorf("%w: finalization operation id is required", ownerread.ErrInvalidRequest)
	case req.AttemptCount < 0:
		return executionread.RunExecutionFinalizationResult{}, fmt.Errorf("%w: negative attempt count", ownerread.ErrInvalidRequest)
	}
	if err := req.InputManifest.Validate(); err != nil {
		return executionread.RunExecutionFinalizationResult{}, fmt.Errorf("%w: input manifest: %w", ownerread.ErrInvalidRequest, err)
	}
	pre, err := ReadRunFinalizationPrecondition(ctx, q, executionread.RunFinalizationPreconditionRead{
		ContractVersion: executionread.ReadRunFinalizationPreconditionV1, Audience: req.Audience, RunID: req.RunID,
		BillingReservationID: req.BillingReservationID, BillingAccountID: req.BillingAccountID,
		RunAdmissionManifest: req.RunAdmissionManifest, Finalization: req.Finalization, StateVersion: req.StateVersion,
		AttemptSet: req.AttemptSet, AttemptCount: req.AttemptCount,
	})
	if err != nil {
		return executionread.RunExecutionFinalizationResult{}, err
	}
	switch pre.Answer {
	case executionread.PreconditionNotClosed, executionread.PreconditionRunNotFound:
		return executionread.RunExecutionFinalizationResult{Result: ownerread.Missing[*contract.RunExecutionFinalizationReceipt]()}, nil
	case executionread.PreconditionConflicting:
		return executionread.RunExecutionFinalizationResult{
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
		return executionread.RunExecutionFinalizationResult{}, fmt.Errorf("seal finalization receipt: %w", err)
	}
	return executionread.RunExecutionFinalizationResult{Result: ownerread.FoundWith(r, body)}, nil
}
