package transport_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/contracts/route"
	"github.com/oceanway/core/internal/outbox/transport"
)

func delivery(dest route.Destination, id string) transport.Delivery {
	return transport.Delivery{EventID: id, Member: route.Member{Destination: dest}}
}

// single answers with the delivery's event id in the receipt body, so a test
// can tell which entry point answered.
func single(_ context.Context, d transport.Delivery) (transport.Result, error) {
	return transport.Result{ReceiptBody: []byte("single:" + d.EventID)}, nil
}

func batchOf(calls *[]int) transport.BatchConsumerFunc {
	return func(_ context.Context, ds []transport.Delivery) []transport.Answer {
		*calls = append(*calls, len(ds))
		out := make([]transport.Answer, len(ds))
		for i, d := range ds {
			out[i].Result = transport.Result{ReceiptBody: []byte("batch:" + d.EventID)}
		}
		return out
	}
}

// OB-DELIVER-5 (issue 17): a batch goes to the destination's batch entry
// point in one call, answer i belonging to delivery i; anything the batch
// entry point cannot take (another destination in the batch, more than its
// limit, a destination without one) goes one by one.
func TestInProcess_OBDELIVER5_DeliverBatchRoutesAndFallsBack(t *testing.T) {
	var calls []int
	tr := transport.NewInProcess(map[route.Destination]transport.ConsumerFunc{
		route.CoreOperations: single, route.MeteringInputProcessor: single,
	}).WithBatch(route.CoreOperations, 3, batchOf(&calls))
	require.Equal(t, 3, tr.BatchLimit(route.CoreOperations))
	require.Equal(t, 1, tr.BatchLimit(route.MeteringInputProcessor), "no batch entry point: single deliveries")

	out := tr.DeliverBatch(t.Context(), []transport.Delivery{delivery(route.CoreOperations, "a"), delivery(route.CoreOperations, "b")})
	require.Equal(t, []int{2}, calls)
	require.Equal(t, "batch:a", string(out[0].Result.ReceiptBody))
	require.Equal(t, "batch:b", string(out[1].Result.ReceiptBody))

	for name, ds := range map[string][]transport.Delivery{
		"mixed destinations": {delivery(route.CoreOperations, "a"), delivery(route.MeteringInputProcessor, "b")},
		"over the limit": {delivery(route.CoreOperations, "a"), delivery(route.CoreOperations, "b"),
			delivery(route.CoreOperations, "c"), delivery(route.CoreOperations, "d")},
		"no batch entry point": {delivery(route.MeteringInputProcessor, "a"), delivery(route.MeteringInputProcessor, "b")},
	} {
		calls = nil
		out := tr.DeliverBatch(t.Context(), ds)
		require.Empty(t, calls, name)
		require.Len(t, out, len(ds), name)
		for i, d := range ds {
			require.NoError(t, out[i].Err, name)
			require.Equal(t, "single:"+d.EventID, string(out[i].Result.ReceiptBody), name)
		}
	}
}

// OB-DELIVER-5 (issue 17): a batch consumer that panics or answers a
// different number of deliveries is not trusted for any of them: every
// delivery gets a retryable error (never an ack).
func TestInProcess_OBDELIVER5_BrokenBatchConsumerFailsEveryDelivery(t *testing.T) {
	ds := []transport.Delivery{delivery(route.CoreOperations, "a"), delivery(route.CoreOperations, "b")}
	for name, fn := range map[string]transport.BatchConsumerFunc{
		"panic": func(context.Context, []transport.Delivery) []transport.Answer { panic("boom") },
		"short answer": func(context.Context, []transport.Delivery) []transport.Answer {
			return []transport.Answer{{Result: transport.Result{ReceiptBody: []byte("x")}}}
		},
	} {
		tr := transport.NewInProcess(map[route.Destination]transport.ConsumerFunc{route.CoreOperations: single}).
			WithBatch(route.CoreOperations, 8, fn)
		out := tr.DeliverBatch(t.Context(), ds)
		require.Len(t, out, len(ds), name)
		for _, a := range out {
			require.Error(t, a.Err, name)
			retryable, _ := transport.RetryableAndCode(a.Err)
			require.True(t, retryable, name)
			require.Nil(t, a.Result.Ack, name)
		}
		if name == "short answer" {
			require.True(t, errors.Is(out[0].Err, transport.ErrBatchAnswers))
		}
	}
}
