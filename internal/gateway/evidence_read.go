package gateway

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	contract "github.com/oceanway/core/contracts/execution"
	"github.com/oceanway/core/contracts/strict"
	"github.com/oceanway/core/internal/db"
	"github.com/oceanway/core/internal/ownerread"
	"github.com/oceanway/core/internal/ownerread/gatewayread"
)

// ReadProviderEvidence answers readGatewayProviderEvidence@1: found only when
// the evidence stored under the ref decodes strictly, its digest recomputes
// and its attempt, deployment, binding, kind and dimension equal the
// request; not_found when none is stored; conflicting otherwise. Evidence is
// immutable, so the answer never changes.
func ReadProviderEvidence(ctx context.Context, q db.Executor, req gatewayread.ProviderEvidenceRead) (gatewayread.ProviderEvidenceResult, error) {
	switch {
	case req.ContractVersion != gatewayread.ReadProviderEvidenceV1:
		return gatewayread.ProviderEvidenceResult{}, fmt.Errorf("%w: contract version %q", ownerread.ErrInvalidRequest, req.ContractVersion)
	case req.Audience != gatewayread.AudienceMeteringInput:
		return gatewayread.ProviderEvidenceResult{}, fmt.Errorf("%w: audience %q", ownerread.ErrInvalidRequest, req.Audience)
	case !strict.IsUUID(req.ExecutionAttemptID) || req.GatewayDeploymentID == "" || req.EvidenceKind == "" || req.DimensionKey == "":
		return gatewayread.ProviderEvidenceResult{}, fmt.Errorf("%w: attempt, deployment, kind and dimension are required", ownerread.ErrInvalidRequest)
	}
	if err := req.Evidence.Validate(); err != nil {
		return gatewayread.ProviderEvidenceResult{}, fmt.Errorf("%w: evidence: %w", ownerread.ErrInvalidRequest, err)
	}
	body, err := queries.EvidenceBodyByRef(ctx, q, req.Evidence.Ref)
	if errors.Is(err, pgx.ErrNoRows) {
		return ownerread.Missing[*contract.ProviderEvidence](), nil
	}
	if err != nil {
		return gatewayread.ProviderEvidenceResult{}, fmt.Errorf("read provider evidence %s: %w", req.Evidence.Ref, db.NotFound(err))
	}
	e, err := contract.DecodeProviderEvidence([]byte(body))
	if err != nil {
		return ownerread.Conflict[*contract.ProviderEvidence]("stored provider evidence does not recompute"), nil
	}
	switch {
	case e.Evidence != req.Evidence:
		return ownerread.Conflict[*contract.ProviderEvidence]("the evidence has another quadruple"), nil
	case e.ExecutionAttemptID != req.ExecutionAttemptID || e.GatewayDeploymentID != req.GatewayDeploymentID ||
		e.Binding != req.Binding || e.EvidenceKind != req.EvidenceKind || e.DimensionKey != req.DimensionKey:
		return ownerread.Conflict[*contract.ProviderEvidence]("the evidence names another attempt, binding, kind or dimension"), nil
	}
	return ownerread.FoundWith(e, []byte(body)), nil
}
