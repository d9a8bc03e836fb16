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
	"github.com/oceanway/core/contracts/receipt"
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
	qSettlementBlocked = statements.Get("settlement_owner_blocked")
	qConflictInsert    = statements.Get("settlement_conflict_insert")
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
	// guard BI-3.catch-up-owner-conflict
	if req.Purpose == meterfacts.PurposeBillingCatchUpFence || req.Purpose == meterfacts.PurposePostFinalizationTransition {
		f, body, err := settlementConflictTx(ctx, tx, req)
		if err != nil {
			return meteringread.SettlementValidation{}, err
		}
		if f != nil {
			return meteringread.SettlementValidation{Conflict: f, ConflictBody: body}, nil
		}
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

// ErrSettlementConflictDiffers: a stored SettlementInputConflictFact@1 with
// the same key (dimension, state version, owner block) says something else
// (insert-or-compare); nothing is answered.
var ErrSettlementConflictDiffers = errors.New("metering: the settlement input already has another conflict fact for this block")

// settlementConflictTx is Metering's owner conflict about the requested
// settlement input (issue 32): when the dimension's attempt's latest
// eligibility Work is unfinished and Blocked@1 on an owner's conflict fact,
// Metering cannot vouch that the input is the dimension's last, so it
// stores SettlementInputConflictFact@1 (insert-or-compare on dimension,
// state version and block) and returns it with its stored body; nil when
// the lane is not blocked on an owner.
func settlementConflictTx(ctx context.Context, tx pgx.Tx, req meteringread.SettlementValidationRequest) (*meterfacts.SettlementInputConflictFact, []byte, error) {
	var blockedRef, blockedBody string
	err := tx.QueryRow(ctx, qSettlementBlocked, pgx.NamedArgs{"settlement_dimension_id": req.SettlementDimensionID}).Scan(&blockedRef, &blockedBody)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("read owner block of %s: %w", req.SettlementDimensionID, err)
	}
	b, err := receipt.DecodeMeteringInputWorkAttemptBlocked([]byte(blockedBody))
	if err != nil {
		return nil, nil, fmt.Errorf("stored blocked %s: %w", blockedRef, err)
	}
	f := &meterfacts.SettlementInputConflictFact{Fact: strict.Quadruple{Ref: "sicf-" + uuid.Must(uuid.NewV7()).String()},
		SettlementDimensionID: req.SettlementDimensionID, Validated: req.Snapshot.Snapshot, ValidatedStateVersion: req.Snapshot.StateVersion,
		Blocked: b.Blocked, BlockingCauseKind: b.BlockingCause.Kind, OwnerConflictFact: b.BlockingCause.Fact,
		ReasonCode: meterfacts.ConflictSourceOwnerConflict, DetectedAt: time.Now().UTC().Truncate(time.Microsecond)}
	body, err := meterfacts.Seal(f)
	if err != nil {
		return nil, nil, fmt.Errorf("seal settlement input conflict: %w", err)
	}
	var stored string
	if err := tx.QueryRow(ctx, qConflictInsert, pgx.NamedArgs{"fact_ref": f.Fact.Ref, "fact_digest": f.Fact.Digest,
		"settlement_dimension_id": f.SettlementDimensionID, "validated_state_version": f.ValidatedStateVersion, "blocked_ref": blockedRef,
		"fact_body": string(body), "detected_at": f.DetectedAt}).Scan(&stored); err != nil {
		return nil, nil, fmt.Errorf("insert settlement input conflict: %w", err)
	}
	got, err := meterfacts.DecodeSettlementInputConflictFact([]byte(stored))
	if err != nil {
		return nil, nil, fmt.Errorf("stored settlement input conflict: %w", err)
	}
	// The key (dimension, version, block) fixes every compared field, and
	// ME017 refuses a stored body that says otherwise; compared anyway so a
	// fact is never answered for another request.
	if got.Validated != f.Validated || got.Blocked != f.Blocked || got.OwnerConflictFact != f.OwnerConflictFact || got.ReasonCode != f.ReasonCode {
		return nil, nil, fmt.Errorf("%w: %s v%d", ErrSettlementConflictDiffers, f.SettlementDimensionID, f.ValidatedStateVersion)
	}
	return got, []byte(stored), nil
}
