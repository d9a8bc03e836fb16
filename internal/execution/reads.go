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

// Reads answers every Execution directed read in process, over the
// execution database: what the Metering and Billing workers hold in a
// one-machine install (over HTTP when the owners run apart, the same
// answers).
type Reads struct{ DB db.Executor }

var _ executionread.Reader = Reads{}

func (r Reads) ReadEligibilityFact(ctx context.Context, req executionread.EligibilityFactRead) (executionread.EligibilityFactResult, error) {
	return ReadEligibilityFact(ctx, r.DB, req)
}

func (r Reads) ReadAttemptManifest(ctx context.Context, req executionread.AttemptManifestRead) (executionread.AttemptManifestResult, error) {
	return ReadAttemptManifest(ctx, r.DB, req)
}

func (r Reads) ReadRunFinalizationPrecondition(ctx context.Context, req executionread.RunFinalizationPreconditionRead) (executionread.PreconditionResult, error) {
	return ReadRunFinalizationPrecondition(ctx, r.DB, req)
}

func (r Reads) ReadRunExecutionFinalization(ctx context.Context, req executionread.RunExecutionFinalizationRead) (executionread.RunExecutionFinalizationResult, error) {
	return ReadRunExecutionFinalization(ctx, r.DB, req)
}

// ReadAttemptManifest answers readAttemptExecutionManifest@1: found with the
// attempt's stored manifest when it decodes strictly and its quadruple is
// exactly the request's; not_found when the attempt is unknown; conflicting
// when the attempt has another manifest (an attempt never changes route).
func ReadAttemptManifest(ctx context.Context, q db.Executor, req executionread.AttemptManifestRead) (executionread.AttemptManifestResult, error) {
	switch {
	case req.ContractVersion != executionread.ReadAttemptManifestV1:
		return executionread.AttemptManifestResult{}, fmt.Errorf("%w: contract version %q", ownerread.ErrInvalidRequest, req.ContractVersion)
	case req.Audience != executionread.AudienceMeteringInput && req.Audience != executionread.AudienceBillingFinalization:
		return executionread.AttemptManifestResult{}, fmt.Errorf("%w: audience %q", ownerread.ErrInvalidRequest, req.Audience)
	case !strict.IsUUID(req.ExecutionAttemptID):
		return executionread.AttemptManifestResult{}, fmt.Errorf("%w: attempt id %q", ownerread.ErrInvalidRequest, req.ExecutionAttemptID)
	}
	if err := req.AttemptManifest.Validate(); err != nil {
		return executionread.AttemptManifestResult{}, fmt.Errorf("%w: manifest (a bare attempt id is refused): %w", ownerread.ErrInvalidRequest, err)
	}
	m, body, err := AttemptByID(ctx, q, req.ExecutionAttemptID)
	switch {
	case errors.Is(err, db.ErrNotFound):
		return ownerread.Missing[*contract.AttemptExecutionManifest](), nil
	case err != nil:
		return executionread.AttemptManifestResult{}, err
	case m.Manifest != req.AttemptManifest:
		return ownerread.Conflict[*contract.AttemptExecutionManifest]("the attempt has another manifest"), nil
	}
	return ownerread.FoundWith(m, body), nil
}
