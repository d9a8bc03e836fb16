package receipt_test

import (
	"github.com/oceanway/core/contracts/receipt"
	"github.com/oceanway/core/contracts/strict"
)

// eventFor returns the event facts a receipt acknowledges: its event pair,
// envelope digest and its identity (as contracts/envelope's Identity() would
// produce it), plus envelope fields the receipt does not carry.
func eventFor(r receipt.Receipt) receipt.EventFacts {
	id := r.ReceiptIdentity()
	if _, ok := id["tenantKind"]; !ok {
		id["tenantKind"], id["tenantId"], id["workspaceId"] = receipt.TenantOrganization, uuidOf("tenant:gw"), uuidOf("workspace:gw")
	}
	id["aggregateRevisionHint"] = "1"
	return receipt.EventFacts{
		EventID: r.ReceiptEventID(), EventType: r.ReceiptEventType(), EventSchemaVersion: r.ReceiptEventSchemaVersion(),
		EnvelopeDigest: r.ReceiptEventEnvelopeDigest(), Identity: id,
	}
}

func deliveryOf(r receipt.Receipt, kind, identityField string, identityPath ...string) *delivery {
	self, ok := receipt.SelfAddressing(kind)
	if !ok {
		panic(kind)
	}
	return receiptDelivery(r.ReceiptDestination(), r, eventFor(r), self.Prefix, self.TimeFields[0], identityField, identityPath...)
}

// moreDeliveries returns the metering and billing scenarios: every source branch of every receipt.
func moreDeliveries() []*delivery {
	exec := execSource("verify-exec")
	usage := gatewaySource("verify-usage", receipt.EvidenceProviderUsage)
	cost := gatewaySource("verify-cost", receipt.EvidenceProviderCost)
	return []*delivery{
		deliveryOf(meteringReceipt("verify-exec", exec, receipt.OutcomeAdvanced, eligibilityStates("verify-exec", exec)["applied"]),
			receipt.KindMeteringInputProcessorConsumerReceipt, "runId", "source"),
		deliveryOf(meteringReceipt("verify-usage", usage, receipt.OutcomeAdvanced, eligibilityStates("verify-usage", usage)["pending"]),
			receipt.KindMeteringInputProcessorConsumerReceipt, "currentAvailabilityRef", "source"),
		deliveryOf(meteringReceipt("verify-cost", cost, receipt.OutcomeAdvanced, costLane(cost, 1, receipt.ProviderCostCoordination{
			State: receipt.StatePending, ActiveWork: pendingWork("verify-cost", 1)})),
			receipt.KindMeteringInputProcessorConsumerReceipt, "currentAvailabilityStateVersion", "source"),
		deliveryOf(coordinatorReceipt("verify-closure", closureSource("verify-closure"), workScheduled("verify-closure", 1)),
			receipt.KindBillingFinalizationCoordinatorConsumerReceipt, "closureOperationId", "source"),
		deliveryOf(coordinatorReceipt("verify-resolution", resolutionSource("verify-resolution"), receipt.CoordinatorOutcome{
			State: receipt.CoordinatorAlreadySuperseded, FinalizationFenceRevision: 3}),
			receipt.KindBillingFinalizationCoordinatorConsumerReceipt, "reconciliationCaseRef", "source"),
		deliveryOf(catchUpGoldens()[0].obj.(*receipt.BillingSettlementCatchUpConsumerReceipt),
			receipt.KindBillingSettlementCatchUpConsumerReceipt, "runStepId"),
	}
}

// otherValue returns a different value of the same format.
func otherValue(v string) string {
	if strict.IsUUID(v) {
		return uuidOf("another:" + v)
	}
	return "another-" + v
}
