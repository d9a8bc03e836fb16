package dispatcher

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/contracts/receipt"
	"github.com/oceanway/core/contracts/route"
	"github.com/oceanway/core/contracts/strict"
)

// OB-PUB-1 (issue 18, item 2): the published_at function is given what the
// ack itself says — its event id, destination, consumer, receipt type (from
// its appliedReceipt.kind) and quadruple — and the claim's fence, never the
// member's expectations, which would make its comparison always pass.
func TestAckColumnsCarryTheAcksOwnCoordinates_OBPUB1(t *testing.T) {
	t.Parallel()
	claimed := Claimed{
		Fence: Fence{Destination: route.CoreOperations, EventID: "claimed-event", AttemptID: "attempt", LeaseToken: "token"},
		Member: route.Member{Destination: route.CoreOperations, ConsumerName: route.OperationsProjector,
			ExpectedReceiptType: route.OperationsProjectionAppliedReceipt, ExpectedReceiptSchemaVersion: "1"},
	}
	ack := &receipt.ActiveConsumerAck{
		Destination: route.MeteringInputProcessor, ConsumerName: route.MeteringInputProcessorConsumer, EventID: "acked-event",
		AppliedReceipt: receipt.AppliedReceipt{Kind: "metering_input_processor",
			Receipt: strict.Quadruple{Ref: "ref", SchemaVersion: "7", DigestAlgorithmVersion: "jcs-sha256-v1", Digest: "dd"}},
	}
	c := ackColumns([]VerifiedAck{{claimed: claimed, ack: ack}})
	require.Equal(t, []string{"acked-event"}, c.AckEventIds)
	require.Equal(t, []string{string(route.MeteringInputProcessor)}, c.AckDestinations)
	require.Equal(t, []string{route.MeteringInputProcessorConsumer}, c.ConsumerNames)
	require.Equal(t, []string{route.MeteringInputProcessorConsumerReceipt}, c.AckReceiptTypes)
	require.Equal(t, []string{"claimed-event"}, c.EventIds, "the fence is the claim's")
	require.Equal(t, []string{string(route.CoreOperations)}, c.Destinations, "the fence is the claim's")
	require.Equal(t, []string{route.OperationsProjectionAppliedReceipt}, c.ReceiptTypes, "the fenced statement takes the frozen member's type")
	require.Equal(t, []string{"7"}, c.ReceiptSchemaVersions)
	require.Equal(t, []string{"attempt"}, c.AttemptIds)
	require.Equal(t, []string{"token"}, c.LeaseTokens)

	ack.AppliedReceipt.Kind = "operations_projection" // not the kind its destination binds
	c = ackColumns([]VerifiedAck{{claimed: claimed, ack: ack}})
	require.Equal(t, []string{"operations_projection"}, c.AckReceiptTypes, "matches no receipt type: the database refuses it")
}
