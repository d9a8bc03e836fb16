package dispatcher_test

import (
	"testing"

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
