package gateway

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	contract "github.com/oceanway/core/contracts/execution"
	"github.com/oceanway/core/contracts/jcs"
	"github.com/oceanway/core/contracts/strict"
	"github.com/oceanway/core/internal/db"
	"github.com/oceanway/core/internal/gateway/dbsqlc"
	"github.com/oceanway/core/internal/ownerread"
	"github.com/oceanway/core/internal/ownerread/gatewayread"
)

// ValidateAvailabilityCurrent answers validateEvidenceAvailabilityCurrent@1
// in one gateway transaction: the operation's stored receipt is returned
// byte for byte when it validated the same request; otherwise the snapshot
// is checked exactly as the bootstrap read checks it, the chain's Current is
// read FOR SHARE (an advance waits, so the answer is exact at commit) and
// the receipt is inserted once per operation (insert-or-compare).
func ValidateAvailabilityCurrent(ctx context.Context, pool db.Beginner, req gatewayread.AvailabilityValidationRequest) (gatewayread.AvailabilityValidationResult, error) {
	switch {
	case req.ContractVersion != gatewayread.ValidateAvailabilityCurrentV1:
		return gatewayread.AvailabilityValidationResult{}, fmt.Errorf("%w: contract version %q", ownerread.ErrInvalidRequest, req.ContractVersion)
	case req.Audience != gatewayread.AudienceMeteringInput:
		return gatewayread.AvailabilityValidationResult{}, fmt.Errorf("%w: audience %q", ownerread.ErrInvalidRequest, req.Audience)
	case req.Purpose != contract.PurposeMeteringEligibilityBasis:
		return gatewayread.AvailabilityValidationResult{}, fmt.Errorf("%w: purpose %q", ownerread.ErrInvalidRequest, req.Purpose)
	case !strict.IsUUID(req.OperationID):
		return gatewayread.AvailabilityValidationResult{}, fmt.Errorf("%w: operation id %q", ownerread.ErrInvalidRequest, req.OperationID)
	}
	if err := req.BasisDigest.Validate(); err != nil {
		return gatewayread.AvailabilityValidationResult{}, fmt.Errorf("%w: basis digest: %w", ownerread.ErrInvalidRequest, err)
	}
	read := req.AvailabilitySnapshotRead
	read.ContractVersion, read.Audience = gatewayread.ReadAvailabilitySnapshotV1, gatewayread.AudienceMeteringInput
	return db.WithTxV(ctx, pool, func(ctx context.Context, tx pgx.Tx) (gatewayread.AvailabilityValidationResult, error) {
		stored, err := queries.ValidationReceiptByOperation(ctx, tx, req.OperationID)
		switch {
		case err == nil:
			return storedValidation(req, stored)
		case !errors.Is(err, pgx.ErrNoRows):
			return gatewayread.AvailabilityValidationResult{}, fmt.Errorf("read validation receipt %s: %w", req.OperationID, err)
		}
		snap, err := ReadAvailabilitySnapshot(ctx, tx, read)
		if err != nil || snap.Answer != ownerread.Found {
			return gatewayread.AvailabilityValidationResult{Answer: snap.Answer, Reason: snap.Reason}, err
		}
		cur, err := queries.AvailabilityCurrentForShare(ctx, tx, req.Snapshot.Ref)
		if err != nil {
			return gatewayread.AvailabilityValidationResult{}, fmt.Errorf("lock availability current of %s: %w", req.Snapshot.Ref, db.NotFound(err))
		}
		r := &contract.AvailabilityCurrentValidationReceipt{
			Receipt: strict.Quadruple{Ref: "gacvr-" + uuid.Must(uuid.NewV7()).String()}, Purpose: req.Purpose,
			OperationID: req.OperationID, BasisDigest: req.BasisDigest, SlotKey: snap.Value.SlotKey,
			EvidenceKind: snap.Value.EvidenceKind, DimensionKey: snap.Value.DimensionKey,
			Validated: req.Snapshot, ValidatedStateVersion: req.StateVersion,
			Current: cur.CurrentStateVersion == req.StateVersion, ValidatedAt: time.Now().UTC().Truncate(time.Microsecond)}
		if !r.Current {
			head, err := contract.DecodeAvailabilitySnapshot([]byte(cur.SnapshotBody))
			if err != nil {
				return ownerread.Conflict[*contract.AvailabilityCurrentValidationReceipt]("stored current availability does not recompute"), nil
			}
			r.CurrentSnapshot, r.CurrentStateVersion = head.Snapshot, head.StateVersion
		}
		return insertValidation(ctx, tx, req, r)
	})
}

