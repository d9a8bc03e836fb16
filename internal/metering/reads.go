package metering

import (
	"context"
	"errors"

	"github.com/oceanway/core/internal/admission"
	"github.com/oceanway/core/internal/db"
	"github.com/oceanway/core/internal/execution"
	"github.com/oceanway/core/internal/gateway"
)

// OwnerReads are the two event-bound owner reads the input processor calls
// before it accepts an event. Requests and answers are plain values: an
// implementation may call the owners over any transport.
type OwnerReads interface {
	ReadEligibilityFact(ctx context.Context, req execution.EligibilityFactRead) (execution.EligibilityFactResult, error)
	ReadAvailabilitySnapshot(ctx context.Context, req gateway.AvailabilitySnapshotRead) (gateway.AvailabilityResult, error)
	// ReadProviderEvidence is the worker's read of the evidence an accepted
	// availability snapshot references (the usage quantity).
	ReadProviderEvidence(ctx context.Context, req gateway.ProviderEvidenceRead) (gateway.ProviderEvidenceResult, error)
	// ValidateAvailabilityCurrent is the worker's operation-bound second
	// stage: the Gateway's Current Receipt of an availability its
	// Eligibility Basis uses (validateEvidenceAvailabilityCurrent@1).
	ValidateAvailabilityCurrent(ctx context.Context, req gateway.AvailabilityValidationRequest) (gateway.AvailabilityValidationResult, error)
	// ReadRunAdmissionManifest is Core's readRunAdmissionManifest@1: the
	// worker takes the settlement economic identity from the manifest the
	// eligibility fact cites.
	ReadRunAdmissionManifest(ctx context.Context, req admission.RunAdmissionManifestRead) (admission.ManifestResult, error)
}

// DBReads are the owner reads in process, over the owners' databases (the
// execution and gateway pools of oceanway serve and the demo).
type DBReads struct {
	Execution db.Executor
	Gateway   db.Executor
	// Core is the core database (as oceanway_admission) for the manifest
	// read; only the worker needs it (the input processor never calls it).
	Core db.Executor
}

// ReadEligibilityFact calls execution.ReadEligibilityFact.
func (r DBReads) ReadEligibilityFact(ctx context.Context, req execution.EligibilityFactRead) (execution.EligibilityFactResult, error) {
	return execution.ReadEligibilityFact(ctx, r.Execution, req)
}

// ReadAvailabilitySnapshot calls gateway.ReadAvailabilitySnapshot.
func (r DBReads) ReadAvailabilitySnapshot(ctx context.Context, req gateway.AvailabilitySnapshotRead) (gateway.AvailabilityResult, error) {
	return gateway.ReadAvailabilitySnapshot(ctx, r.Gateway, req)
}

// ReadProviderEvidence calls gateway.ReadProviderEvidence.
func (r DBReads) ReadProviderEvidence(ctx context.Context, req gateway.ProviderEvidenceRead) (gateway.ProviderEvidenceResult, error) {
	return gateway.ReadProviderEvidence(ctx, r.Gateway, req)
}

// ValidateAvailabilityCurrent calls gateway.ValidateAvailabilityCurrent (its
// own gateway transaction: the receipt is the Gateway's).
func (r DBReads) ValidateAvailabilityCurrent(ctx context.Context, req gateway.AvailabilityValidationRequest) (gateway.AvailabilityValidationResult, error) {
	return gateway.ValidateAvailabilityCurrent(ctx, r.Gateway, req)
}

// ErrNoCoreReads: DBReads has no core database for the manifest read.
var ErrNoCoreReads = errors.New("metering: no core database for readRunAdmissionManifest@1")

// ReadRunAdmissionManifest calls admission.ReadRunAdmissionManifest.
func (r DBReads) ReadRunAdmissionManifest(ctx context.Context, req admission.RunAdmissionManifestRead) (admission.ManifestResult, error) {
	if r.Core == nil {
		return admission.ManifestResult{}, ErrNoCoreReads
	}
	return admission.ReadRunAdmissionManifest(ctx, r.Core, req)
}
