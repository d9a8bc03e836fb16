package metering

import (
	"context"
	"errors"
	"fmt"

	"github.com/oceanway/core/contracts/digest"
	"github.com/oceanway/core/contracts/envelope"
	contract "github.com/oceanway/core/contracts/execution"
	"github.com/oceanway/core/contracts/receipt"
	"github.com/oceanway/core/contracts/settlement"
	"github.com/oceanway/core/internal/ownerread"
	"github.com/oceanway/core/internal/ownerread/gatewayread"
)

// availabilityValidationDerivation names how a validation operation is
// derived: the Work operation, the Eligibility Basis digest and the
// availability chain it validates (one receipt per chain of the basis). A
// retry of the same Work with the same basis is the same operation, so the
// Gateway returns its stored receipt; another basis is another operation.
const availabilityValidationDerivation = "metering_availability_current_validation@1"

// ErrAvailabilityNotCurrent: the Gateway's Current Receipt says a later
// availability is Current. Its event follows (mandatory delivery) and
// schedules a newer generation that supersedes this Work, so nothing is
// written and the Work is handed back (retryable).
var ErrAvailabilityNotCurrent = errors.New("metering: usage availability is not current")

// eligibilityBasis is the Eligibility Basis built from the strictly decoded
// bootstrap bodies: the eligibility fact and, per charge dimension, the
// usage basis and quantity the snapshot would fix.
func eligibilityBasis(in *eligibilityInputs) (digest.Digest, error) {
	dims := make([]any, 0, len(in.dims))
	for _, d := range in.dims {
		m := map[string]any{"chargeDimensionKey": d.key, "quantity": d.quantity, "gatewayDeploymentId": d.basis.GatewayDeploymentID,
			"availabilityStateVersion": d.basis.AvailabilityStateVersion, "availabilityState": d.basis.AvailabilityState}
		d.basis.AttemptRouteBinding.Put(m, settlement.PrefixAttemptRouteBinding)
		d.basis.GatewayRouteSnapshot.Put(m, settlement.PrefixGatewayRouteSnapshot)
		d.basis.CurrentAvailability.Put(m, settlement.PrefixCurrentAvailability)
		if d.basis.ProviderEvidence != nil {
			d.basis.ProviderEvidence.Put(m, settlement.PrefixProviderEvidence)
		}
		dims = append(dims, m)
	}
	doc := map[string]any{"basis": "metering-eligibility-basis@1", "executionAttemptId": in.source.ExecutionAttemptID,
		"dispatchDisposition": in.fact.Disposition, "dimensions": dims, "settlementEconomicIdentity": in.economic.Kind}
	in.fact.Fact.Put(doc, settlement.PrefixExecutionEligibilityFact)
	in.fact.RunAdmissionManifest.Put(doc, settlement.PrefixRunAdmissionManifest)
	in.source.AttemptManifest.Put(doc, settlement.PrefixAttemptExecutionManifest)
	return digest.Of(digest.JCSSHA256V1, doc)
}

func availabilityValidationOperation(workOperationID string, basis digest.Digest, d dimensionInput) string {
	return envelope.DeriveID(availabilityValidationDerivation, map[string]any{
		"workOperationId": workOperationID, "basisDigestAlgorithmVersion": string(basis.Algorithm), "basisDigest": basis.Value,
		"gatewayDeploymentId": d.basis.GatewayDeploymentID, "evidenceDimensionKey": d.key,
	})
}

// validateUsage obtains, after the bootstrap reads, the Gateway's
// operation-bound Current Receipt for every availability the Eligibility
// Basis uses and binds it into the dimension's usage basis. A not_dispatched
// attempt uses no availability. Unavailable or not_found → retryable;
// not_current → ErrAvailabilityNotCurrent (retryable; a newer generation
// follows); conflicting → the Gateway's conflict, which Metering does not
// forge into a Blocked@1 (ErrOwnerConflictUnbound); an invalid request is
// Metering's own deterministic conflict.
func (p *Processor) validateUsage(ctx context.Context, h receipt.WorkAttemptHead, in *eligibilityInputs) error {
	if in.fact.Disposition == contract.DispositionNotDispatched {
		return nil
	}
	basis, err := eligibilityBasis(in)
	if err != nil {
		return fmt.Errorf("eligibility basis digest: %w", err)
	}
	for i := range in.dims {
		d := &in.dims[i]
		a := d.availability
		op := availabilityValidationOperation(h.OperationID, basis, *d)
		req := gatewayread.AvailabilityValidationRequest{ContractVersion: gatewayread.ValidateAvailabilityCurrentV1, Audience: gatewayread.AudienceMeteringInput,
			Purpose: contract.PurposeMeteringEligibilityBasis, OperationID: op, BasisDigest: basis,
			AvailabilitySnapshotRead: gatewayread.AvailabilitySnapshotRead{ExecutionAttemptID: a.ExecutionAttemptID,
				GatewayDeploymentID: a.GatewayDeploymentID, AttemptManifest: a.AttemptManifest, EvidenceKind: a.EvidenceKind,
				DimensionKey: a.DimensionKey, StateVersion: a.StateVersion, Snapshot: a.Snapshot}}
		res, err := p.reads.ValidateAvailabilityCurrent(ctx, req)
		switch {
		case err != nil && errors.Is(err, ownerread.ErrInvalidRequest):
			return &conflict{stage: "availability_validation_receipt", reason: "availability_validation_invalid", candidate: validationRequestDoc(req)}
		case err != nil:
			return retryable("availability validation: %v", err)
		case res.Answer == ownerread.NotFound:
			return retryable("availability %s not found for validation", a.Snapshot.Ref)
		case res.Answer != ownerread.Found:
			return ownerConflict(receipt.CauseGatewayUsageOwnerConflict, res.Reason)
		}
		r := res.Value
		// guard ME-1.usage-validation-unbound
		if r.OperationID != op || r.BasisDigest != basis || r.Validated != a.Snapshot || r.ValidatedStateVersion != a.StateVersion ||
			r.Purpose != contract.PurposeMeteringEligibilityBasis {
			return ownerConflict(receipt.CauseGatewayUsageOwnerConflict, "the receipt does not bind the request")
		}
		if !r.Current {
			return fmt.Errorf("%w: %w: %s v%d, current v%d", ErrRetryable, ErrAvailabilityNotCurrent, a.Snapshot.Ref, a.StateVersion, r.CurrentStateVersion)
		}
		d.basis.AvailabilityValidationReceipt, d.basis.AvailabilityValidationOperationID = r.Receipt, op
	}
	return nil
}

func validationRequestDoc(r gatewayread.AvailabilityValidationRequest) map[string]any {
	m := availabilityReadDoc(r.AvailabilitySnapshotRead)
	m["contractVersion"], m["audience"], m["purpose"], m["validationOperationId"] = r.ContractVersion, r.Audience, r.Purpose, r.OperationID
	m["basisDigestAlgorithmVersion"], m["basisDigest"] = string(r.BasisDigest.Algorithm), r.BasisDigest.Value
	return m
}
