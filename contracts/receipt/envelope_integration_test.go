package receipt_test

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/contracts/digest"
	"github.com/oceanway/core/contracts/envelope"
	"github.com/oceanway/core/contracts/jcs"
	"github.com/oceanway/core/contracts/receipt"
	"github.com/oceanway/core/contracts/route"
	"github.com/oceanway/core/contracts/strict"
)

// payloadReader reads typed values out of a decoded envelope payload.
type payloadReader map[string]any

func (p payloadReader) s(k string) string { v, _ := p[k].(string); return v }

func (p payloadReader) n(k string) int64 {
	switch x := p[k].(type) {
	case int64:
		return x
	case jcs.Number:
		n, _ := strconv.ParseInt(string(x), 10, 64)
		return n
	}
	return 0
}

func (p payloadReader) q(prefix string) strict.Quadruple {
	f := strict.Fields(prefix)
	return strict.Quadruple{Ref: p.s(f[0]), SchemaVersion: p.s(f[1]), DigestAlgorithmVersion: digest.Algorithm(p.s(f[2])), Digest: p.s(f[3])}
}

// receiptsFor builds, from a real CanonicalEventEnvelope@1, the receipt each
// mandatory member's consumer would write for it.
func receiptsFor(t *testing.T, e *envelope.Envelope, env digest.Digest) []receipt.Receipt {
	t.Helper()
	p := payloadReader(e.Payload)
	ten := receipt.Tenant{Kind: e.TenantKind, ID: e.TenantID, WorkspaceID: e.WorkspaceID, ProjectID: e.ProjectID}
	seal := func(r interface{ Seal() error }) {
		require.NoError(t, r.Seal())
	}
	ops := func() receipt.Receipt {
		r, err := receipt.NewOperationsProjectionAppliedReceipt("opr-"+e.EventID, opsTarget,
			receipt.EventFacts{EventID: e.EventID, EventType: e.EventType, EventSchemaVersion: e.EventSchemaVersion, EnvelopeDigest: env}, at(1))
		require.NoError(t, err)
		return r
	}
	switch e.EventType {
	case envelope.ExecutionAttemptEligibilityFinalizedV1:
		r := &receipt.MeteringInputProcessorConsumerReceipt{
			Header: receipt.Header{Receipt: strict.Quadruple{Ref: "mipr-" + e.EventID}, EventID: e.EventID, EventEnvelopeDigest: env},
			Source: receipt.MeteringSource{Kind: receipt.SourceExecutionEligibility, ExecutionEligibility: &receipt.ExecutionEligibilitySource{
				Tenant: ten, BillingReservationID: p.s("billingReservationId"), BillingAccountID: p.s("billingAccountId"),
				RunID: p.s("runId"), RunStepID: p.s("runStepId"), ExecutionAttemptID: p.s("executionAttemptId"),
				AttemptExecutionManifest: p.q("attemptExecutionManifest"), ExecutionEligibilityFact: p.q("executionEligibilityFact"),
			}},
			Outcome: receipt.OutcomeAdvanced, CommittedAt: at(3),
			Lane: eligibilityLane(1, receipt.EligibilityCoordination{State: receipt.StatePending, ActiveWork: pendingWork("int", 1)}),
		}
		seal(r)
		return []receipt.Receipt{r}
	case envelope.GatewayAvailabilityCurrentChangedV1:
		src := receipt.MeteringSource{Kind: receipt.SourceGatewayAvailability, GatewayAvailability: &receipt.GatewayAvailabilitySource{
			ExecutionAttemptID: p.s("executionAttemptId"), GatewayDeploymentID: p.s("gatewayDeploymentId"),
			AttemptExecutionManifest: p.q("attemptExecutionManifest"), ProviderEvidenceKind: p.s("providerEvidenceKind"),
			EvidenceDimensionKey: p.s("evidenceDimensionKey"), CurrentAvailability: p.q("currentAvailability"),
			CurrentAvailabilityStateVersion: p.n("currentAvailabilityStateVersion"),
		}}
		lane := eligibilityLane(1, receipt.EligibilityCoordination{State: receipt.StatePending, ActiveWork: pendingWork("int", 1)})
		if src.GatewayAvailability.ProviderEvidenceKind == receipt.EvidenceProviderCost {
			lane = costLane(src, 1, receipt.ProviderCostCoordination{State: receipt.StatePending, ActiveWork: pendingWork("int", 1)})
		}
		r := &receipt.MeteringInputProcessorConsumerReceipt{
			Header: receipt.Header{Receipt: strict.Quadruple{Ref: "mipr-" + e.EventID}, EventID: e.EventID, EventEnvelopeDigest: env},
			Source: src, Outcome: receipt.OutcomeAdvanced, Lane: lane, CommittedAt: at(3),
		}
		seal(r)
		return []receipt.Receipt{r}
	case envelope.ExecutionRunFinalizationClosedV1:
		r := &receipt.BillingFinalizationCoordinatorConsumerReceipt{
			Header: receipt.Header{Receipt: strict.Quadruple{Ref: "bfccr-" + e.EventID}, EventID: e.EventID, EventEnvelopeDigest: env},
			Source: receipt.CoordinatorSource{Kind: receipt.CoordinatorSourceExecutionClosure, Closure: &receipt.ExecutionClosureSource{
				Tenant: ten, BillingReservationID: p.s("billingReservationId"), BillingAccountID: p.s("billingAccountId"),
				RunID: p.s("runId"), ClosureOperationID: p.s("closureOperationId"),
				RunAdmissionManifest: p.q("runAdmissionManifest"), RunExecutionFinalization: p.q("runExecutionFinalization"),
				RunExecutionFinalizationStateVersion: p.n("runExecutionFinalizationStateVersion"),
				AttemptSetManifest:                   p.q("attemptSetManifest"), AttemptCount: p.n("attemptCount"),
			}},
			Outcome: workScheduled("int", 1), CommittedAt: at(4),
		}
		seal(r)
		return []receipt.Receipt{r}
	case envelope.BillingFinalizationResolutionAppliedV1:
		r := &receipt.BillingFinalizationCoordinatorConsumerReceipt{
			Header: receipt.Header{Receipt: strict.Quadruple{Ref: "bfccr-" + e.EventID}, EventID: e.EventID, EventEnvelopeDigest: env},
			Source: receipt.CoordinatorSource{Kind: receipt.CoordinatorSourceResolution, Resolution: &receipt.ResolutionSource{
				Tenant: ten, BillingReservationID: p.s("billingReservationId"), BillingAccountID: p.s("billingAccountId"),
				RunID: p.s("runId"), BillingFinalizationFenceID: p.s("billingFinalizationFenceId"),
				ReconciliationCaseRef: p.s("reconciliationCaseRef"), ReconciliationGeneration: p.n("reconciliationGeneration"),
				ResolutionRevision: p.n("resolutionRevision"), ResolutionOperationID: p.s("resolutionOperationId"),
				FinalizationCaseIdentityReservation:         p.q("finalizationCaseIdentityReservation"),
				FinalizationReconciliationResolutionApplied: p.q("finalizationReconciliationResolutionApplied"),
				ActorWorkforcePrincipalID:                   p.s("actorWorkforcePrincipalId"),
			}},
			Outcome: workScheduled("int", 2), CommittedAt: at(4),
		}
		seal(r)
		return []receipt.Receipt{r, ops()}
	case envelope.MeteringSettlementInputCurrentChangedV1:
		econ := payloadReader(e.Payload["settlementEconomicIdentity"].(map[string]any))
		r := &receipt.BillingSettlementCatchUpConsumerReceipt{
			Header: receipt.Header{Receipt: strict.Quadruple{Ref: "bsccr-" + e.EventID}, EventID: e.EventID, EventEnvelopeDigest: env},
			Tenant: ten, BillingReservationID: p.s("billingReservationId"), BillingAccountID: p.s("billingAccountId"),
			RunID: p.s("runId"), RunStepID: p.s("runStepId"), ExecutionAttemptID: p.s("executionAttemptId"),
			ChargeDimensionKey: p.s("chargeDimensionKey"),
			EconomicIdentity: receipt.SettlementEconomicIdentity{Kind: econ.s("kind"), EntitlementKey: econ.s("entitlementKey"),
				Unit: econ.s("unit"), Currency: econ.s("currency")},
			EventSettlementInput: receipt.SettlementInputRef{Snapshot: p.q("settlementInputSnapshot"), StateVersion: p.n("settlementInputStateVersion")},
			Outcome: receipt.CatchUpOutcome{Kind: receipt.CatchUpWatermarkAdvanced, InboxRevision: 1, Durability: &receipt.CatchUpDurability{
				State: receipt.DurabilityHeldForResolution, HeldForResolution: &receipt.HeldForResolution{
					FinalizationFenceRevision: 2, ReconciliationCaseRef: "case-int", ReconciliationGeneration: 1, ExpectedResolutionRevision: 1}}},
			CommittedAt: at(4),
		}
		seal(r)
		return []receipt.Receipt{r}
	default:
		return []receipt.Receipt{ops()}
	}
}

