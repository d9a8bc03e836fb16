package outbox

import (
	"testing"

	"github.com/oceanway/core/contracts/envelope"
	"github.com/oceanway/core/contracts/envelope/sample"
)

// BenchmarkPrepareEvents measures AppendTx's in-process work per event
// before any statement: strict validation, canonical bytes and digest
// (no database).
//
//	go test -run '^$' -bench PrepareEvents -benchmem ./internal/outbox/
func BenchmarkPrepareEvents(b *testing.B) {
	for _, n := range []int{1, 100} {
		envs := make([]envelope.Envelope, n)
		for i := range envs {
			envs[i] = sample.Envelope(envelope.RunCreatedV2, i)
		}
		b.Run(map[int]string{1: "tx1", 100: "tx100"}[n], func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := prepareEvents(envs); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
