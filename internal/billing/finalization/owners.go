package finalization

import (
	"fmt"

	"context"

	"github.com/oceanway/core/contracts/digest"
	"github.com/oceanway/core/contracts/meterfacts"
	"github.com/oceanway/core/contracts/settlement"
	"github.com/oceanway/core/contracts/strict"
	"github.com/oceanway/core/internal/ownerread/executionread"
	"github.com/oceanway/core/internal/ownerread/gatewayread"
	"github.com/oceanway/core/internal/ownerread/meteringread"
)

// ExecutionReads is the Execution owner as the worker sees it: the closure
// precondition (which attempts the closure holds), each attempt's manifest
// (the charge dimensions it froze) and the operation-bound closure receipt.
type ExecutionReads interface {
	ReadAttemptManifest(ctx context.Context, req executionread.AttemptManifestRead) (executionread.AttemptManifestResult, error)
	ReadRunFinalizationPrecondition(ctx context.Context, req executionread.RunFinalizationPreconditionRead) (executionread.PreconditionResult, error)
	ReadRunExecutionFinalization(ctx context.Context, req executionread.RunExecutionFinalizationRead) (executionread.RunExecutionFinalizationResult, error)
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
	ReadAttemptSettlementInputs(ctx context.Context, executionAttemptID string) ([]*meteringread.SettlementInput, error)
	ValidateSettlementInputCurrent(ctx context.Context, req SettlementValidation) (SettlementValidationResult, error)
}

// GatewayReads is the Gateway owner as the worker sees it: the immutable
// availability snapshot a dimension is based on, and which usage
// dimensions a bound attempt has (the manifest must cover each).
type GatewayReads interface {
	ReadAvailabilitySnapshot(ctx context.Context, req gatewayread.AvailabilitySnapshotRead) (gatewayread.AvailabilityResult, error)
	ReadAttemptUsageDimensions(ctx context.Context, executionAttemptID string) ([]string, error)
}

// Owners bundles the three owner read seams (execution.Reads answers
// ExecutionReads in process).
type Owners struct {
	Execution ExecutionReads
	Metering  MeteringReads
	Gateway   GatewayReads
}

// GatewayOwner is GatewayReads over the Gateway owner's reads (gateway.Reads
// in process, or its HTTP client when the owners run apart).
type GatewayOwner struct{ Reads gatewayread.Reader }

func (g GatewayOwner) ReadAvailabilitySnapshot(ctx context.Context, req gatewayread.AvailabilitySnapshotRead) (gatewayread.AvailabilityResult, error) {
	return g.Reads.ReadAvailabilitySnapshot(ctx, req)
}

func (g GatewayOwner) ReadAttemptUsageDimensions(ctx context.Context, executionAttemptID string) ([]string, error) {
	return g.Reads.ReadAttemptUsageDimensions(ctx, gatewayread.AttemptUsageDimensionsRead{
		ContractVersion: gatewayread.ReadAttemptUsageDimensionsV1, Audience: gatewayread.AudienceBillingFinalization, ExecutionAttemptID: executionAttemptID})
}

// MeteringOwner is MeteringReads over the Metering owner's reads
// (metering.Reads in process, or its HTTP client when the owners run
// apart): the attempt's current settlement inputs and
// validateSettlementInputCurrent with purpose finalization.
type MeteringOwner struct{ Reads meteringread.Reader }

func (m MeteringOwner) ReadAttemptSettlementInputs(ctx context.Context, executionAttemptID string) ([]*meteringread.SettlementInput, error) {
	return m.Reads.ReadAttemptSettlementInputs(ctx, executionAttemptID)
}

func (m MeteringOwner) ValidateSettlementInputCurrent(ctx context.Context, req SettlementValidation) (SettlementValidationResult, error) {
	v, err := m.Reads.ValidateSettlementInputCurrent(ctx, meteringread.SettlementValidationRequest{
		Purpose: meterfacts.PurposeFinalization, OperationID: req.ValidationOperationID,
		SettlementDimensionID: req.SettlementDimensionID, Snapshot: req.Snapshot,
		InputManifestDigest: digest.Digest{Algorithm: req.InputManifest.DigestAlgorithmVersion, Value: req.InputManifest.Digest},
	})
	if err != nil {
		return SettlementValidationResult{}, err
	}
	if v.Receipt == nil { // a conflict answer is only for the catch-up purposes: fail closed
		return SettlementValidationResult{}, fmt.Errorf("metering answered the finalization validation without a receipt")
	}
	return SettlementValidationResult{Current: v.Receipt.Current, Receipt: v.Receipt.Receipt, ReceiptBody: v.Body, CurrentRef: v.Current}, nil
}
