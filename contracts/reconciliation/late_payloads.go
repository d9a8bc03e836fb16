package reconciliation

import (
	"github.com/oceanway/core/contracts/envelope"
)

// CommittedPayload is the payload of
// billing.late-settlement-command-result.committed@1 for this (sealed)
// result: every field the event carries comes from the result, so Billing
// writes the event from the fact it commits with, never from a second
// source.
func (r *LateResult) CommittedPayload() envelope.BillingLateSettlementCommandResultCommittedV1Payload {
	d, k, q := r.Case.Dimension, r.Case.Identity, r.Result
	return envelope.BillingLateSettlementCommandResultCommittedV1Payload{
		BillingReservationID: d.BillingReservationID, BillingAccountID: d.BillingAccountID, RunID: d.RunID, RunStepID: d.RunStepID,
		ExecutionAttemptID: d.ExecutionAttemptID, ChargeDimensionKey: d.ChargeDimensionKey, SettlementDimensionID: d.SettlementDimensionID(),
		SettlementEconomicIdentity: d.EconomicIdentity, LateSettlementExposureID: r.Exposure.LateSettlementExposureID,
		ReconciliationCaseRef: r.Case.ReconciliationCaseRef, CaseGeneration: r.Case.CaseGeneration,
		LateSettlementCaseIdentityReservationRef: k.Ref, LateSettlementCaseIdentityReservationSchemaVersion: k.SchemaVersion,
		LateSettlementCaseIdentityReservationDigestAlgorithmVersion: string(k.DigestAlgorithmVersion),
		LateSettlementCaseIdentityReservationDigest:                 k.Digest,
		LateSettlementCommandResultRef:                              q.Ref, LateSettlementCommandResultSchemaVersion: q.SchemaVersion,
		LateSettlementCommandResultDigestAlgorithmVersion: string(q.DigestAlgorithmVersion), LateSettlementCommandResultDigest: q.Digest,
		LateSettlementCommandOperationID: r.CommandOperationID, FromSettlementStateRevision: r.FromSettlementStateRevision,
		ToSettlementStateRevision: r.ToSettlementStateRevision(), AdjustmentAmount: r.AdjustmentAmount,
		ActorWorkforcePrincipalID: r.ActorWorkforcePrincipalID,
	}
}

// AppliedPayload is the payload of billing.case-resolution.applied@1 for
// this (sealed) applied fact.
func (a *CaseResolutionApplied) AppliedPayload() envelope.BillingCaseResolutionAppliedV1Payload {
	d, k, q := a.Case.Dimension, a.Case.Identity, a.Applied
	return envelope.BillingCaseResolutionAppliedV1Payload{
		BillingReservationID: d.BillingReservationID, BillingAccountID: d.BillingAccountID, RunID: d.RunID, RunStepID: d.RunStepID,
		ExecutionAttemptID: d.ExecutionAttemptID, ChargeDimensionKey: d.ChargeDimensionKey, SettlementDimensionID: d.SettlementDimensionID(),
		SettlementEconomicIdentity: d.EconomicIdentity, LateSettlementExposureID: a.Exposure.LateSettlementExposureID,
		ReconciliationCaseRef: a.Case.ReconciliationCaseRef, CaseGeneration: a.Case.CaseGeneration,
		LateSettlementCaseIdentityReservationRef: k.Ref, LateSettlementCaseIdentityReservationSchemaVersion: k.SchemaVersion,
		LateSettlementCaseIdentityReservationDigestAlgorithmVersion: string(k.DigestAlgorithmVersion),
		LateSettlementCaseIdentityReservationDigest:                 k.Digest,
		BillingCaseResolutionAppliedRef:                             q.Ref, BillingCaseResolutionAppliedSchemaVersion: q.SchemaVersion,
		BillingCaseResolutionAppliedDigestAlgorithmVersion: string(q.DigestAlgorithmVersion), BillingCaseResolutionAppliedDigest: q.Digest,
		ResolutionSource: a.ResolutionSource, ResolutionOperationID: a.ResolutionOperationID,
	}
}
