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
)

// ReadProviderEvidenceV1 is the contract version of the event-bound read of
// one immutable GatewayProviderEvidence@1 (the available evidence an
// availability snapshot names), for the Metering workers.
const ReadProviderEvidenceV1 = "readGatewayProviderEvidence@1"

// ProviderEvidenceRead asks for the evidence stored under an exact quadruple,
// with the identity the caller expects it to carry.
type ProviderEvidenceRead struct {
	ContractVersion     string
	Audience            string
	ExecutionAttemptID  string
	GatewayDeploymentID string
	EvidenceKind        string
	DimensionKey        string
	Evidence            strict.Quadruple
}

// EvidenceResult is the answer: found with the evidence and its body.
type EvidenceResult = ownerread.Result[*contract.ProviderEvidence]

// ReadProviderEvidence answers readGatewayProviderEvidence@1: found only when
// the stored evidence decodes strictly, its digest recomputes, its quadruple
// equals the request's and it carries the requested attempt, deployment,
// kind and dimension; not_found when nothing is stored under the ref;
// conflicting otherwise. Evidence is immutable, so the answer never changes.
func ReadProviderEvidence(ctx context.Context, q db.Executor, req ProviderEvidenceRead) (EvidenceResult, error) {
	switch {
	case req.ContractVersion != ReadProviderEvidenceV1:
		return EvidenceResult{}, fmt.Errorf("%w: contract version %q", ownerread.ErrInvalidRequest, req.ContractVersion)
	case req.Audience != AudienceMeteringInput:
		return EvidenceResult{}, fmt.Errorf("%w: audience %q", ownerread.ErrInvalidRequest, req.Audience)
	case !strict.IsUUID(req.ExecutionAttemptID) || req.GatewayDeploymentID == "" || req.EvidenceKind == "" || req.DimensionKey == "":
		return EvidenceResult{}, fmt.Errorf("%w: attempt, deployment, kind and dimension are required", ownerread.ErrInvalidRequest)
	}
	if err := req.Evidence.Validate(); err != nil {
		return EvidenceResult{}, fmt.Errorf("%w: evidence: %w", ownerread.ErrInvalidRequest, err)
	}
	var body string
	err := q.QueryRow(ctx, "SELECT evidence_body FROM gateway.provider_evidence WHERE provider_evidence_ref = $1",
		req.Evidence.Ref).Scan(&body)
	if errors.Is(err, pgx.ErrNoRows) {
		return ownerread.Missing[*contract.ProviderEvidence](), nil
	}
	if err != nil {
		return EvidenceResult{}, fmt.Errorf("read evidence %s: %w", req.Evidence.Ref, db.NotFound(err))
	}
	e, err := contract.DecodeProviderEvidence([]byte(body))
	if err != nil {
		return ownerread.Conflict[*contract.ProviderEvidence]("stored evidence does not recompute"), nil
	}
	switch {
	case e.Evidence != req.Evidence:
		return ownerread.Conflict[*contract.ProviderEvidence]("the evidence has another quadruple"), nil
	case e.ExecutionAttemptID != req.ExecutionAttemptID || e.GatewayDeploymentID != req.GatewayDeploymentID ||
		e.EvidenceKind != req.EvidenceKind || e.DimensionKey != req.DimensionKey:
		return ownerread.Conflict[*contract.ProviderEvidence]("the evidence names another attempt, deployment, kind or dimension"), nil
	}
	return ownerread.FoundWith(e, []byte(body)), nil
}