// OB-DELIVER-4 against real envelopes: for every envelope golden of
// contracts/envelope, the receipt its consumer writes verifies against the
// envelope's own Identity() and digest, and any identity field the receipt
// carries that differs from the payload is rejected. This pins the field
// names receipts and payloads share.
func TestVerifyAck_WithCanonicalEnvelopes_OBDELIVER4(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob(filepath.Join("..", "envelope", "testdata", "golden", "*", "raw.json"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	covered := map[route.Destination]bool{}
	for _, file := range files {
		t.Run(filepath.Base(filepath.Dir(file)), func(t *testing.T) {
			raw, err := os.ReadFile(file)
			require.NoError(t, err)
			e, err := envelope.DecodeEnvelope(raw)
			require.NoError(t, err)
			env, err := e.Digest()
			require.NoError(t, err)
			event := receipt.EventFacts{EventID: e.EventID, EventType: e.EventType, EventSchemaVersion: e.EventSchemaVersion, EnvelopeDigest: env, Identity: e.Identity()}
			for _, r := range receiptsFor(t, e, env) {
				covered[r.ReceiptDestination()] = true
				member := memberFor(r.ReceiptDestination(), e.EventType, e.EventSchemaVersion)
				ack, err := receipt.AckFor(r)
				require.NoError(t, err)
				body := mustJSON(r)
				require.NoError(t, receipt.VerifyAck(event, member, ack, body), string(r.ReceiptDestination()))
				// Every identity field the receipt carries is one the event has, with the same value.
				for name, value := range r.ReceiptIdentity() {
					require.Equal(t, value, event.Identity[name], name)
					tampered := receipt.EventFacts{EventID: event.EventID, EventType: event.EventType, EventSchemaVersion: event.EventSchemaVersion, EnvelopeDigest: env, Identity: map[string]string{}}
					for k, v := range event.Identity {
						tampered.Identity[k] = v
					}
					tampered.Identity[name] = value + "0"
					require.ErrorIs(t, receipt.VerifyAck(tampered, member, ack, body), receipt.ErrBusinessIdentityMismatch, name)
				}
			}
		})
	}
	require.Len(t, covered, len(route.Destinations))
}
