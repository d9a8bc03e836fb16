package gateway

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	contract "github.com/oceanway/core/contracts/execution"
	"github.com/oceanway/core/contracts/strict"
	"github.com/oceanway/core/internal/db"
	"github.com/oceanway/core/internal/ownerread"
	"github.com/oceanway/core/internal/ownerread/gatewayread"
)

// ReadAttemptUsageDimensions answers readAttemptUsageDimensions@1 for the
// Billing finalization worker: the evidence dimension keys of every
// attempt-bound provider_usage availability chain of the attempt (sorted;
// empty when it has none). Billing's input manifest must cover one
// settlement input per such dimension before it may decide, so a dimension
// Metering has not settled yet is a visible wait instead of a finalization
// that silently misses it. The chain set only grows; the read is the
// attempt-unique index of the current pointers.
func ReadAttemptUsageDimensions(ctx context.Context, q db.Executor, req gatewayread.AttemptUsageDimensionsRead) ([]string, error) {
	switch {
	case req.ContractVersion != gatewayread.ReadAttemptUsageDimensionsV1:
		return nil, fmt.Errorf("%w: contract version %q", ownerread.ErrInvalidRequest, req.ContractVersion)
	case req.Audience != gatewayread.AudienceBillingFinalization:
		return nil, fmt.Errorf("%w: audience %q", ownerread.ErrInvalidRequest, req.Audience)
	case !strict.IsUUID(req.ExecutionAttemptID):
		return nil, fmt.Errorf("%w: attempt id %q", ownerread.ErrInvalidRequest, req.ExecutionAttemptID)
	}
	rows, err := q.Query(ctx, `SELECT DISTINCT evidence_dimension_key FROM gateway.availability_currents
		WHERE execution_attempt_id = $1 AND provider_evidence_kind = $2 ORDER BY 1`, req.ExecutionAttemptID, contract.EvidenceProviderUsage)
	if err != nil {
		return nil, fmt.Errorf("read usage dimensions of %s: %w", req.ExecutionAttemptID, err)
	}
	keys, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("read usage dimensions of %s: %w", req.ExecutionAttemptID, err)
	}
	return keys, nil
}
