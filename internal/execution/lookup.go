package execution

import (
	"context"
	"fmt"

	contract "github.com/oceanway/core/contracts/execution"
	"github.com/oceanway/core/contracts/strict"
	"github.com/oceanway/core/internal/db"
)

// ClosureByRun reads a run's committed closure as stored: its
// RunAttemptSetManifest@1 and RunExecutionFinalizationFact@1, each decoded
// strictly (its digest recomputes). A run that is unknown or not closed is
// db.ErrNotFound.
func ClosureByRun(ctx context.Context, q db.Executor, runID string) (Closure, error) {
	if !strict.IsUUID(runID) {
		return Closure{}, fmt.Errorf("read closure %q: %w", runID, db.ErrNotFound)
	}
	row, err := queries.FinalizationByRun(ctx, q, runID)
	if err != nil {
		return Closure{}, fmt.Errorf("read closure %s: %w", runID, db.NotFound(err))
	}
	set, err := contract.DecodeRunAttemptSetManifest([]byte(row.AttemptSetBody))
	if err != nil {
		return Closure{}, fmt.Errorf("read closure %s: stored attempt set: %w", runID, err)
	}
	fact, err := contract.DecodeRunExecutionFinalizationFact([]byte(row.FactBody))
	if err != nil {
		return Closure{}, fmt.Errorf("read closure %s: stored finalization fact: %w", runID, err)
	}
	return Closure{AttemptSet: set, AttemptSetBody: []byte(row.AttemptSetBody), Fact: fact, FactBody: []byte(row.FactBody), EventID: row.EventID}, nil
}

// EligibilityByAttempt reads an attempt's ExecutionEligibilityFact@1 as
// stored, decoded strictly (its digest recomputes; a not_dispatched fact
// names its AttemptNotDispatchedFact@1 quadruple). An attempt without one
// is db.ErrNotFound.
func EligibilityByAttempt(ctx context.Context, q db.Executor, attemptID string) (Eligibility, error) {
	if !strict.IsUUID(attemptID) {
		return Eligibility{}, fmt.Errorf("read eligibility %q: %w", attemptID, db.ErrNotFound)
	}
	row, err := queries.EligibilityByAttempt(ctx, q, attemptID)
	if err != nil {
		return Eligibility{}, fmt.Errorf("read eligibility %s: %w", attemptID, db.NotFound(err))
	}
	f, err := contract.DecodeExecutionEligibilityFact([]byte(row.FactBody))
	if err != nil {
		return Eligibility{}, fmt.Errorf("read eligibility %s: stored fact: %w", attemptID, err)
	}
	if f.Disposition != row.DispatchDisposition {
		return Eligibility{}, fmt.Errorf("read eligibility %s: stored fact and row disagree on the disposition", attemptID)
	}
	return Eligibility{Fact: f, Body: []byte(row.FactBody), EventID: row.EventID}, nil
}
