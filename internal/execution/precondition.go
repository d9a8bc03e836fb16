package execution

import (
	"context"
	"errors"
	"fmt"
	"time"

	contract "github.com/oceanway/core/contracts/execution"
	"github.com/oceanway/core/contracts/strict"
	"github.com/oceanway/core/internal/db"
	"github.com/oceanway/core/internal/ownerread"
	"github.com/oceanway/core/internal/ownerread/executionread"
)

// ReadRunFinalizationPrecondition answers readRunFinalizationPrecondition@1
// from the execution database. closed only when the stored fact and attempt
// set decode strictly, their digests recompute and every value equals the
// request; not_closed and run_not_found are answers of this call only
// (never a negative fact).
func ReadRunFinalizationPrecondition(ctx context.Context, q db.Executor, req executionread.RunFinalizationPreconditionRead) (executionread.PreconditionResult, error) {
	switch {
	case req.ContractVersion != executionread.ReadRunFinalizationPreconditionV1:
		return executionread.PreconditionResult{}, fmt.Errorf("%w: contract version %q", ownerread.ErrInvalidRequest, req.ContractVersion)
	case req.Audience != executionread.AudienceBillingFinalization:
		return executionread.PreconditionResult{}, fmt.Errorf("%w: audience %q", ownerread.ErrInvalidRequest, req.Audience)
	case !strict.IsUUID(req.RunID) || !strict.IsUUID(req.BillingReservationID) || !strict.IsUUID(req.BillingAccountID):
		return executionread.PreconditionResult{}, fmt.Errorf("%w: run, reservation and account ids are required", ownerread.ErrInvalidRequest)
	}
	for _, qd := range []strict.Quadruple{req.RunAdmissionManifest, req.Finalization, req.AttemptSet} {
		if err := qd.Validate(); err != nil {
			return executionread.PreconditionResult{}, fmt.Errorf("%w: %w", ownerread.ErrInvalidRequest, err)
		}
	}
	run, err := Run(ctx, q, req.RunID)
	if errors.Is(err, ErrRunNotFound) {
		return executionread.PreconditionResult{Answer: executionread.PreconditionRunNotFound}, nil
	}
	if err != nil {
		return executionread.PreconditionResult{}, err
	}
	if run.State == StateAcceptingAttempts {
		return executionread.PreconditionResult{Answer: executionread.PreconditionNotClosed}, nil
	}
	row, err := queries.FinalizationByRun(ctx, q, req.RunID)
	if err != nil {
		return executionread.PreconditionResult{}, fmt.Errorf("read run finalization %s: %w", req.RunID, err)
	}
	conflict := func(reason string) (executionread.PreconditionResult, error) {
		f := &contract.RunExecutionFinalizationConflictFact{
			Fact: strict.Quadruple{Ref: "rfc-" + req.RunID + "-" + req.Finalization.Digest[:16]}, RunID: req.RunID,
			Requested: req.Finalization, StoredRef: row.RunExecutionFinalizationRef, ReasonCode: reason,
			DetectedAt: time.Now().UTC().Truncate(time.Microsecond),
		}
		body, err := contract.Seal(f)
		if err != nil {
			return executionread.PreconditionResult{}, fmt.Errorf("seal finalization conflict: %w", err)
		}
		return executionread.PreconditionResult{Answer: executionread.PreconditionConflicting, Conflict: f, ConflictBody: body}, nil
	}
	fact, err := contract.DecodeRunExecutionFinalizationFact([]byte(row.FactBody))
	if err != nil {
		return conflict("stored_finalization_invalid")
	}
	set, err := contract.DecodeRunAttemptSetManifest([]byte(row.AttemptSetBody))
	if err != nil {
		return conflict("stored_attempt_set_invalid")
	}
	switch {
	case fact.Fact != req.Finalization:
		return conflict("finalization_differs")
	case fact.AttemptSet != req.AttemptSet || set.Manifest != req.AttemptSet:
		return conflict("attempt_set_differs")
	case fact.StateVersion != req.StateVersion || int64(len(fact.Attempts)) != req.AttemptCount:
		return conflict("state_version_or_count_differs")
	case fact.RunID != req.RunID || fact.BillingReservationID != req.BillingReservationID ||
		fact.BillingAccountID != req.BillingAccountID || fact.RunAdmissionManifest != req.RunAdmissionManifest:
		return conflict("run_identity_differs")
	case !sameItems(fact.Attempts, set.Attempts):
		return conflict("finalization_attempts_differ_from_set")
	}
	return executionread.PreconditionResult{Answer: executionread.PreconditionClosed, Fact: fact, Body: []byte(row.FactBody)}, nil
}

func sameItems(a, b []contract.AttemptSetItem) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
