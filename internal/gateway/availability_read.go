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

// ReadAvailabilitySnapshot answers readEvidenceAvailabilitySnapshot@1: found
// only when the snapshot stored under the ref decodes strictly, its digest
// recomputes and its slot key, kind, dimension and state version equal the
// request; not_found when no such snapshot exists; conflicting otherwise.
// The snapshot is immutable, so a later advance of the chain does not change
// the answer (the read is bound to the event, not to "current").
func ReadAvailabilitySnapshot(ctx context.Context, q db.Executor, req gatewayread.AvailabilitySnapshotRead) (gatewayread.AvailabilityResult, error) {
	switch {
	case req.ContractVersion != gatewayread.ReadAvailabilitySnapshotV1:
		return gatewayread.AvailabilityResult{}, fmt.Errorf("%w: contract version %q", ownerread.ErrInvalidRequest, req.ContractVersion)
	case req.Audience != gatewayread.AudienceMeteringInput && req.Audience != gatewayread.AudienceBillingFinalization:
		return gatewayread.AvailabilityResult{}, fmt.Errorf("%w: audience %q", ownerread.ErrInvalidRequest, req.Audience)
	case !strict.IsUUID(req.ExecutionAttemptID) || req.GatewayDeploymentID == "" || req.EvidenceKind == "" || req.DimensionKey == "" || req.StateVersion < 1:
		return gatewayread.AvailabilityResult{}, fmt.Errorf("%w: attempt, deployment, kind, dimension and state version are required", ownerread.ErrInvalidRequest)
	}
	if err := req.Snapshot.Validate(); err != nil {
		return gatewayread.AvailabilityResult{}, fmt.Errorf("%w: snapshot: %w", ownerread.ErrInvalidRequest, err)
	}
	body, err := queries.SnapshotBodyByRef(ctx, q, req.Snapshot.Ref)
	if errors.Is(err, pgx.ErrNoRows) {
		return ownerread.Missing[*contract.AvailabilitySnapshot](), nil
	}
	if err != nil {
		return gatewayread.AvailabilityResult{}, fmt.Errorf("read availability %s: %w", req.Snapshot.Ref, db.NotFound(err))
	}
	s, err := contract.DecodeAvailabilitySnapshot([]byte(body))
	if err != nil {
		return ownerread.Conflict[*contract.AvailabilitySnapshot]("stored availability snapshot does not recompute"), nil
	}
	want := contract.SlotKey{ExecutionAttemptID: req.ExecutionAttemptID, GatewayDeploymentID: req.GatewayDeploymentID, AttemptManifest: req.AttemptManifest}
	switch {
	case s.Snapshot != req.Snapshot:
		return ownerread.Conflict[*contract.AvailabilitySnapshot]("the snapshot has another quadruple"), nil
	case s.SlotKey != want || s.EvidenceKind != req.EvidenceKind || s.DimensionKey != req.DimensionKey || s.StateVersion != req.StateVersion:
		return ownerread.Conflict[*contract.AvailabilitySnapshot]("the snapshot names another chain or state version"), nil
	}
	return ownerread.FoundWith(s, []byte(body)), nil
}
