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
)

// ReadRunFinalizationPreconditionV1 is the contract version of the read.
const ReadRunFinalizationPreconditionV1 = "readRunFinalizationPrecondition@1"

// AudienceBillingFinalization is the one audience the read serves (Billing
// calls it after applying the closure event).
const AudienceBillingFinalization = "billing_finalization_coordinator"

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

// ReadRunFinalizationPrecondition answers readRunFinalizationPrecondition@1
// from the execution database. closed only when the stored fact and attempt
// set decode strictly, their digests recompute and every value equals the
// request; not_closed and run_not_found are answers of this call only
// (never a negative fact).
func ReadRunFinalizationPrecondition(ctx context.Context, q db.Executor, req RunFinalizationPreconditionRead) (PreconditionResult, error) {
	switch {
	case req.ContractVersion != ReadRunFinalizationPreconditionV1:
		return PreconditionResult{}, fmt.Errorf("%w: contract version %q", ownerread.ErrInvalidRequest, req.ContractVersion)
	case req.Audience != AudienceBillingFinalization:
		return PreconditionResult{}, fmt.Errorf("%w: audience %q", ownerread.ErrInvalidRequest, req.Audience)
	case !strict.IsUUID(req.RunID) || !strict.IsUUID(req.BillingReservationID) || !strict.IsUUID(req.BillingAccountID):
		return PreconditionResult{}, fmt.Errorf("%w: run, reservation and account ids are required", ownerread.ErrInvalidRequest)
	}
	for _, qd := range []strict.Quadruple{req.RunAdmissionManifest, req.Finalization, req.AttemptSet} {
		if err := qd.Validate(); err != nil {
			return PreconditionResult{}, fmt.Errorf("%w: %w", ownerread.ErrInvalidRequest, err)
		}
	}
	run, err := Run(ctx, q, req.RunID)
	if errors.Is(err, ErrRunNotFound) {
		return PreconditionResult{Answer: PreconditionRunNotFound}, nil
	}
	if err != nil {
		return PreconditionResult{}, err
	}
	if run.State == StateAcceptingAttempts {
		return PreconditionResult{Answer: PreconditionNotClosed}, nil
	}
	row, err := queries.FinalizationByRun(ctx, q, req.RunID)
	if err != nil {
		return PreconditionResult{}, fmt.Errorf("read run finalization %s: %w", req.RunID, err)
	}
	conflict := func(reason string) (PreconditionResult, error) {
		f := &contract.RunExecutionFinalizationConflictFact{
			Fact: strict.Quadruple{Ref: "rfc-" + req.RunID + "-" + req.Finalization.Digest[:16]}, RunID: req.RunID,
			Requested: req.Finalization, StoredRef: row.RunExecutionFinalizationRef, ReasonCode: reason,
			DetectedAt: time.Now().UTC().Truncate(time.Microsecond),
		}
		body, err := contract.Seal(f)
		if err != nil {
			return PreconditionResult{}, fmt.Errorf("seal finalization conflict: %w", err)
		}
		return PreconditionResult{Answer: PreconditionConflicting, Conflict: f, ConflictBody: body}, nil
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
	return PreconditionResult{Answer: PreconditionClosed, Fact: fact, Body: []byte(row.FactBody)}, nil
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
