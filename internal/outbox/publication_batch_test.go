package outbox_test

import (
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/contracts/envelope"
	"github.com/oceanway/core/contracts/route"
	"github.com/oceanway/core/internal/db"
	"github.com/oceanway/core/internal/outbox"
	"github.com/oceanway/core/internal/outbox/schema"
)

// recordBatch calls outbox.record_publication_batch with ps as its parallel
// arrays and returns the result per row.
func recordBatch(ctx context.Context, tx pgx.Tx, ps ...outbox.PublicationParams) ([]string, error) {
	var c [12][]string
	for _, p := range ps {
		for i, v := range []string{p.EventID, string(p.Destination), p.ConsumerName, p.AttemptID, p.LeaseToken, p.ReceiptType,
			p.Receipt.Ref, p.Receipt.SchemaVersion, string(p.Receipt.DigestAlgorithmVersion), p.Receipt.Digest,
			string(p.EventEnvelopeDigest.Algorithm), p.EventEnvelopeDigest.Value} {
			c[i] = append(c[i], v)
		}
	}
	rows, err := tx.Query(ctx, `SELECT result FROM outbox.record_publication_batch($1::uuid[], $2::text[], $3::text[], $4::uuid[],
		$5::uuid[], $6::text[], $7::text[], $8::text[], $9::text[], $10::text[], $11::text[], $12::text[])`,
		c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7], c[8], c[9], c[10], c[11])
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}

// OB-PUB-1 over a batch (issue 17 item 2): one call of the controlled
// function, as the dispatcher role, validates every row as the one-ack
// function does. Both mandatory deliveries of one event acknowledged in the
// same batch complete it (published_at set once); an event whose sibling is
// still open stays not_complete; one invalid row anywhere in the batch
// raises OW009 and the transaction changes nothing; arrays of different
// lengths are refused.
func TestRecordPublicationBatch_OBPUB1(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	b := setup(t)
	both := appendTx(t, b.pool, freshSample(envelope.BillingFinalizationResolutionAppliedV1)).Events[0]
	half := appendTx(t, b.pool, freshSample(envelope.BillingFinalizationResolutionAppliedV1)).Events[0]
	dests := []route.Destination{route.BillingFinalizationCoordinator, route.CoreOperations}

	run := func(mutate func([]outbox.PublicationParams) []outbox.PublicationParams) ([]string, error) {
		return db.WithTxV(ctx, b.pool, func(ctx context.Context, tx pgx.Tx) ([]string, error) {
			setRole(t, ctx, tx, schema.RoleDispatcher)
			var ps []outbox.PublicationParams
			for _, ev := range []outbox.AppendedEvent{both, half} {
				for i, dest := range dests {
					if ev.EventID == half.EventID && i == 1 {
						break // half: only its first destination is acknowledged
					}
					a := ack{EventID: ev.EventID, Destination: dest, Attempt: claim(t, ctx, tx, ev.EventID, dest),
						ReceiptRef: "receipt-" + string(dest), ReceiptDigest: strings.Repeat("f", 64), EnvelopeSHA: ev.EnvelopeDigest.Value}
					a.write(t, ctx, tx)
					ps = append(ps, a.params(t))
				}
			}
			return recordBatch(ctx, tx, mutate(ps)...)
		})
	}

	_, err := run(func(ps []outbox.PublicationParams) []outbox.PublicationParams {
		ps[1].Receipt.Digest = strings.Repeat("1", 64) // the second row of three disagrees with the recorded ack
		return ps
	})
	requireCode(t, err, outbox.CodePublicationInvalid)
	require.Contains(t, err.Error(), "other receipt coordinates")
	var open int
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT count(*) FROM outbox.outbox_deliveries WHERE status = 'pending'`).Scan(&open))
	require.Equal(t, 4, open, "the invalid batch rolled back")

	_, err = db.WithTxV(ctx, b.pool, func(ctx context.Context, tx pgx.Tx) ([]string, error) {
		setRole(t, ctx, tx, schema.RoleDispatcher)
		var rows []string
		err := tx.QueryRow(ctx, `SELECT count(*)::text FROM outbox.record_publication_batch(ARRAY[$1::uuid], ARRAY['a','b'],
			ARRAY['c'], ARRAY[$1::uuid], ARRAY[$1::uuid], ARRAY['t'], ARRAY['k'], ARRAY['1'], ARRAY['jcs-sha256-v1'],
			ARRAY['d'], ARRAY['jcs-sha256-v1'], ARRAY['e'])`, both.EventID).Scan(new(string))
		return rows, err
	})
	requireCode(t, err, outbox.CodePublicationInvalid)

	results, err := run(func(ps []outbox.PublicationParams) []outbox.PublicationParams { return ps })
	require.NoError(t, err)
	require.Equal(t, []string{"complete", "complete", "not_complete"}, results)
	require.NotNil(t, publishedAt(t, b, both.EventID), "both siblings acknowledged in one batch publish the event")
	require.Nil(t, publishedAt(t, b, half.EventID), "an open sibling keeps published_at NULL")
}
