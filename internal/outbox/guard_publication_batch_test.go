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

// The clauses of the published_at function's batch body (OB-PUB-1,
// outbox.record_publication_batch in outbox migration 00097), one case per
// clause (issue 37), each as oceanway_dispatcher (the role that calls it)
// against its own event of a pair with two mandatory deliveries, so that no
// ack below completes an event. Every case asserts OW009 (or OW013) and the
// message fragment of its own clause: the per-row checks yield a reason
// (the CASE branches OW009.pub-row-*), the IF/ELSIF after them raise it.
//
// Three per-row checks guard a state the other guards never let a write
// reach — a delivery of a destination that is no mandatory member of the
// event's definition, a delivery that froze another definition than its
// event, a delivery whose projection target is not its member's: the
// delivery rows are proven equal to the mandatory members at append (OW004,
// OW016) and their frozen columns never change (OW001). Their cases forge
// that state as the table owner with the delivery triggers switched off
// (as TestRecordPublicationRequiresProvenSiblings_OBPUB1 does), then call
// the function as the dispatcher: the function's own check is the last
// line of defence and must still refuse.

// pubCase drives one refusal of outbox.record_publication_batch.
type pubCase struct {
	name         string
	code, reason string                                   // the SQLSTATE and the clause's message fragment
	run          func(t *testing.T, b forgedBundle) error // the refused call, on the case's own event
}

// forgeDelivery runs stmt (with $1 the event id, $2 the destination) on
// one delivery with the delivery triggers switched off, as the table owner.
func forgeDelivery(t *testing.T, b forgedBundle, dest route.Destination, stmt string, args ...any) {
	t.Helper()
	require.NoError(t, db.WithTx(t.Context(), b.pool, func(ctx context.Context, tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `ALTER TABLE outbox.outbox_deliveries DISABLE TRIGGER USER`); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, stmt, append([]any{b.event.EventID, string(dest)}, args...)...); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `ALTER TABLE outbox.outbox_deliveries ENABLE TRIGGER USER`)
		return err
	}))
}

// ackedParams is, as the dispatcher in one transaction, a claim of
// guardDest and (when written) its ack, then the function called with the
// ack's parameters as mutate changes them.
func ackedParams(t *testing.T, b forgedBundle, written bool, mutate func(*outbox.PublicationParams)) error {
	t.Helper()
	return b.asRole(t, schema.RoleDispatcher, func(ctx context.Context, tx pgx.Tx) error {
		a := ack{EventID: b.event.EventID, Destination: guardDest, Attempt: claim(t, ctx, tx, b.event.EventID, guardDest),
			ReceiptRef: "receipt-guard", ReceiptDigest: strings.Repeat("f", 64), EnvelopeSHA: b.event.EnvelopeDigest.Value}
		if written {
			a.write(t, ctx, tx)
		}
		p := a.params(t)
		if mutate != nil {
			mutate(&p)
		}
		_, err := recordBatch(ctx, tx, p)
		return err
	})
}

// forgedParams are the parameters of an ack of dest with a fresh attempt
// (no claim): only the checks before the attempt's are reached.
func forgedParams(t *testing.T, b forgedBundle, dest route.Destination) outbox.PublicationParams {
	t.Helper()
	return ack{EventID: b.event.EventID, Destination: dest, Attempt: freshAttempt(), ReceiptRef: "receipt-guard",
		ReceiptDigest: strings.Repeat("f", 64), EnvelopeSHA: b.event.EnvelopeDigest.Value}.params(t)
}

func (b forgedBundle) recordAsDispatcher(t *testing.T, p outbox.PublicationParams) error {
	t.Helper()
	return b.asRole(t, schema.RoleDispatcher, func(ctx context.Context, tx pgx.Tx) error {
		_, err := recordBatch(ctx, tx, p)
		return err
	})
}

