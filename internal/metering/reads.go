package metering

import (
	"context"
	"errors"

	"github.com/oceanway/core/internal/ownerread/coreread"
	"github.com/oceanway/core/internal/ownerread/executionread"
	"github.com/oceanway/core/internal/ownerread/gatewayread"
)

// OwnerReads are the two event-bound owner reads the input processor calls
// before it accepts an event. Requests and answers are plain values: an
// implementation may call the owners over any transport.
type OwnerReads interface {
	ReadEligibilityFact(ctx context.Context, req executionread.EligibilityFactRead) (executionread.EligibilityFactResult, error)
	ReadAvailabilitySnapshot(ctx context.Context, req gatewayread.AvailabilitySnapshotRead) (gatewayread.AvailabilityResult, error)
	// ReadProviderEvidence is the worker's read of the evidence an accepted
	// availability snapshot references (the usage quantity).
	ReadProviderEvidence(ctx context.Context, req gatewayread.ProviderEvidenceRead) (gatewayread.ProviderEvidenceResult, error)
	// ValidateAvailabilityCurrent is the worker's operation-bound second
	// stage: the Gateway's Current Receipt of an availability its
	// Eligibility Basis uses (validateEvidenceAvailabilityCurrent@1).
	ValidateAvailabilityCurrent(ctx context.Context, req gatewayread.AvailabilityValidationRequest) (gatewayread.AvailabilityValidationResult, error)
	// ReadRunAdmissionManifest is Core's readRunAdmissionManifest@1: the
	// worker takes the settlement economic identity from the manifest the
	// eligibility fact cites.
	ReadRunAdmissionManifest(ctx context.Context, req coreread.RunAdmissionManifestRead) (coreread.ManifestResult, error)
	// ReadAttemptManifest is Execution's readAttemptExecutionManifest@1: the
	// worker takes the attempt's frozen charge dimension set from it.
	ReadAttemptManifest(ctx context.Context, req executionread.AttemptManifestRead) (executionread.AttemptManifestResult, error)
}

// Owners are the other owners as Metering reads them, each behind its read
// interface: in process (execution.Reads, gateway.Reads, admission.Reads)
// for a one-machine install, over HTTP when the owners run apart. Metering
// never imports another owner nor holds its DSN.
type Owners struct {
	Execution executionread.Reader
	Gateway   gatewayread.Reader
	// Core is the manifest read; only the worker needs it (the input
	// processor never calls it).
	Core coreread.ManifestReader
}

func (o Owners) ReadEligibilityFact(ctx context.Context, req executionread.EligibilityFactRead) (executionread.EligibilityFactResult, error) {
	return o.Execution.ReadEligibilityFact(ctx, req)
}

func (o Owners) ReadAvailabilitySnapshot(ctx context.Context, req gatewayread.AvailabilitySnapshotRead) (gatewayread.AvailabilityResult, error) {
	return o.Gateway.ReadAvailabilitySnapshot(ctx, req)
}

func (o Owners) ReadProviderEvidence(ctx context.Context, req gatewayread.ProviderEvidenceRead) (gatewayread.ProviderEvidenceResult, error) {
	return o.Gateway.ReadProviderEvidence(ctx, req)
}

func (o Owners) ValidateAvailabilityCurrent(ctx context.Context, req gatewayread.AvailabilityValidationRequest) (gatewayread.AvailabilityValidationResult, error) {
	return o.Gateway.ValidateAvailabilityCurrent(ctx, req)
}

func (o Owners) ReadAttemptManifest(ctx context.Context, req executionread.AttemptManifestRead) (executionread.AttemptManifestResult, error) {
	return o.Execution.ReadAttemptManifest(ctx, req)
}

// ErrNoCoreReads: Owners has no Core manifest read.
var ErrNoCoreReads = errors.New("metering: no Core reader for readRunAdmissionManifest@1")

func (o Owners) ReadRunAdmissionManifest(ctx context.Context, req coreread.RunAdmissionManifestRead) (coreread.ManifestResult, error) {
	if o.Core == nil {
		return coreread.ManifestResult{}, ErrNoCoreReads
	}
	return o.Core.ReadRunAdmissionManifest(ctx, req)
}
