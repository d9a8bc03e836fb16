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

// ReadEligibilityFact answers readExecutionEligibilityFact@1: found only when
// the attempt's stored fact decodes strictly, its digest recomputes and every
// identity and quadruple equals the request; not_found when the attempt has
// no fact; conflicting otherwise.
func ReadEligibilityFact(ctx context.Context, q db.Executor, req executionread.EligibilityFactRead) (executionread.EligibilityFactResult, error) {
	switch {
	case req.ContractVersion != executionread.ReadEligibilityFactV1:
		return executionread.EligibilityFactResult{}, fmt.Errorf("%w: contract version %q", ownerread.ErrInvalidRequest, req.ContractVersion)
	case req.Audience != executionread.AudienceMeteringInput:
		return executionread.EligibilityFactResult{}, fmt.Errorf("%w: audience %q", ownerread.ErrInvalidRequest, req.Audience)
	case !strict.IsUUID(req.ExecutionAttemptID) || !strict.IsUUID(req.RunID):
		return executionread.EligibilityFactResult{}, fmt.Errorf("%w: attempt and run are required", ownerread.ErrInvalidRequest)
	}
	if err := req.Fact.Validate(); err != nil {
		return executionread.EligibilityFactResult{}, fmt.Errorf("%w: fact: %w", ownerread.ErrInvalidRequest, err)
	}
	if err := req.AttemptManifest.Validate(); err != nil {
		return executionread.EligibilityFactResult{}, fmt.Errorf("%w: manifest: %w", ownerread.ErrInvalidRequest, err)
	}
	row, err := queries.EligibilityByAttempt(ctx, q, req.ExecutionAttemptID)
	if errors.Is(db.NotFound(err), db.ErrNotFound) {
		return executionread.EligibilityFactResult{Result: ownerread.Missing[*contract.ExecutionEligibilityFact]()}, nil
	}
	if err != nil {
		return executionread.EligibilityFactResult{}, fmt.Errorf("read eligibility %s: %w", req.ExecutionAttemptID, err)
	}
	f, err := contract.DecodeExecutionEligibilityFact([]byte(row.FactBody))
	if err != nil {
		return eligibilityConflict(ctx, q, req, "", contract.EligibilityConflictStoredInvalid)
	}
	switch {
	case f.Fact != req.Fact:
		return eligibilityConflict(ctx, q, req, f.Fact.Ref, contract.EligibilityConflictFactDiffers)
	case f.AttemptManifest != req.AttemptManifest || f.RunID != req.RunID || f.RunStepID != req.RunStepID ||
		f.BillingAccountID != req.BillingAccountID || f.BillingReservationID != req.BillingReservationID:
		return eligibilityConflict(ctx, q, req, f.Fact.Ref, contract.EligibilityConflictIdentityDiffers)
	}
	return executionread.EligibilityFactResult{Result: ownerread.FoundWith(f, []byte(row.FactBody))}, nil
}

var qEligibilityConflictInsert = metricsStatements.Get("eligibility_conflict_insert")

// ErrEligibilityConflictDiffers: a stored ExecutionEligibilityConflictFact@1
// with the same key says something else (insert-or-compare); nothing is
// answered.
var ErrEligibilityConflictDiffers = errors.New("execution: the requested eligibility fact already has another conflict fact")

// eligibilityConflict answers conflicting with Execution's stored
// ExecutionEligibilityConflictFact@1 (issue 32), stored insert-or-compare on
// (attempt, requested fact quadruple, reason): the same conflict read again
// is one durable fact.
func eligibilityConflict(ctx context.Context, q db.Executor, req executionread.EligibilityFactRead, storedRef, reason string) (executionread.EligibilityFactResult, error) {
	f := &contract.ExecutionEligibilityConflictFact{Fact: strict.Quadruple{Ref: "eec-" + uuid.Must(uuid.NewV7()).String()}, RunID: req.RunID,
		RunStepID: req.RunStepID, ExecutionAttemptID: req.ExecutionAttemptID, RequestedFact: req.Fact, RequestedManifest: req.AttemptManifest,
		StoredRef: storedRef, ReasonCode: reason, DetectedAt: time.Now().UTC().Truncate(time.Microsecond)}
	body, err := contract.Seal(f)
	if err != nil {
		return executionread.EligibilityFactResult{}, fmt.Errorf("seal eligibility conflict: %w", err)
	}
	var stored string
	if err := q.QueryRow(ctx, qEligibilityConflictInsert, pgx.NamedArgs{"fact_ref": f.Fact.Ref, "fact_digest": f.Fact.Digest,
		"execution_attempt_id": f.ExecutionAttemptID, "requested_ref": f.RequestedFact.Ref, "requested_digest": f.RequestedFact.Digest,
		"reason_code": reason, "fact_body": string(body), "detected_at": f.DetectedAt}).Scan(&stored); err != nil {
		return executionread.EligibilityFactResult{}, fmt.Errorf("store eligibility conflict of %s: %w", f.ExecutionAttemptID, err)
	}
	got, err := contract.DecodeExecutionEligibilityConflictFact([]byte(stored))
	if err != nil {
		return executionread.EligibilityFactResult{}, fmt.Errorf("stored eligibility conflict of %s: %w", f.ExecutionAttemptID, err)
	}
	// guard EX-3.eligibility-conflict-differs
	if got.RequestedManifest != f.RequestedManifest || got.RunID != f.RunID || got.RunStepID != f.RunStepID || got.StoredRef != f.StoredRef {
		return executionread.EligibilityFactResult{}, fmt.Errorf("%w: attempt %s", ErrEligibilityConflictDiffers, f.ExecutionAttemptID)
	}
	return executionread.EligibilityFactResult{Result: ownerread.Conflict[*contract.ExecutionEligibilityFact](got.ReasonCode),
		Conflict: got, ConflictBody: []byte(stored)}, nil
}