// OB-PUB-1, the refusals of outbox.record_publication_batch, each case
// naming its clauses: OW013.publication-batch-isolation,
// OW009.publication-batch-arguments, OW009.publication-unknown-event,
// OW009.publication-no-delivery, OW009.publication-invalid-ack and the
// per-row reasons OW009.pub-row-unknown-event, OW009.pub-row-no-delivery,
// OW009.pub-row-not-mandatory-member, OW009.pub-row-other-definition,
// OW009.pub-row-consumer, OW009.pub-row-receipt-type,
// OW009.pub-row-projection, OW009.pub-row-envelope-digest,
// OW009.pub-row-not-acknowledged, OW009.pub-row-other-receipt,
// OW009.pub-row-not-current-attempt, OW009.pub-row-unproven-finish. The
// sibling proof, OW009.publication-unproven-sibling, is
// TestRecordPublicationRequiresProvenSiblings_OBPUB1's.
func TestGuard_OW009_RecordPublicationBatchRefusals(t *testing.T) {
	t.Parallel()
	base := setupForged(t)
	cases := []pubCase{{
		// OW013.publication-batch-isolation: the batch function itself
		// (not the one-ack wrapper, which checks first) under REPEATABLE READ.
		name: "isolation", code: outbox.CodeIsolationLevel, reason: "record_publication_batch runs under READ COMMITTED",
		run: func(t *testing.T, b forgedBundle) error {
			return db.WithTxOptions(t.Context(), b.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead}, func(ctx context.Context, tx pgx.Tx) error {
				setRole(t, ctx, tx, schema.RoleDispatcher)
				_, err := recordBatch(ctx, tx, forgedParams(t, b, guardDest))
				return err
			})
		},
	}, {
		// OW009.publication-batch-arguments: arrays of different lengths.
		name: "arguments", code: outbox.CodePublicationInvalid, reason: "record_publication: every argument is required",
		run: func(t *testing.T, b forgedBundle) error {
			return b.asRole(t, schema.RoleDispatcher, func(ctx context.Context, tx pgx.Tx) error {
				return tx.QueryRow(ctx, `SELECT count(*)::text FROM outbox.record_publication_batch(ARRAY[$1::uuid], ARRAY['a','b'],
					ARRAY['c'], ARRAY[$1::uuid], ARRAY[$1::uuid], ARRAY['t'], ARRAY['k'], ARRAY['1'], ARRAY['jcs-sha256-v1'],
					ARRAY['d'], ARRAY['jcs-sha256-v1'], ARRAY['e'])`, b.event.EventID).Scan(new(string))
			})
		},
	}, {
		// OW009.pub-row-unknown-event, OW009.publication-unknown-event
		name: "unknown event", code: outbox.CodePublicationInvalid, reason: "record_publication: unknown event",
		run: func(t *testing.T, b forgedBundle) error {
			p := forgedParams(t, b, guardDest)
			p.EventID = outbox.NewEventID()
			return b.recordAsDispatcher(t, p)
		},
	}, {
		// OW009.pub-row-no-delivery, OW009.publication-no-delivery
		name: "no delivery", code: outbox.CodePublicationInvalid, reason: "has no delivery to metering_input_processor",
		run: func(t *testing.T, b forgedBundle) error {
			return b.recordAsDispatcher(t, forgedParams(t, b, route.MeteringInputProcessor))
		},
	}, {
		// OW009.pub-row-not-mandatory-member (forged: the delivery moved to
		// a destination the definition has no member for).
		name: "not a member", code: outbox.CodePublicationInvalid, reason: "is not a mandatory member of the event's frozen definition",
		run: func(t *testing.T, b forgedBundle) error {
			forgeDelivery(t, b, guardDest, `UPDATE outbox.outbox_deliveries SET destination = 'metering_input_processor'
				WHERE event_id = $1 AND destination = $2`)
			return b.recordAsDispatcher(t, forgedParams(t, b, route.MeteringInputProcessor))
		},
	}, {
		// OW009.pub-row-other-definition (forged: the delivery names another
		// definition version than its event).
		name: "other definition", code: outbox.CodePublicationInvalid, reason: "delivery and event froze different definitions",
		run: func(t *testing.T, b forgedBundle) error {
			forgeDelivery(t, b, guardDest, `UPDATE outbox.outbox_deliveries SET delivery_set_version = delivery_set_version + 1000
				WHERE event_id = $1 AND destination = $2`)
			return b.recordAsDispatcher(t, forgedParams(t, b, guardDest))
		},
	}, {
		// OW009.pub-row-projection (forged: a projection target the member
		// does not have).
		name: "projection", code: outbox.CodePublicationInvalid, reason: "delivery projection target does not match the frozen member",
		run: func(t *testing.T, b forgedBundle) error {
			forgeDelivery(t, b, guardDest, `UPDATE outbox.outbox_deliveries
				SET required_projection_name = 'operations', required_projection_version = 1
				WHERE event_id = $1 AND destination = $2`)
			return b.recordAsDispatcher(t, forgedParams(t, b, guardDest))
		},
	}, {
		// OW009.pub-row-consumer
		name: "consumer", code: outbox.CodePublicationInvalid, reason: "consumer does not match the frozen destination → consumer mapping",
		run: func(t *testing.T, b forgedBundle) error {
			return ackedParams(t, b, true, func(p *outbox.PublicationParams) { p.ConsumerName = route.OperationsProjector })
		},
	}, {
		// OW009.pub-row-receipt-type
		name: "receipt type", code: outbox.CodePublicationInvalid, reason: "receipt type or schema version does not match the frozen member",
		run: func(t *testing.T, b forgedBundle) error {
			return ackedParams(t, b, true, func(p *outbox.PublicationParams) { p.ReceiptType = route.OperationsProjectionAppliedReceipt })
		},
	}, {
		// OW009.pub-row-envelope-digest
		name: "envelope digest", code: outbox.CodePublicationInvalid, reason: "ack envelope digest does not match the event",
		run: func(t *testing.T, b forgedBundle) error {
			return ackedParams(t, b, true, func(p *outbox.PublicationParams) { p.EventEnvelopeDigest.Value = strings.Repeat("0", 64) })
		},
	}, {
		// OW009.pub-row-not-acknowledged, OW009.publication-invalid-ack (the
		// generic raise, "invalid ack for event ...: <reason>"): a leased
		// delivery.
		name: "not acknowledged", code: outbox.CodePublicationInvalid, reason: "invalid ack for event",
		run: func(t *testing.T, b forgedBundle) error {
			err := ackedParams(t, b, false, nil)
			require.ErrorContains(t, err, "delivery is not acknowledged")
			return err
		},
	}, {
		// OW009.pub-row-other-receipt
		name: "other receipt", code: outbox.CodePublicationInvalid, reason: "delivery was acknowledged with other receipt coordinates",
		run: func(t *testing.T, b forgedBundle) error {
			return ackedParams(t, b, true, func(p *outbox.PublicationParams) { p.Receipt.Ref = "another-receipt" })
		},
	}, {
		// OW009.pub-row-not-current-attempt
		name: "not the current attempt", code: outbox.CodePublicationInvalid, reason: "attempt or lease token is not the delivery's current one",
		run: func(t *testing.T, b forgedBundle) error {
			return ackedParams(t, b, true, func(p *outbox.PublicationParams) { p.AttemptID = outbox.NewEventID() })
		},
	}, {
		// OW009.pub-row-unproven-finish (forged: acknowledged by an earlier
		// transaction with the triggers off, under its lease but with no
		// finish).
		name: "unproven finish", code: outbox.CodePublicationInvalid, reason: "attempt start with this lease token has no acknowledged finish",
		run: func(t *testing.T, b forgedBundle) error {
			a := b.claimed(t)
			forgeDelivery(t, b, guardDest, `UPDATE outbox.outbox_deliveries
				SET status = 'acknowledged', delivered_at = now(), ack_consumer_name = consumer_name, ack_receipt_type = expected_receipt_type,
				    ack_receipt_key = 'receipt-guard', ack_receipt_schema_version = expected_receipt_schema_version,
				    ack_receipt_digest_algorithm_version = 'jcs-sha256-v1', ack_receipt_digest = repeat('f', 64),
				    ack_event_envelope_digest_algorithm_version = 'jcs-sha256-v1', ack_event_envelope_sha256 = $3
				WHERE event_id = $1 AND destination = $2`, b.event.EnvelopeDigest.Value)
			p := forgedParams(t, b, guardDest)
			p.AttemptID, p.LeaseToken = a.ID, a.Token
			return b.recordAsDispatcher(t, p)
		},
	}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := forgedBundle{testBundle: base.testBundle,
				event: appendTx(t, base.pool, freshSample(envelope.BillingFinalizationResolutionAppliedV1)).Events[0]}
			err := c.run(t, b)
			requireCode(t, err, c.code)
			require.Contains(t, err.Error(), c.reason)
			require.False(t, b.published(t))
		})
	}
}
