package dispatcher_test

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/contracts/envelope"
	"github.com/oceanway/core/contracts/envelope/sample"
	"github.com/oceanway/core/contracts/route"
	"github.com/oceanway/core/internal/outbox/dispatcher"
	"github.com/oceanway/core/internal/outbox/outboxtest"
)

// sampleClaim is a claimed core_operations delivery of a valid stored
// run.created@2.0 envelope, without a database.
func sampleClaim(tb testing.TB) dispatcher.Claimed {
	tb.Helper()
	e, err := envelope.Build(sample.Envelope(envelope.RunCreatedV2, 0))
	if err != nil {
		tb.Fatal(err)
	}
	canonical, err := e.Canonical()
	if err != nil {
		tb.Fatal(err)
	}
	d, err := e.Digest()
	if err != nil {
		tb.Fatal(err)
	}
	return dispatcher.Claimed{
		Fence: dispatcher.Fence{Destination: route.CoreOperations, EventID: e.EventID, AttemptID: sample.ID(90), LeaseToken: sample.ID(91)},
		Member: route.Member{
			Destination: route.CoreOperations, ConsumerName: route.OperationsProjector,
			EventType: e.EventType, EventSchemaVersion: e.EventSchemaVersion,
			ExpectedReceiptType: route.OperationsProjectionAppliedReceipt, ExpectedReceiptSchemaVersion: route.ReceiptSchemaVersion1,
			Mandatory: true, ProjectionTarget: route.Required(projectionName, 1),
		},
		EventType: e.EventType, EventSchemaVersion: e.EventSchemaVersion,
		Envelope: canonical, EnvelopeDigest: d, AttemptCount: 1,
	}
}

// BenchmarkVerifyResult measures the dispatcher's per-delivery check of a
// consumer's ack and receipt against the stored event (no database).
//
//	go test -run '^$' -bench VerifyResult -benchmem ./internal/outbox/dispatcher/
func BenchmarkVerifyResult(b *testing.B) {
	c := sampleClaim(b)
	res, err := outboxtest.Ack(b.Context(), c.Delivery())
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := dispatcher.VerifyResult(c, res); err != nil {
			b.Fatal(err)
		}
	}
}

// OB-DELIVER-4: an ack is verified against the event as stored. Stored
// bytes that do not decode, or that name another event than the claimed
// row, reject the ack as stored_event_invalid.
func TestVerifyResult_OBDELIVER4_StoredEventInvalid(t *testing.T) {
	t.Parallel()
	c := sampleClaim(t)
	res, err := outboxtest.Ack(t.Context(), c.Delivery())
	require.NoError(t, err)
	_, err = dispatcher.VerifyResult(c, res)
	require.NoError(t, err)

	for name, stored := range map[string][]byte{
		"truncated":     c.Envelope[:len(c.Envelope)-1],
		"another event": bytes.Replace(c.Envelope, []byte(c.EventID), []byte(sample.ID(999)), 1),
	} {
		bad := c
		bad.Envelope = stored
		_, err := dispatcher.VerifyResult(bad, res)
		var rejected *dispatcher.AckRejectedError
		require.ErrorAs(t, err, &rejected, name)
		require.Equal(t, "stored_event_invalid", rejected.Code(), name)
	}
}
