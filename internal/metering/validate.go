package metering

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/oceanway/core/contracts/digest"
	"github.com/oceanway/core/contracts/jcs"
	"github.com/oceanway/core/contracts/meterfacts"
	"github.com/oceanway/core/contracts/settlement"
	"github.com/oceanway/core/contracts/strict"
	"github.com/oceanway/core/internal/db"
	"github.com/oceanway/core/internal/ownerread"
	"github.com/oceanway/core/internal/ownerread/meteringread"
)

// validateSettlementInputCurrent (issue 14 item 5; ADR-031 "Billing 对每个维度
// 调用 validateSettlementInputCurrent"; docs/metering.md): Billing asks, under
// one of four purposes and its own operation, whether a settlement input
// five-tuple is its dimension's Current. The answer is an immutable
// SettlementInputCurrentValidationReceipt@1 stored per operation
// (insert-or-compare): the same operation and request return the stored
// bytes, whatever has happened since (no TTL: a later head is a
// post-boundary correction); the same operation with another request is
// refused. not_current carries only the Current five-tuple.

var (
	qValidationPointer = statements.Get("settlement_validation_pointer")
	qValidationInsert  = statements.Get("settlement_validation_insert")
	qValidationSelect  = statements.Get("settlement_validation_select")
)

var (
	// ErrValidationRequestInvalid: the request is malformed (unknown
	// purpose, missing operation, bad five-tuple or digest); nothing written.
	// It is an ownerread.ErrInvalidRequest: a caller over HTTP sees a 400.
	ErrValidationRequestInvalid = fmt.Errorf("metering: invalid settlement input validation request: %w", ownerread.ErrInvalidRequest)
	// ErrValidationOperationConflict: the operation already has a receipt
	// for another request; nothing written.
	ErrValidationOperationConflict = errors.New("metering: validation operation already answered another request")
	// ErrSettlementInputUnknown: the five-tuple is not a snapshot of the
	// dimension's chain; nothing written.
	ErrSettlementInputUnknown = errors.New("metering: settlement input five-tuple is not in its dimension's chain")
)

// checkValidationRequest refuses a malformed request before anything is
// read or written.
func checkValidationRequest(r meteringread.SettlementValidationRequest) error {
	switch {
	case !slices.Contains(meterfacts.Purposes, r.Purpose):
		return fmt.Errorf("%w: purpose %q", ErrValidationRequestInvalid, r.Purpose)
	case !strict.IsUUID(r.OperationID):
		return fmt.Errorf("%w: operation id %q", ErrValidationRequestInvalid, r.OperationID)
	case !strict.IsUUID(r.SettlementDimensionID):
		return fmt.Errorf("%w: settlement dimension id %q", ErrValidationRequestInvalid, r.SettlementDimensionID)
	case r.Snapshot.StateVersion < 1:
		return fmt.Errorf("%w: state version %d", ErrValidationRequestInvalid, r.Snapshot.StateVersion)
	case r.Snapshot.Snapshot.SchemaVersion != settlement.SchemaVersion1:
		return fmt.Errorf("%w: snapshot schema version %q", ErrValidationRequestInvalid, r.Snapshot.Snapshot.SchemaVersion)
	}
	if err := r.Snapshot.Snapshot.Validate(); err != nil {
		return fmt.Errorf("%w: snapshot: %w", ErrValidationRequestInvalid, err)
	}
	if err := r.InputManifestDigest.Validate(); err != nil {
		return fmt.Errorf("%w: input manifest digest: %w", ErrValidationRequestInvalid, err)
	}
	return nil
}

// validationRequestDigest content-addresses what the operation asked (the receipt's
// candidate minus the answer): the insert-or-compare key's body.
func validationRequestDigest(r meteringread.SettlementValidationRequest) (digest.Digest, error) {
	m := map[string]any{
		"purpose": r.Purpose, "validationOperationId": r.OperationID, "settlementDimensionId": r.SettlementDimensionID,
		"settlementInputStateVersion":         r.Snapshot.StateVersion,
		"inputManifestDigestAlgorithmVersion": string(r.InputManifestDigest.Algorithm), "inputManifestDigest": r.InputManifestDigest.Value,
	}
	r.Snapshot.Snapshot.Put(m, meterfacts.PrefixSettlementInputSnapshot)
	return digest.Of(digest.JCSSHA256V1, m)
}

// ValidateSettlementInputCurrent answers validateSettlementInputCurrent on
// the metering database (pool: the metering pool, as oceanway_metering).
// Errors are typed (ErrValidationRequestInvalid,
// ErrValidationOperationConflict, ErrSettlementInputUnknown) and leave
// nothing written.
func ValidateSettlementInputCurrent(ctx context.Context, pool db.Beginner, req meteringread.SettlementValidationRequest) (meteringread.SettlementValidation, error) {
	if err := checkValidationRequest(req); err != nil {
		return meteringread.SettlementValidation{}, err
	}
	rd, err := validationRequestDigest(req)
	if err != nil {
		return meteringread.SettlementValidation{}, fmt.Errorf("%w: %w", ErrValidationRequestInvalid, err)
	}
	return db.WithTxV(ctx, pool, func(ctx context.Context, tx pgx.Tx) (meteringread.SettlementValidation, error) {
		var storedDigest, storedBody string
		err := tx.QueryRow(ctx, qValidationSelect, pgx.NamedArgs{"operation_id": req.OperationID}).Scan(&storedDigest, &storedBody)
		switch {
		case err == nil:
			return storedValidation(req, rd, storedDigest, storedBody)
		case !errors.Is(err, pgx.ErrNoRows):
			return meteringread.SettlementValidation{}, fmt.Errorf("read validation receipt: %w", err)
		}
		return validateTx(ctx, tx, req, rd)
	})
}