func insertValidation(ctx context.Context, tx pgx.Tx, req gatewayread.AvailabilityValidationRequest, r *contract.AvailabilityCurrentValidationReceipt) (gatewayread.AvailabilityValidationResult, error) {
	if _, err := contract.Seal(r); err != nil {
		return gatewayread.AvailabilityValidationResult{}, fmt.Errorf("seal availability validation receipt: %w", err)
	}
	body, err := jcs.Marshal(r.ToJSON())
	if err != nil {
		return gatewayread.AvailabilityValidationResult{}, fmt.Errorf("availability validation receipt body: %w", err)
	}
	result := contract.AvailabilityValidationNotCurrent
	if r.Current {
		result = contract.AvailabilityValidationCurrent
	}
	n, err := queries.ValidationReceiptInsert(ctx, tx, dbsqlc.ValidationReceiptInsertParams{
		ValidationOperationID: req.OperationID, ReceiptRef: r.Receipt.Ref, ReceiptSchemaVersion: r.Receipt.SchemaVersion,
		ReceiptDigestAlgorithmVersion: string(r.Receipt.DigestAlgorithmVersion), ReceiptDigest: r.Receipt.Digest,
		Purpose: r.Purpose, ValidatedAvailabilityRef: r.Validated.Ref, ResultState: result, ReceiptBody: string(body), ValidatedAt: r.ValidatedAt})
	if err != nil {
		return gatewayread.AvailabilityValidationResult{}, fmt.Errorf("insert availability validation receipt: %w", err)
	}
	if n == 1 {
		return ownerread.FoundWith(r, body), nil
	}
	// A concurrent validation of the same operation committed first: ON
	// CONFLICT waited for it, so a new statement sees its row.
	stored, err := queries.ValidationReceiptByOperation(ctx, tx, req.OperationID)
	if err != nil {
		return gatewayread.AvailabilityValidationResult{}, fmt.Errorf("read validation receipt %s: %w", req.OperationID, err)
	}
	return storedValidation(req, stored)
}

// storedValidation returns the operation's stored receipt when it answered
// the same request, and conflicting when the operation validated another.
func storedValidation(req gatewayread.AvailabilityValidationRequest, stored string) (gatewayread.AvailabilityValidationResult, error) {
	r, err := contract.DecodeAvailabilityCurrentValidationReceipt([]byte(stored))
	if err != nil {
		return ownerread.Conflict[*contract.AvailabilityCurrentValidationReceipt]("stored validation receipt does not recompute"), nil
	}
	want := contract.SlotKey{ExecutionAttemptID: req.ExecutionAttemptID, GatewayDeploymentID: req.GatewayDeploymentID, AttemptManifest: req.AttemptManifest}
	// guard GW-2.validation-operation-conflict
	if r.Purpose != req.Purpose || r.BasisDigest != req.BasisDigest || r.SlotKey != want || r.EvidenceKind != req.EvidenceKind ||
		r.DimensionKey != req.DimensionKey || r.Validated != req.Snapshot || r.ValidatedStateVersion != req.StateVersion {
		return ownerread.Conflict[*contract.AvailabilityCurrentValidationReceipt]("the operation validated another request"), nil
	}
	return ownerread.FoundWith(r, []byte(stored)), nil
}
