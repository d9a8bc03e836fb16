package receipt_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/contracts/digest"
	"github.com/oceanway/core/contracts/jcs"
	"github.com/oceanway/core/contracts/receipt"
	"github.com/oceanway/core/contracts/route"
	"github.com/oceanway/core/contracts/strict"
)

var ackPrefixes = map[route.Destination]string{
	route.CoreOperations:                 "operationsProjectionAppliedReceipt",
	route.MeteringInputProcessor:         "meteringInputProcessorConsumerReceipt",
	route.BillingFinalizationCoordinator: "billingFinalizationCoordinatorConsumerReceipt",
	route.BillingSettlementCatchUp:       "billingSettlementCatchUpConsumerReceipt",
}

func ackJSON(t *testing.T, dest route.Destination, label string) map[string]any {
	t.Helper()
	a, err := receipt.NewAck(dest, uuidOf(label), dig("envelope:"+label), quad("receipt:"+label))
	require.NoError(t, err)
	return a.ToJSON()
}

// OB-DELIVER-3: ActiveConsumerAck@1 is a closed union with one branch per destination.
func TestActiveConsumerAck_EveryBranch_OBDELIVER3(t *testing.T) {
	t.Parallel()
	for _, dest := range route.Destinations {
		t.Run(string(dest), func(t *testing.T) {
			t.Parallel()
			m := ackJSON(t, dest, "ack-"+string(dest))
			b, _ := route.BindingOf(dest)
			require.Equal(t, b.AckKind, path(m, "appliedReceipt")["kind"])
			require.Equal(t, b.ConsumerName, m["consumerName"])
			require.Contains(t, path(m, "appliedReceipt"), ackPrefixes[dest]+"Ref")
			a, err := receipt.DecodeActiveConsumerAck(mustMarshal(m))
			require.NoError(t, err)
			require.Equal(t, dest, a.Destination)
			require.Equal(t, quad("receipt:ack-"+string(dest)), a.AppliedReceipt.Receipt)
			require.Equal(t, mustMarshal(m), mustJSON(a))
		})
	}
}

// OB-DELIVER-3 / CT-2: a branch that does not match the destination, a free
// string, a missing receipt quadruple and mixed branches are rejected.
func TestActiveConsumerAck_Rejects_OBDELIVER3(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		mutate func(m map[string]any)
		want   error
	}{
		{"branch of another destination", func(m map[string]any) {
			m["appliedReceipt"] = ackJSON(t, route.BillingSettlementCatchUp, "other")["appliedReceipt"]
		}, receipt.ErrAckBranch},
		{"consumer of another destination", func(m map[string]any) {
			m["consumerName"] = route.OperationsProjector
		}, receipt.ErrAckConsumer},
		{"free string instead of receipt", func(m map[string]any) { m["appliedReceipt"] = "ok" }, strict.ErrNotObject},
		{"HTTP-2xx style empty ack", func(m map[string]any) { delete(m, "appliedReceipt") }, strict.ErrMissingField},
		{"missing receipt digest", func(m map[string]any) {
			delete(path(m, "appliedReceipt"), "meteringInputProcessorConsumerReceiptDigest")
		}, strict.ErrMissingField},
		{"missing receipt ref", func(m map[string]any) {
			delete(path(m, "appliedReceipt"), "meteringInputProcessorConsumerReceiptRef")
		}, strict.ErrMissingField},
		{"bare receipt digest", func(m map[string]any) {
			delete(path(m, "appliedReceipt"), "meteringInputProcessorConsumerReceiptDigestAlgorithmVersion")
		}, digest.ErrMissingAlgorithm},
		{"unknown receipt digest algorithm", func(m map[string]any) {
			path(m, "appliedReceipt")["meteringInputProcessorConsumerReceiptDigestAlgorithmVersion"] = "sha256"
		}, digest.ErrUnknownAlgorithm},
		{"unknown receipt schema version", func(m map[string]any) {
			path(m, "appliedReceipt")["meteringInputProcessorConsumerReceiptSchemaVersion"] = "2"
		}, strict.ErrUnknownSchemaVersion},
		{"unknown branch kind", func(m map[string]any) { path(m, "appliedReceipt")["kind"] = "http_2xx" }, strict.ErrUnknownEnum},
		{"mixed branch fields", func(m map[string]any) {
			path(m, "appliedReceipt")["operationsProjectionAppliedReceiptRef"] = "x"
		}, strict.ErrMixedUnion},
		{"unknown destination", func(m map[string]any) { m["destination"] = "core-operations" }, strict.ErrUnknownEnum},
		{"bare envelope digest", func(m map[string]any) { delete(m, "eventEnvelopeDigestAlgorithmVersion") }, digest.ErrMissingAlgorithm},
		{"non-UUID event id", func(m map[string]any) { m["eventId"] = "EVT-1" }, strict.ErrInvalidUUID},
		{"unknown field", func(m map[string]any) { m["status"] = "ok" }, strict.ErrUnknownField},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			m := ackJSON(t, route.MeteringInputProcessor, "reject")
			tc.mutate(m)
			_, err := receipt.DecodeActiveConsumerAck(mustMarshal(m))
			require.ErrorIs(t, err, tc.want)
		})
	}
}

func TestNewAck_RejectsInvalidInput(t *testing.T) {
	t.Parallel()
	_, err := receipt.NewAck("core-operations", uuidOf("x"), dig("x"), quad("x"))
	require.ErrorIs(t, err, route.ErrUnknownDestination)
	_, err = receipt.NewAck(route.CoreOperations, uuidOf("x"), dig("x"), strict.Quadruple{Ref: "x"})
	require.ErrorIs(t, err, strict.ErrInvalidQuadruple)
	a, err := receipt.NewAck(route.CoreOperations, uuidOf("x"), dig("x"), quad("x"))
	require.NoError(t, err)
	a.AppliedReceipt.Kind = receipt.AckKindBillingSettlementCatchUp
	require.ErrorIs(t, a.Validate(), receipt.ErrAckBranch)
}

func TestAckFor_OperationsReceipt(t *testing.T) {
	t.Parallel()
	r := opsReceipt("ackfor")
	a, err := receipt.AckFor(r)
	require.NoError(t, err)
	require.Equal(t, route.CoreOperations, a.Destination)
	require.Equal(t, route.OperationsProjector, a.ConsumerName)
	require.Equal(t, receipt.AckKindOperationsProjection, a.AppliedReceipt.Kind)
	require.Equal(t, r.Receipt, a.AppliedReceipt.Receipt)
	require.Equal(t, r.EventID, a.EventID)
	require.Equal(t, r.EventEnvelopeDigest, a.EventEnvelopeDigest)
}

func TestDecodeTree(t *testing.T) {
	t.Parallel()
	v, err := jcs.Parse(mustJSON(opsReceipt("tree")))
	require.NoError(t, err)
	r, err := receipt.DecodeTree(v, receipt.DecodeOperationsProjectionAppliedReceipt)
	require.NoError(t, err)
	require.NoError(t, r.VerifyDigest())
	_, err = receipt.DecodeTree(v, receipt.DecodeActiveConsumerAck)
	require.ErrorIs(t, err, strict.ErrMissingField)
	_, err = receipt.DecodeTree("x", receipt.DecodeActiveConsumerAck)
	require.ErrorIs(t, err, strict.ErrNotObject)
}
