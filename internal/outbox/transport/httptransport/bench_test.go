package httptransport_test

import (
	"testing"

	"github.com/oceanway/core/contracts/route"
	"github.com/oceanway/core/internal/outbox/outboxtest"
	"github.com/oceanway/core/internal/outbox/transport"
)

// BenchmarkDeliver measures one delivery's transport cost with a consumer
// that writes nothing (outboxtest.Ack): in process, and over loopback HTTP
// (token signing and verification, JSON both ways, strict ack decoding,
// connection reuse).
func BenchmarkDeliver(b *testing.B) {
	if testing.Short() {
		b.Skip("benchmark skipped with -short")
	}
	d := delivery(b, 9)
	b.Run("inprocess", func(b *testing.B) {
		tr := transport.NewInProcess(map[route.Destination]transport.ConsumerFunc{route.CoreOperations: outboxtest.Ack})
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if _, err := tr.Deliver(b.Context(), d); err != nil {
					b.Fatal(err)
				}
			}
		})
	})
	b.Run("http", func(b *testing.B) {
		bb := setup(b)
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if _, err := bb.client.Deliver(b.Context(), d); err != nil {
					b.Fatal(err)
				}
			}
		})
	})
}
