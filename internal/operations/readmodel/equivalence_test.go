package readmodel_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/contracts/envelope"
	"github.com/oceanway/core/contracts/envelope/sample"
	"github.com/oceanway/core/contracts/route"
	"github.com/oceanway/core/internal/db"
	"github.com/oceanway/core/internal/operations/operationstest"
	"github.com/oceanway/core/internal/operations/projector"
	"github.com/oceanway/core/internal/operations/readmodel"
	"github.com/oceanway/core/internal/outbox/dispatcher"
)

// inputsRow runs a completeness inputs statement and returns its one row by column name.
func (b *bundle) inputsRow(t *testing.T, stmt string) map[string]any {
	t.Helper()
	var row map[string]any
	err := db.WithTxOptions(t.Context(), b.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(ctx context.Context, tx pgx.Tx) error {
		rows, err := tx.Query(ctx, stmt, pgx.NamedArgs{"projection_name": projector.ProjectionName, "projection_version": int64(1)})
		if err != nil {
			return err
		}
		row, err = pgx.CollectExactlyOneRow(rows, pgx.RowToMap)
		return err
	})
	require.NoError(t, err)
	return row
}

// OPS-4: the linear statement keeps exactly the semantics of the former CTE
// statement (testdata/completeness_inputs_cte_reference.sql): in every state
// below, including ones where each semantic counter is non-zero, both return
// the same row, so the fingerprints and the proof's inputs digest do not
// change for the same inputs.
func TestOPS4CompletenessInputsEqualCTEReference(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	reference, err := os.ReadFile("testdata/completeness_inputs_cte_reference.sql")
	require.NoError(t, err)
	b := setup(t, 4)
	nonZero := map[string]bool{}
	same := func(state string) {
		t.Helper()
		want, got := b.inputsRow(t, string(reference)), b.inputsRow(t, readmodel.CompletenessInputsStatement)
		require.Equal(t, want, got, state)
		for k, v := range got {
			if n, ok := v.(int64); ok && n > 0 {
				nonZero[k] = true
			}
		}
	}
	exec := func(sql string) {
		t.Helper()
		_, err := b.pool.Exec(ctx, sql, pgx.NamedArgs{"name": projector.ProjectionName})
		require.NoError(t, err)
	}

	same("empty")
	b.admit(t, 3)
	same("admitted, nothing delivered")
	b.deliverAll(t)
	same("delivered")

	// a gap, a wallet event without its Run (pending unlinked, receipt
	// without source) and an unsupported schema
	o := operationstest.Sample(1)
	_, err = b.proj.Consume(ctx, operationstest.DeliveryV1(o.Finalization))
	require.Error(t, err)
	_, err = b.proj.Consume(ctx, operationstest.DeliveryV1(o.Wallet))
	require.NoError(t, err)
	_, err = b.proj.Consume(ctx, operationstest.DeliveryV1(sample.Built(envelope.BillingLateCommandResultCommittedV1, 1)))
	require.Error(t, err)
	b.admit(t, 2)
	claims, err := b.store.Claim(ctx, dispatcher.ClaimParams{Owner: "test", Destinations: []route.Destination{route.CoreOperations}, Limit: 1, Lease: time.Minute})
	require.NoError(t, err)
	require.Len(t, claims, 1)
	require.NoError(t, b.store.Quarantine(ctx, claims[0].Fence, "test_quarantine", "test", false))
	same("gap, unlinked wallet, unsupported schema, open and quarantined deliveries")

	// Damage the owner rows as only a bug could (the test role owns the
	// tables): a receipt without mutation, a mutation without receipt (and
	// so an aggregate whose revision disagrees), an aggregate with no
	// events, a receipt whose envelope digest differs from the source, and
	// a summary left source_delayed although its wallet event is applied.
	exec(`INSERT INTO operations.applied_receipts
	        SELECT consumer_name, projection_name, projection_version, gen_random_uuid(), event_type, event_schema_version,
	               event_envelope_digest_algorithm_version, event_envelope_sha256, receipt_ref || '-copy', receipt_schema_version,
	               receipt_digest_algorithm_version, receipt_digest, receipt_body, recorded_at
	          FROM operations.applied_receipts WHERE projection_name = @name LIMIT 1`)
	exec(`INSERT INTO operations.applied_receipts
	        SELECT r.consumer_name, r.projection_name, r.projection_version, f.event_id, r.event_type, r.event_schema_version,
	               r.event_envelope_digest_algorithm_version, repeat('0', 64), r.receipt_ref || '-other-digest', r.receipt_schema_version,
	               r.receipt_digest_algorithm_version, r.receipt_digest, r.receipt_body, r.recorded_at
	          FROM operations.applied_receipts r,
	               (SELECT event_id FROM outbox.delivery_facts WHERE destination = 'core_operations' AND status = 'pending' LIMIT 1) f
	         WHERE r.projection_name = @name LIMIT 1`)
	exec(`INSERT INTO operations.projected_events
	        SELECT projection_name, projection_version, gen_random_uuid(), event_type, event_schema_version, aggregate_type, aggregate_id,
	               aggregate_revision + 100, run_id, billing_reservation_id, correlation_id, causation_id, operation_id, occurred_at,
	               applied_at, projection_effect
	          FROM operations.projected_events WHERE projection_name = @name LIMIT 1`)
	exec(`INSERT INTO operations.projection_aggregates (projection_name, projection_version, aggregate_type, aggregate_id, applied_revision, last_event_id)
	      VALUES (@name, 1, 'run', 'no-such-run', 2, gen_random_uuid())`)
	exec(`UPDATE operations.operation_summaries
	         SET reservation_state = 'source_delayed', reservation_event_id = NULL, reservation_occurred_at = NULL,
	             reservation_economic_identity = NULL, reserved_amount = NULL, finalization_event_id = NULL,
	             finalization_occurred_at = NULL, billing_finalization_decision = NULL, settled_amount = NULL, released_amount = NULL
	       WHERE projection_name = @name AND billing_reservation_id IN (
	             SELECT billing_reservation_id FROM operations.operation_summaries
	              WHERE projection_name = @name AND reservation_state <> 'source_delayed' LIMIT 1)`)
	same("damaged owner rows")
	for _, counter := range []string{
		"open_deliveries", "quarantined_deliveries", "missing_receipts", "unresolved_gaps_count", "unsupported_events_count",
		"pending_unlinked_reservations", "receipts_without_mutation", "mutations_without_receipt",
		"receipts_without_source", "aggregate_revision_mismatch", "missed_links",
	} {
		require.True(t, nonZero[counter], "no state exercised %s", counter)
	}
}