// storedValidation returns the operation's stored receipt, or refuses a
// different request under the same operation.
func storedValidation(req meteringread.SettlementValidationRequest, rd digest.Digest, storedDigest, storedBody string) (meteringread.SettlementValidation, error) {
	// guard ME-1.validation-operation-conflict
	if storedDigest != rd.Value {
		return meteringread.SettlementValidation{}, fmt.Errorf("%w: %s", ErrValidationOperationConflict, req.OperationID)
	}
	r, err := meterfacts.DecodeSettlementInputCurrentValidationReceipt([]byte(storedBody))
	if err != nil {
		return meteringread.SettlementValidation{}, fmt.Errorf("stored validation receipt %s: %w", req.OperationID, err)
	}
	cur := settlement.Ref{Snapshot: r.Validated, StateVersion: r.ValidatedStateVersion}
	if !r.Current {
		cur = settlement.Ref{Snapshot: r.CurrentSnapshot, StateVersion: r.CurrentStateVersion}
	}
	return meteringread.SettlementValidation{Receipt: r, Body: []byte(storedBody), Current: cur}, nil
}

func validateTx(ctx context.Context, tx pgx.Tx, req meteringread.SettlementValidationRequest, rd digest.Digest) (meteringread.SettlementValidation, error) {
	at, err := ReadSettlementInputAt(ctx, tx, req.SettlementDimensionID, req.Snapshot.StateVersion)
	switch {
	case errors.Is(err, ErrNoSettlementInput):
		return meteringread.SettlementValidation{}, fmt.Errorf("%w: %s v%d", ErrSettlementInputUnknown, req.SettlementDimensionID, req.Snapshot.StateVersion)
	case err != nil:
		return meteringread.SettlementValidation{}, err
	case at.Ref != req.Snapshot:
		return meteringread.SettlementValidation{}, fmt.Errorf("%w: %s v%d is %s", ErrSettlementInputUnknown, req.SettlementDimensionID,
			req.Snapshot.StateVersion, at.Ref.Snapshot.Ref)
	}
	var pointerVersion int64
	var pointerRef string
	if err := tx.QueryRow(ctx, qValidationPointer, pgx.NamedArgs{"settlement_dimension_id": req.SettlementDimensionID}).
		Scan(&pointerVersion, &pointerRef); err != nil {
		return meteringread.SettlementValidation{}, fmt.Errorf("lock settlement input pointer %s: %w", req.SettlementDimensionID, db.NotFound(err))
	}
	r := &meterfacts.SettlementInputCurrentValidationReceipt{
		Receipt: strict.Quadruple{Ref: "sicvr-" + uuid.Must(uuid.NewV7()).String()},
		Purpose: req.Purpose, OperationID: req.OperationID, InputManifestDigest: req.InputManifestDigest,
		SettlementDimensionID: req.SettlementDimensionID, Validated: req.Snapshot.Snapshot, ValidatedStateVersion: req.Snapshot.StateVersion,
		Current: pointerVersion == req.Snapshot.StateVersion, ValidatedAt: time.Now().UTC().Truncate(time.Microsecond),
	}
	current := req.Snapshot
	if !r.Current {
		cur, err := ReadSettlementInputAt(ctx, tx, req.SettlementDimensionID, pointerVersion)
		if err != nil {
			return meteringread.SettlementValidation{}, err
		}
		current = cur.Ref
		r.CurrentSnapshot, r.CurrentStateVersion = cur.Ref.Snapshot, cur.Ref.StateVersion
	}
	if _, err := meterfacts.Seal(r); err != nil {
		return meteringread.SettlementValidation{}, fmt.Errorf("seal validation receipt: %w", err)
	}
	body, err := jcs.Marshal(r.ToJSON())
	if err != nil {
		return meteringread.SettlementValidation{}, fmt.Errorf("validation receipt body: %w", err)
	}
	result := meterfacts.ValidationNotCurrent
	if r.Current {
		result = meterfacts.ValidationCurrent
	}
	var storedDigest, storedBody string
	err = tx.QueryRow(ctx, qValidationInsert, pgx.NamedArgs{"operation_id": req.OperationID, "request_digest": rd.Value,
		"purpose": req.Purpose, "settlement_dimension_id": req.SettlementDimensionID, "validated_state_version": req.Snapshot.StateVersion,
		"validated_snapshot_ref": req.Snapshot.Snapshot.Ref, "result_state": result, "current_state_version": current.StateVersion,
		"receipt_ref": r.Receipt.Ref, "receipt_digest": r.Receipt.Digest, "receipt_body": string(body)}).Scan(&storedDigest, &storedBody)
	if errors.Is(err, pgx.ErrNoRows) {
		// A concurrent session inserted the operation after this statement's
		// snapshot; ON CONFLICT waited for its commit, so a new statement sees it.
		err = tx.QueryRow(ctx, qValidationSelect, pgx.NamedArgs{"operation_id": req.OperationID}).Scan(&storedDigest, &storedBody)
	}
	if err != nil {
		return meteringread.SettlementValidation{}, fmt.Errorf("insert validation receipt: %w", err)
	}
	// A concurrent validation of the same operation may have committed first.
	return storedValidation(req, rd, storedDigest, storedBody)
}
