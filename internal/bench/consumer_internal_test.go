package bench

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/contracts/digest"
	"github.com/oceanway/core/contracts/envelope/sample"
	"github.com/oceanway/core/contracts/route"
	"github.com/oceanway/core/internal/bench/measure"
	"github.com/oceanway/core/internal/dbtest"
	"github.com/oceanway/core/internal/outbox"
	"github.com/oceanway/core/internal/outbox/transport"
)

// batchDeliveries builds n core_operations deliveries of distinct events.
func batchDeliveries(t *testing.T, n int) []transport.Delivery {
	t.Helper()
	out := make([]transport.Delivery, n)
	for i := range out {
		e := sample.Envelope(eventType, 0)
		e.EventID = outbox.NewEventID()
		d, err := e.Digest()
		require.NoError(t, err)
		out[i] = transport.Delivery{
			EventID: e.EventID, EventType: e.EventType, EventSchemaVersion: e.EventSchemaVersion, EnvelopeDigest: d,
			Member: route.Member{
				Destination: route.CoreOperations, ConsumerName: "operations_projector", EventType: e.EventType,
				EventSchemaVersion: e.EventSchemaVersion, ProjectionTarget: route.Required(projectionName, 1),
			},
		}
	}
	return out
}

// OB-DELIVER-5 (issue 17): the bench consumer's batch entry point stores a
// batch's receipts in one statement, answers a redelivered batch with the
// stored receipts byte for byte (applying nothing twice), and answers an
// event id seen before with another envelope digest as a non-retryable
// conflict without failing the rest of its batch.
func TestReceiptConsumer_OBDELIVER5_BatchInsertOrCompare(t *testing.T) {
	t.Parallel()
	srv := dbtest.Server(t)
	ctx := t.Context()
	name := dbtest.NewPrefix(t) + "_consumer"
	require.NoError(t, measure.CreateDatabase(ctx, srv.URL, name))
	t.Cleanup(func() { _ = measure.DropDatabases(ctx, srv.URL, name) })
	dsn := measure.DatabaseURL(srv.URL, name)
	require.NoError(t, createConsumerSchema(ctx, dsn))
	pool, err := measure.NewPool(ctx, dsn, 2)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	c := &receiptConsumer{pool: pool}

	ds := batchDeliveries(t, 5)
	first := c.DeliverBatch(ctx, ds)
	require.Len(t, first, len(ds))
	for i, a := range first {
		require.NoError(t, a.Err)
		require.NotNil(t, a.Result.Ack)
		require.Equal(t, ds[i].EventID, a.Result.Ack.EventID, "answer %d belongs to delivery %d", i, i)
	}
	n, err := c.count(ctx)
	require.NoError(t, err)
	require.Equal(t, len(ds), n)

	// A redelivery of the whole batch plus one new event, with one event's
	// digest changed: stored bytes, one new receipt, one conflict.
	again := append(batchDeliveries(t, 1), ds...)
	conflict := again[3]
	conflict.EnvelopeDigest = digest.Digest{Algorithm: conflict.EnvelopeDigest.Algorithm, Value: "00" + conflict.EnvelopeDigest.Value[2:]}
	if conflict.EnvelopeDigest.Value == again[3].EnvelopeDigest.Value {
		conflict.EnvelopeDigest.Value = "11" + conflict.EnvelopeDigest.Value[2:]
	}
	again[3] = conflict
	second := c.DeliverBatch(ctx, again)
	require.Len(t, second, len(again))
	require.NoError(t, second[0].Err, "the new event is applied")
	for i := 1; i < len(again); i++ {
		if i == 3 {
			retryable, code := transport.RetryableAndCode(second[i].Err)
			require.False(t, retryable)
			require.Equal(t, "digest_conflict", code)
			continue
		}
		require.NoError(t, second[i].Err)
		require.Equal(t, string(first[i-1].Result.ReceiptBody), string(second[i].Result.ReceiptBody), "replayed byte for byte")
	}
	n, err = c.count(ctx)
	require.NoError(t, err)
	require.Equal(t, len(ds)+1, n, "nothing applied twice")
}
