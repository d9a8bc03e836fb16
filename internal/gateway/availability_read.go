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

// ReadAvailabilitySnapshotV1 is the contract version of the event-bound
// availability read the Metering input processor calls before it accepts a
// gateway.evidence-availability.current-changed@1 event.
const ReadAvailabilitySnapshotV1 = "readEvidenceAvailabilitySnapshot@1"

// Audiences the availability read serves: the Metering input processor
// (event-bound bootstrap) and the Billing finalization worker (the Gateway
// receipt set of a finalization bundle, ADR-031).
const (
	AudienceMeteringInput       = "metering_input_processor"
	AudienceBillingFinalization = "billing_finalization_coordinator"
)

// AvailabilitySnapshotRead is the request: the event's chain identity, state
// version and the exact snapshot and manifest quadruples it carried.
type AvailabilitySnapshotRead struct {
	ContractVersion     string
	Audience            string
	ExecutionAttemptID  string
	GatewayDeploymentID string
	AttemptManifest     strict.Quadruple
	EvidenceKind        string
	DimensionKey        string
	StateVersion        int64
	Snapshot            strict.Quadruple
}

// AvailabilityResult is the answer: found with the snapshot and its body.
type AvailabilityResult = ownerread.Result[*contract.AvailabilitySnapshot]

// ReadAvailabilitySnapshot answers readEvidenceAvailabilitySnapshot@1: found
// only when the snapshot stored under the ref decodes strictly, its digest
// recomputes and its slot key, kind, dimension and state version equal the
// request; not_found when no such snapshot exists; conflicting otherwise.
// The snapshot is immutable, so a later advance of the chain does not change
// the answer (the read is bound to the event, not to "current").
func ReadAvailabilitySnapshot(ctx context.Context, q db.Executor, req AvailabilitySnapshotRead) (AvailabilityResult, error) {
	switch {
	case req.ContractVersion != ReadAvailabilitySnapshotV1:
		return AvailabilityResult{}, fmt.Errorf("%w: contract version %q", ownerread.ErrInvalidRequest, req.ContractVersion)
	case req.Audience != AudienceMeteringInput && req.Audience != AudienceBillingFinalization:
		return AvailabilityResult{}, fmt.Errorf("%w: audience %q", ownerread.ErrInvalidRequest, req.Audience)
	case !strict.IsUUID(req.ExecutionAttemptID) || req.GatewayDeploymentID == "" || req.EvidenceKind == "" || req.DimensionKey == "" || req.StateVersion < 1:
		return AvailabilityResult{}, fmt.Errorf("%w: attempt, deployment, kind, dimension and state version are required", ownerread.ErrInvalidRequest)
	}
	if err := req.Snapshot.Validate(); err != nil {
		return AvailabilityResult{}, fmt.Errorf("%w: snapshot: %w", ownerread.ErrInvalidRequest, err)
	}
	body, err := queries.SnapshotBodyByRef(ctx, q, req.Snapshot.Ref)
	if errors.Is(err, pgx.ErrNoRows) {
		return ownerread.Missing[*contract.AvailabilitySnapshot](), nil
	}
	if err != nil {
		return AvailabilityResult{}, fmt.Errorf("read availability %s: %w", req.Snapshot.Ref, db.NotFound(err))
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
