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
// immutable; once the provider contradicted it (a stored
// GatewayEvidenceConflictFact@1, issue 32) the answer is conflicting with
// that fact, for good: the provider's fix is a successor availability that
// cites other evidence.
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
		return gatewayread.ProviderEvidenceResult{Result: ownerread.Missing[*contract.ProviderEvidence]()}, nil
	}
	if err != nil {
		return gatewayread.ProviderEvidenceResult{}, fmt.Errorf("read provider evidence %s: %w", req.Evidence.Ref, db.NotFound(err))
	}
	e, err := contract.DecodeProviderEvidence([]byte(body))
	if err != nil {
		return conflictingEvidence("stored provider evidence does not recompute"), nil
	}
	switch {
	case e.Evidence != req.Evidence:
		return conflictingEvidence("the evidence has another quadruple"), nil
	case e.ExecutionAttemptID != req.ExecutionAttemptID || e.GatewayDeploymentID != req.GatewayDeploymentID ||
		e.Binding != req.Binding || e.EvidenceKind != req.EvidenceKind || e.DimensionKey != req.DimensionKey:
		return conflictingEvidence("the evidence names another attempt, binding, kind or dimension"), nil
	}
	f, fbody, err := EvidenceConflictOf(ctx, q, e.Evidence.Ref)
	if err != nil {
		return gatewayread.ProviderEvidenceResult{}, err
	}
	if f != nil {
		res := conflictingEvidence(f.ReasonCode)
		res.Conflict, res.ConflictBody = f, fbody
		return res, nil
	}
	return gatewayread.ProviderEvidenceResult{Result: ownerread.FoundWith(e, []byte(body))}, nil
}

func conflictingEvidence(reason string) gatewayread.ProviderEvidenceResult {
	return gatewayread.ProviderEvidenceResult{Result: ownerread.Conflict[*contract.ProviderEvidence](reason)}
}

// EvidenceConflictOf returns the stored GatewayEvidenceConflictFact@1 about
// one evidence and its canonical body (strictly decoded, digest recomputed),
// or nil when the Gateway holds none.
func EvidenceConflictOf(ctx context.Context, q db.Executor, evidenceRef string) (*contract.GatewayEvidenceConflictFact, []byte, error) {
	body, err := queries.EvidenceConflictByEvidence(ctx, q, evidenceRef)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("read evidence conflict of %s: %w", evidenceRef, err)
	}
	f, err := contract.DecodeGatewayEvidenceConflictFact([]byte(body))
	if err != nil {
		return nil, nil, fmt.Errorf("stored evidence conflict of %s: %w", evidenceRef, err)
	}
	return f, []byte(body), nil
}
