package execution

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

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
			Fact: strict.Quadruple{Ref: "rfc-" + uuid.Must(uuid.NewV7()).String()}, RunID: req.RunID,
			Requested: req.Finalization, StoredRef: row.RunExecutionFinalizationRef, ReasonCode: reason,
			DetectedAt: time.Now().UTC().Truncate(time.Microsecond),
		}
		body, err := contract.Seal(f)
		if err != nil {
			return executionread.PreconditionResult{}, fmt.Errorf("seal finalization conflict: %w", err)
		}
		stored, storedBody, err := storeFinalizationConflict(ctx, q, f, body)
		if err != nil {
			return executionread.PreconditionResult{}, err
		}
		return executionread.PreconditionResult{Answer: executionread.PreconditionConflicting, Conflict: stored, ConflictBody: storedBody}, nil
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

var qFinalizationConflictInsert = metricsStatements.Get("finalization_conflict_insert")

// ErrFinalizationConflictDiffers: the run already has a stored
// RunExecutionFinalizationConflictFact@1 for the same requested
// finalization that says something else (insert-or-compare); nothing is
// answered.
var ErrFinalizationConflictDiffers = errors.New("execution: the requested finalization already has another conflict fact")

// storeFinalizationConflict stores the conflict fact insert-or-compare on
// (run, requested finalization quadruple, reason) and returns the stored one
// (issue 32): the same conflict read twice is one durable fact.
func storeFinalizationConflict(ctx context.Context, q db.Executor, f *contract.RunExecutionFinalizationConflictFact, body []byte) (*contract.RunExecutionFinalizationConflictFact, []byte, error) {
	var stored string
	if err := q.QueryRow(ctx, qFinalizationConflictInsert, pgx.NamedArgs{"fact_ref": f.Fact.Ref, "fact_digest": f.Fact.Digest,
		"run_id": f.RunID, "requested_ref": f.Requested.Ref, "requested_digest": f.Requested.Digest, "reason_code": f.ReasonCode, "fact_body": string(body),
		"detected_at": f.DetectedAt}).Scan(&stored); err != nil {
		return nil, nil, fmt.Errorf("store finalization conflict of %s: %w", f.RunID, err)
	}
	got, err := contract.DecodeRunExecutionFinalizationConflictFact([]byte(stored))
	if err != nil {
		return nil, nil, fmt.Errorf("stored finalization conflict of %s: %w", f.RunID, err)
	}
	// The key fixes the request and the reason, and EX013 the stored
	// closure: compared anyway so a fact is never answered for another
	// conflict.
	if got.Requested != f.Requested || got.StoredRef != f.StoredRef || got.ReasonCode != f.ReasonCode {
		return nil, nil, fmt.Errorf("%w: run %s (stored %s, now %s)", ErrFinalizationConflictDiffers, f.RunID, got.ReasonCode, f.ReasonCode)
	}
	return got, []byte(stored), nil
}
