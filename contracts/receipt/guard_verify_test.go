package receipt_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/contracts/receipt"
)

// OB-DELIVER-4: a self-consistent Operations receipt (resealed, the ack
// naming its quadruple) that states another event type or schema version
// than the delivered event is refused. Clause
// OB-DELIVER-4.receipt-event-type: the Operations receipt carries no
// business identity, so without this comparison the ack verifies.
func TestGuardVerifyReceiptOfAnotherEventType(t *testing.T) {
	t.Parallel()
	for name, set := range map[string]func(body map[string]any){
		"event type": func(b map[string]any) {
			b["eventType"] = "billing.finalization.committed@1"
			b["eventSchemaVersion"] = "1"
		},
		"event schema version": func(b map[string]any) { b["eventSchemaVersion"] = "1.0" },
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			d := deliveries()[0]
			// A mutation-free control: the scenario verifies as built.
			require.NoError(t, receipt.VerifyAck(d.event, d.member, d.ack(t), mustMarshal(d.body)))
			set(d.body)
			d.reseal()
			err := receipt.VerifyAck(d.event, d.member, d.ack(t), mustMarshal(d.body))
			var ae *receipt.AckError
			require.ErrorAs(t, err, &ae)
			require.Equal(t, receipt.ErrEventIdentityMismatch, ae.Reason)
			require.Equal(t, "receipt.eventType/eventSchemaVersion", ae.Field)
		})
	}
}
