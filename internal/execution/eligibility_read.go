package execution

import (
	"context"
	"errors"
	"fmt"

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
		return ownerread.Missing[*contract.ExecutionEligibilityFact](), nil
	}
	if err != nil {
		return executionread.EligibilityFactResult{}, fmt.Errorf("read eligibility %s: %w", req.ExecutionAttemptID, err)
	}
	f, err := contract.DecodeExecutionEligibilityFact([]byte(row.FactBody))
	if err != nil {
		return ownerread.Conflict[*contract.ExecutionEligibilityFact]("stored eligibility fact does not recompute"), nil
	}
	switch {
	case f.Fact != req.Fact:
		return ownerread.Conflict[*contract.ExecutionEligibilityFact]("the attempt's eligibility fact has another quadruple"), nil
	case f.AttemptManifest != req.AttemptManifest || f.RunID != req.RunID || f.RunStepID != req.RunStepID ||
		f.BillingAccountID != req.BillingAccountID || f.BillingReservationID != req.BillingReservationID:
		return ownerread.Conflict[*contract.ExecutionEligibilityFact]("the eligibility fact names other identities"), nil
	}
	return ownerread.FoundWith(f, []byte(row.FactBody)), nil
}
