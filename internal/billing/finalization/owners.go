package finalization

import (
	"context"

	"github.com/oceanway/core/contracts/digest"
	"github.com/oceanway/core/contracts/meterfacts"
	"github.com/oceanway/core/contracts/settlement"
	"github.com/oceanway/core/contracts/strict"
	"github.com/oceanway/core/internal/db"
	"github.com/oceanway/core/internal/execution"
	"github.com/oceanway/core/internal/gateway"
	"github.com/oceanway/core/internal/metering"
)

// ExecutionReads is the Execution owner as the worker sees it: the closure
// precondition (which attempts the closure holds) and the operation-bound
// closure receipt.
type ExecutionReads interface {
	ReadRunFinalizationPrecondition(ctx context.Context, req execution.RunFinalizationPreconditionRead) (execution.PreconditionResult, error)
	ReadRunExecutionFinalization(ctx context.Context, req execution.RunExecutionFinalizationRead) (execution.RunExecutionFinalizationResult, error)
}

// SettlementValidation is one request of Metering's
// validateSettlementInputCurrent with purpose finalization: the snapshot
// five-tuple the manifest names, bound to the finalization operation, a
// validation operation derived from it and the input manifest.
type SettlementValidation struct {
	FinalizationOperationID string
	ValidationOperationID   string
	InputManifest           strict.Quadruple
	SettlementDimensionID   string
	Snapshot                settlement.Ref
}

// SettlementValidationResult is Metering's answer: current with its receipt,
// or not current with the current five-tuple (a newer input exists: its
// event wakes the fence again).
type SettlementValidationResult struct {
	Current     bool
	Receipt     strict.Quadruple
	ReceiptBody []byte
	CurrentRef  settlement.Ref
}

// MeteringReads is the Metering owner as the worker sees it.
type MeteringReads interface {
	ReadAttemptSettlementInputs(ctx context.Context, executionAttemptID string) ([]*metering.SettlementInput, error)
	ValidateSettlementInputCurrent(ctx context.Context, req SettlementValidation) (SettlementValidationResult, error)
}

// GatewayReads is the Gateway owner as the worker sees it: the immutable
// availability snapshot a dimension is based on, and which usage
// dimensions a bound attempt has (the manifest must cover each).
type GatewayReads interface {
	ReadAvailabilitySnapshot(ctx context.Context, req gateway.AvailabilitySnapshotRead) (gateway.AvailabilityResult, error)
	ReadAttemptUsageDimensions(ctx context.Context, executionAttemptID string) ([]string, error)
}

// Owners bundles the three owner read seams.
type Owners struct {
	Execution ExecutionReads
	Metering  MeteringReads
	Gateway   GatewayReads
}

// ExecutionPool answers ExecutionReads in process from the execution database.
type ExecutionPool struct{ DB db.Executor }

func (p ExecutionPool) ReadRunFinalizationPrecondition(ctx context.Context, req execution.RunFinalizationPreconditionRead) (execution.PreconditionResult, error) {
	return execution.ReadRunFinalizationPrecondition(ctx, p.DB, req)
}

func (p ExecutionPool) ReadRunExecutionFinalization(ctx context.Context, req execution.RunExecutionFinalizationRead) (execution.RunExecutionFinalizationResult, error) {
	return execution.ReadRunExecutionFinalization(ctx, p.DB, req)
}

// GatewayPool answers GatewayReads in process from the gateway database.
type GatewayPool struct{ DB db.Executor }

func (p GatewayPool) ReadAvailabilitySnapshot(ctx context.Context, req gateway.AvailabilitySnapshotRead) (gateway.AvailabilityResult, error) {
	return gateway.ReadAvailabilitySnapshot(ctx, p.DB, req)
}

func (p GatewayPool) ReadAttemptUsageDimensions(ctx context.Context, executionAttemptID string) ([]string, error) {
	return gateway.ReadAttemptUsageDimensions(ctx, p.DB, gateway.AttemptUsageDimensionsRead{
		ContractVersion: gateway.ReadAttemptUsageDimensionsV1, Audience: gateway.AudienceBillingFinalization, ExecutionAttemptID: executionAttemptID})
}

// MeteringPool answers MeteringReads in process from the metering database:
// the attempt's current settlement inputs and validateSettlementInputCurrent
// with purpose finalization.
type MeteringPool struct {
	DB interface {
		db.Executor
		db.Beginner
	}
}

func (p MeteringPool) ReadAttemptSettlementInputs(ctx context.Context, executionAttemptID string) ([]*metering.SettlementInput, error) {
	return metering.ReadAttemptSettlementInputs(ctx, p.DB, executionAttemptID)
}

func (p MeteringPool) ValidateSettlementInputCurrent(ctx context.Context, req SettlementValidation) (SettlementValidationResult, error) {
	v, err := metering.ValidateSettlementInputCurrent(ctx, p.DB, metering.SettlementValidationRequest{
		Purpose: meterfacts.PurposeFinalization, OperationID: req.ValidationOperationID,
		SettlementDimensionID: req.SettlementDimensionID, Snapshot: req.Snapshot,
		InputManifestDigest: digest.Digest{Algorithm: req.InputManifest.DigestAlgorithmVersion, Value: req.InputManifest.Digest},
	})
	if err != nil {
		return SettlementValidationResult{}, err
	}
	return SettlementValidationResult{Current: v.Receipt.Current, Receipt: v.Receipt.Receipt, ReceiptBody: v.Body, CurrentRef: v.Current}, nil
}
