package outbox_test

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgerrcode"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/contracts/envelope"
	"github.com/oceanway/core/contracts/route"
	"github.com/oceanway/core/internal/db"
	"github.com/oceanway/core/internal/outbox"
	"github.com/oceanway/core/internal/outbox/schema"
	"github.com/oceanway/core/internal/release"
)

// OB-STORE-1: the seven tables with (at least) the columns the outbox
// document lists, names exactly as written there.
func TestSchemaHasSpecTablesAndColumns(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	b := setup(t)
	want := map[string]string{
		"outbox_events": `event_id event_type schema_version delivery_set_version delivery_set_definition_schema_version
			delivery_set_definition_digest_algorithm_version delivery_set_definition_digest aggregate_id aggregate_revision
			tenant_kind tenant_id workspace_id project_id correlation_id causation_id operation_id
			event_payload event_envelope event_envelope_digest_algorithm_version event_envelope_sha256 occurred_at created_at published_at`,
		"delivery_set_versions": `delivery_set_version delivery_set_definition_schema_version
			delivery_set_definition_digest_algorithm_version delivery_set_definition_digest status activated_at source_release`,
		"delivery_set_members": `delivery_set_version event_type schema_version destination consumer_name mandatory
			expected_receipt_type expected_receipt_schema_version projection_target_state projection_name projection_version`,
		"outbox_deliveries": `event_id delivery_set_version destination consumer_name expected_receipt_type expected_receipt_schema_version
			required_projection_name required_projection_version mandatory status available_at created_at lease_owner lease_token
			lease_expires_at current_attempt_id attempt_count last_attempt_at delivered_at last_error_code last_error_ref
			ack_consumer_name ack_receipt_type ack_receipt_key ack_receipt_schema_version ack_receipt_digest_algorithm_version
			ack_receipt_digest ack_event_envelope_digest_algorithm_version ack_event_envelope_sha256`,
		"outbox_delivery_attempt_starts":   `attempt_id destination event_id lease_token started_at`,
		"outbox_delivery_attempt_finishes": `attempt_id finished_at outcome retry_disposition normalized_error_code sanitized_error_ref`,
		"outbox_quarantine": `destination event_id reason event_envelope_digest_algorithm_version event_envelope_sha256
			quarantined_at acknowledged_at case_id`,
	}
	for table, cols := range want {
		rows, err := b.pool.Query(ctx, "SELECT column_name FROM information_schema.columns WHERE table_schema = 'outbox' AND table_name = $1", table)
		require.NoError(t, err)
		have, err := pgx.CollectRows(rows, pgx.RowTo[string])
		require.NoError(t, err)
		require.NotEmpty(t, have, table)
		for _, c := range strings.Fields(cols) {
			require.Contains(t, have, c, "%s.%s", table, c)
		}
	}
	// The claim query is an index scan over eligible rows only.
	var defs []string
	rows, err := b.pool.Query(ctx, "SELECT indexdef FROM pg_indexes WHERE schemaname = 'outbox' AND tablename = 'outbox_deliveries'")
	require.NoError(t, err)
	defs, err = pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	sort.Strings(defs)
	joined := strings.Join(defs, "\n")
	require.Contains(t, joined, "(destination, available_at, created_at, event_id) WHERE (status = 'pending'::text)")
	require.Contains(t, joined, "(lease_expires_at) WHERE ((status = 'leased'::text) AND (lease_owner IS NOT NULL))")
}

// rawEvent inserts an event row by hand, skipping AppendTx, frozen to the
// given definition version (whose quadruple is looked up).
func rawEvent(eventID string, dsv int64) string { return rawEventWith(eventID, dsv, nil) }

// rawEventWith is rawEvent with some columns set to other SQL expressions.
func rawEventWith(eventID string, dsv int64, set map[string]string) string {
	cols := [][2]string{
		{"event_id", "'" + eventID + "'"}, {"event_type", "'run.created@2.0'"}, {"schema_version", "'2.0'"},
		{"delivery_set_version", "v.delivery_set_version"},
		{"delivery_set_definition_schema_version", "v.delivery_set_definition_schema_version"},
		{"delivery_set_definition_digest_algorithm_version", "v.delivery_set_definition_digest_algorithm_version"},
		{"delivery_set_definition_digest", "v.delivery_set_definition_digest"},
		{"aggregate_type", "'run'"}, {"aggregate_id", "'r'"}, {"aggregate_revision", "1"},
		{"tenant_kind", "'organization'"}, {"tenant_id", "'t'"}, {"workspace_id", "'w'"}, {"project_id", "NULL"},
		{"correlation_id", "'c'"}, {"causation_id", "NULL"}, {"operation_id", "NULL"},
		{"event_envelope", "'" + rawEnvelope(eventID) + "'"}, {"event_payload", "'{}'"},
		{"event_envelope_digest_algorithm_version", "'jcs-sha256-v1'"}, {"event_envelope_sha256", "repeat('a', 64)"},
		{"occurred_at", "'2026-01-01T00:00:00Z'"},
	}
	names, values := make([]string, len(cols)), make([]string, len(cols))
	for i, c := range cols {
		names[i], values[i] = c[0], c[1]
		if v, ok := set[c[0]]; ok {
			values[i] = v
		}
	}
	return fmt.Sprintf(`INSERT INTO outbox.outbox_events (%s)
		SELECT %s
		FROM outbox.delivery_set_versions v WHERE v.delivery_set_version = %d`,
		strings.Join(names, ", "), strings.Join(values, ", "), dsv)
}

// rawEnvelope is an envelope that agrees with rawEvent's columns (OW018).
func rawEnvelope(eventID string) string {
	return fmt.Sprintf(`{"aggregateId":"r","aggregateRevision":1,"aggregateType":"run","correlationId":"c","eventId":"%s",`+
		`"eventSchemaVersion":"2.0","eventType":"run.created@2.0","occurredAt":"2026-01-01T00:00:00Z","payload":{},`+
		`"tenantId":"t","tenantKind":"organization","workspaceId":"w"}`, eventID)
}

func rawDelivery(eventID, dest, consumer, receipt string, projectionVersion string) string {
	proj := "NULL, NULL"
	if projectionVersion != "" {
		proj = fmt.Sprintf("'operations', %s", projectionVersion)
	}
	return fmt.Sprintf(`INSERT INTO outbox.outbox_deliveries (event_id, delivery_set_version, destination, consumer_name,
		expected_receipt_type, expected_receipt_schema_version, required_projection_name, required_projection_version, mandatory)
		VALUES ('%s', 1, '%s', '%s', '%s', '1', %s, true)`, eventID, dest, consumer, receipt, proj)
}

// OB-APPEND-2: the deferred constraint re-proves every event's delivery set
// at COMMIT — a hand-written INSERT that skips AppendTx cannot commit a
// missing, extra or mismatching delivery row.
//
// Clauses: OW004.delivery-set-mismatch, OW005.delivery-outside-append,
// OW006.definition-not-active, OW012.delivery-not-initial.
func TestDeferredDeliverySetProof(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	b := setup(t)
	ops := func(id, version string) string {
		return rawDelivery(id, "core_operations", route.OperationsProjector, route.OperationsProjectionAppliedReceipt, version)
	}

	id := uuid.NewString()
	require.NoError(t, exec(ctx, b.pool, rawEvent(id, 1), ops(id, "1")), "the exact set commits")

	id = uuid.NewString()
	err := exec(ctx, b.pool, rawEvent(id, 1))
	requireCode(t, err, outbox.CodeDeliverySetMismatch) // missing delivery, fails at COMMIT
	require.ErrorIs(t, outbox.TranslateError(err), outbox.ErrDeliverySetMismatch)

	id = uuid.NewString()
	err = exec(ctx, b.pool, rawEvent(id, 1), ops(id, "1"),
		rawDelivery(id, "metering_input_processor", route.MeteringInputProcessorConsumer, route.MeteringInputProcessorConsumerReceipt, ""))
	requireCode(t, err, outbox.CodeDeliverySetMismatch) // extra delivery

	id = uuid.NewString()
	err = exec(ctx, b.pool, rawEvent(id, 1), ops(id, "2"))
	requireCode(t, err, outbox.CodeDeliverySetMismatch) // wrong frozen projection target

	// A delivery added later, outside the event's append transaction.
	id = uuid.NewString()
	require.NoError(t, exec(ctx, b.pool, rawEvent(id, 1), ops(id, "1")))
	err = exec(ctx, b.pool, rawDelivery(id, "metering_input_processor", route.MeteringInputProcessorConsumer, route.MeteringInputProcessorConsumerReceipt, ""))
	requireCode(t, err, outbox.CodeDeliveryOutsideAppend)

	// An event frozen to a registered but inactive definition.
	d2 := withoutPair(t, 2, envelope.GatewayAvailabilityCurrentChangedV1)
	_, err = outbox.Register(ctx, b.pool, d2, outbox.RegisterOpts{})
	require.NoError(t, err)
	id = uuid.NewString()
	err = exec(ctx, b.pool, rawEvent(id, 2), strings.Replace(ops(id, "1"), "VALUES ('"+id+"', 1,", "VALUES ('"+id+"', 2,", 1))
	requireCode(t, err, outbox.CodeDefinitionNotActive)

	// A delivery born in a non-initial state.
	id = uuid.NewString()
	err = exec(ctx, b.pool, rawEvent(id, 1), strings.Replace(
		strings.Replace(ops(id, "1"), "mandatory)", "mandatory, status)", 1), "true)", "true, 'acknowledged')", 1))
	requireCode(t, err, outbox.CodeNotInitialState)

	var n int
	require.NoError(t, b.pool.QueryRow(ctx, "SELECT count(*) FROM outbox.outbox_events").Scan(&n))
	require.Equal(t, 2, n, "only the two exact appends committed")
}

// OB-STORE-2: envelope, payload, digests, definition quadruple and created
// time are immutable (trigger), events are never deleted (OW002.events-no-delete,
// OW002.events-no-truncate, OW002.delete-outside-retention-run: the delete
// guard that replaced the append-only trigger in 00093); and the roles have
// no UPDATE on events at all (column grants). Clause OW001.event-immutable.
func TestEventImmutability(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	b := setup(t)
	id := appendTx(t, b.pool, freshSample(envelope.RunCreatedV2)).Events[0].EventID
	where := fmt.Sprintf(" WHERE event_id = '%s'", id)
	for _, set := range []string{
		`event_payload = '{"changed":true}'`,
		`event_envelope = '{}'`,
		`event_envelope_sha256 = repeat('b', 64)`,
		`event_envelope_digest_algorithm_version = 'jcs-sha256-v1' , event_type = 'wallet.reserved@2.0'`,
		`delivery_set_definition_digest = repeat('c', 64)`,
		`delivery_set_version = 1, delivery_set_definition_schema_version = '2'`,
		`created_at = created_at - interval '1 day'`,
		`occurred_at = now()`,
	} {
		err := exec(ctx, b.pool, "UPDATE outbox.outbox_events SET "+set+where)
		require.Error(t, err, set)
		require.Contains(t, []string{outbox.CodeImmutable, pgerrcode.ForeignKeyViolation}, db.SQLState(err), set)
	}
	requireCode(t, exec(ctx, b.pool, `UPDATE outbox.outbox_events SET event_payload = '{"x":1}'`+where), outbox.CodeImmutable)
	err := exec(ctx, b.pool, "DELETE FROM outbox.outbox_events"+where)
	requireCode(t, err, outbox.CodeAppendOnly)
	require.ErrorContains(t, err, "DELETE on outbox.outbox_events is forbidden outside a recorded retention run")
	// As the table owner: the runtime roles have no TRUNCATE privilege
	// (42501 before any trigger). CASCADE reaches the deliveries, whose own
	// truncate trigger refuses too: the message names the table whose
	// trigger refused.
	err = exec(ctx, b.pool, "TRUNCATE outbox.outbox_events CASCADE")
	requireCode(t, err, outbox.CodeAppendOnly)
	require.ErrorContains(t, err, "TRUNCATE on outbox.outbox_events is forbidden")

	for _, role := range []string{schema.RoleProducer, schema.RoleDispatcher} {
		for _, set := range []string{`event_payload = '{}'`, "published_at = now()", "created_at = now()"} {
			err := db.WithTx(ctx, b.pool, func(ctx context.Context, tx pgx.Tx) error {
				setRole(t, ctx, tx, role)
				_, err := tx.Exec(ctx, "UPDATE outbox.outbox_events SET "+set+where)
				return err
			})
			requireCode(t, err, pgerrcode.InsufficientPrivilege)
		}
	}
}

// OB-STORE-3: the delivery status is the closed set; acknowledged and
// quarantined are terminal; frozen delivery columns never change.
// Clauses: OW001.delivery-frozen-columns, OW008.delivery-terminal (as the
// table owner: the dispatcher role has no UPDATE grant on the frozen
// columns).
func TestDeliveryStatusIsClosedAndTerminal(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	b := setup(t)
	// A pair with two mandatory members: acknowledging one of them by hand
	// (without outbox.record_publication) may commit, because the event is
	// not complete yet (OB-PUB-1's commit-time proof, OW015, does not apply).
	id := appendTx(t, b.pool, freshSample(envelope.BillingFinalizationResolutionAppliedV1)).Events[0].EventID
	where := fmt.Sprintf(" WHERE event_id = '%s'", id)
	for _, status := range []string{"retryable", "delivered", "dead_letter", "PENDING", ""} {
		err := exec(ctx, b.pool, "UPDATE outbox.outbox_deliveries SET status = '"+status+"'"+where)
		requireCode(t, err, pgerrcode.CheckViolation)
		require.Equal(t, "outbox_deliveries_status", db.Constraint(err))
	}
	requireCode(t, exec(ctx, b.pool, "UPDATE outbox.outbox_deliveries SET expected_receipt_type = 'X'"+where), outbox.CodeImmutable)
	requireCode(t, exec(ctx, b.pool, "UPDATE outbox.outbox_deliveries SET required_projection_version = 2"+where), outbox.CodeImmutable)
	requireCode(t, exec(ctx, b.pool, "DELETE FROM outbox.outbox_deliveries"+where), outbox.CodeAppendOnly)
	// leased needs the whole lease
	requireCode(t, exec(ctx, b.pool, "UPDATE outbox.outbox_deliveries SET status = 'leased'"+where), pgerrcode.CheckViolation)

	// acknowledged needs the full ack and is then terminal
	err := db.WithTx(ctx, b.pool, func(ctx context.Context, tx pgx.Tx) error {
		_, err := tx.Exec(ctx, "UPDATE outbox.outbox_deliveries SET status = 'acknowledged'"+where)
		return err
	})
	requireCode(t, err, pgerrcode.CheckViolation)
	var sha string
	require.NoError(t, b.pool.QueryRow(ctx, "SELECT event_envelope_sha256 FROM outbox.outbox_events"+where).Scan(&sha))
	err = db.WithTx(ctx, b.pool, func(ctx context.Context, tx pgx.Tx) error {
		a := claim(t, ctx, tx, id, route.CoreOperations)
		ack{EventID: id, Destination: route.CoreOperations, Attempt: a, ReceiptRef: "r1", ReceiptDigest: strings.Repeat("d", 64), EnvelopeSHA: sha}.write(t, ctx, tx)
		return nil
	})
	require.NoError(t, err)
	acked := where + " AND destination = 'core_operations'"
	for _, set := range []string{"status = 'pending'", "available_at = now()", "ack_receipt_key = 'other'", "lease_owner = 'x'"} {
		requireCode(t, exec(ctx, b.pool, "UPDATE outbox.outbox_deliveries SET "+set+acked), outbox.CodeTerminalDelivery)
	}
}

// OB-STORE-4: an attempt is one immutable start and at most one finish.
// Clauses: OW003.attempt-starts-no-update, OW003.attempt-finishes-no-update.
func TestAttemptStartAndAtMostOneFinish(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	b := setup(t)
	id := appendTx(t, b.pool, freshSample(envelope.RunCreatedV2)).Events[0].EventID
	var a attempt
	require.NoError(t, db.WithTx(ctx, b.pool, func(ctx context.Context, tx pgx.Tx) error {
		setRole(t, ctx, tx, schema.RoleDispatcher)
		a = claim(t, ctx, tx, id, route.CoreOperations)
		return nil
	}))
	finish := func(outcome, disposition string) string {
		return fmt.Sprintf(`INSERT INTO outbox.outbox_delivery_attempt_finishes (attempt_id, outcome, retry_disposition)
			VALUES ('%s', '%s', '%s')`, a.ID, outcome, disposition)
	}
	requireCode(t, exec(ctx, b.pool, finish("delivered", "none")), pgerrcode.CheckViolation)
	requireCode(t, exec(ctx, b.pool, finish("acknowledged", "retry_scheduled")), pgerrcode.CheckViolation)
	require.NoError(t, exec(ctx, b.pool, finish("lease_expired_unknown", "reclaimable")))
	err := exec(ctx, b.pool, finish("acknowledged", "none"))
	requireCode(t, err, pgerrcode.UniqueViolation) // a second finish for one start
	require.Equal(t, "outbox_delivery_attempt_finishes_pkey", db.Constraint(err))
	requireCode(t, exec(ctx, b.pool, fmt.Sprintf(`INSERT INTO outbox.outbox_delivery_attempt_finishes (attempt_id, outcome, retry_disposition)
			VALUES ('%s', 'retryable', 'retry_scheduled')`, uuid.NewString())), pgerrcode.ForeignKeyViolation) // finish without start

	requireCode(t, exec(ctx, b.pool, "UPDATE outbox.outbox_delivery_attempt_starts SET started_at = now()"), outbox.CodeInsertOnly)
	requireCode(t, exec(ctx, b.pool, "UPDATE outbox.outbox_delivery_attempt_finishes SET outcome = 'acknowledged', retry_disposition = 'none'"), outbox.CodeInsertOnly)
	requireCode(t, exec(ctx, b.pool, "DELETE FROM outbox.outbox_delivery_attempt_finishes"), outbox.CodeAppendOnly)
	requireCode(t, exec(ctx, b.pool, "DELETE FROM outbox.outbox_delivery_attempt_starts"), outbox.CodeAppendOnly)
	// fencing tokens never repeat
	requireCode(t, exec(ctx, b.pool, fmt.Sprintf(`INSERT INTO outbox.outbox_delivery_attempt_starts (attempt_id, destination, event_id, lease_token)
		VALUES ('%s', 'core_operations', '%s', '%s')`, uuid.NewString(), id, a.Token)), pgerrcode.UniqueViolation)
}

// OB-STORE-5: quarantine is an explicit row and a terminal state; neither
// exists without the other, and the row is never deleted.
//
// Clauses: OW014.quarantine-state-disagrees, OW014.quarantine-digest,
// OW002.quarantine-no-delete, OW003.quarantine-set-once.
func TestQuarantineIsExplicit(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	b := setup(t)
	res := appendTx(t, b.pool, freshSample(envelope.RunCreatedV2), freshSample(envelope.WalletReservedV2))
	one, two := res.Events[0], res.Events[1]
	quarantine := func(tx pgx.Tx, e outbox.AppendedEvent, sha string, withRow bool) error {
		a := claim(t, ctx, tx, e.EventID, route.CoreOperations)
		if _, err := tx.Exec(ctx, `INSERT INTO outbox.outbox_delivery_attempt_finishes (attempt_id, outcome, retry_disposition, normalized_error_code)
			VALUES ($1, 'non_retryable', 'quarantined', 'unknown_schema')`, a.ID); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `UPDATE outbox.outbox_deliveries SET status = 'quarantined', last_error_code = 'unknown_schema'
			WHERE event_id = $1 AND destination = 'core_operations'`, e.EventID); err != nil {
			return err
		}
		if !withRow {
			return nil
		}
		_, err := tx.Exec(ctx, `INSERT INTO outbox.outbox_quarantine (destination, event_id, reason,
			event_envelope_digest_algorithm_version, event_envelope_sha256, attempt_id)
			VALUES ('core_operations', $1, 'unknown_schema', 'jcs-sha256-v1', $2, $3)`, e.EventID, sha, a.ID)
		return err
	}
	err := db.WithTx(ctx, b.pool, func(ctx context.Context, tx pgx.Tx) error {
		setRole(t, ctx, tx, schema.RoleDispatcher)
		return quarantine(tx, one, one.EnvelopeDigest.Value, false)
	})
	requireCode(t, err, outbox.CodeQuarantineInconsistent) // state without row, at COMMIT
	err = db.WithTx(ctx, b.pool, func(ctx context.Context, tx pgx.Tx) error {
		return quarantine(tx, one, strings.Repeat("0", 64), true)
	})
	requireCode(t, err, outbox.CodeQuarantineInconsistent) // not the event's digest
	require.NoError(t, db.WithTx(ctx, b.pool, func(ctx context.Context, tx pgx.Tx) error {
		setRole(t, ctx, tx, schema.RoleDispatcher)
		return quarantine(tx, one, one.EnvelopeDigest.Value, true)
	}))
	requireCode(t, exec(ctx, b.pool, fmt.Sprintf(`INSERT INTO outbox.outbox_quarantine (destination, event_id, reason,
			event_envelope_digest_algorithm_version, event_envelope_sha256)
			VALUES ('core_operations', '%s', 'x', 'jcs-sha256-v1', '%s')`, two.EventID, two.EnvelopeDigest.Value)),
		outbox.CodeQuarantineInconsistent) // row without state

	requireCode(t, exec(ctx, b.pool, "UPDATE outbox.outbox_deliveries SET status = 'pending' WHERE status = 'quarantined'"), outbox.CodeTerminalDelivery)
	requireCode(t, exec(ctx, b.pool, "DELETE FROM outbox.outbox_quarantine"), outbox.CodeAppendOnly)
	requireCode(t, exec(ctx, b.pool, "UPDATE outbox.outbox_quarantine SET reason = 'other'"), outbox.CodeInsertOnly)
	require.NoError(t, exec(ctx, b.pool, "UPDATE outbox.outbox_quarantine SET case_id = 'case-1', acknowledged_at = now()"))
	requireCode(t, exec(ctx, b.pool, "UPDATE outbox.outbox_quarantine SET case_id = 'case-2'"), outbox.CodeInsertOnly)
	var published *string
	require.NoError(t, b.pool.QueryRow(ctx, "SELECT published_at::text FROM outbox.outbox_events WHERE event_id = $1", one.EventID).Scan(&published))
	require.Nil(t, published, "a quarantined event is not published")
}

// OB-STORE-6: the dispatcher role only touches deliveries, attempts and
// quarantine and executes the controlled function; the producer role only
// appends.
func TestRoleGrants(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	b := setup(t)
	id := appendTx(t, b.pool, freshSample(envelope.RunCreatedV2)).Events[0].EventID
	as := func(role string, stmt string, args ...any) error {
		return db.WithTx(ctx, b.pool, func(ctx context.Context, tx pgx.Tx) error {
			setRole(t, ctx, tx, role)
			_, err := tx.Exec(ctx, stmt, args...)
			return err
		})
	}
	denied := []struct{ role, stmt string }{
		{schema.RoleDispatcher, "UPDATE outbox.outbox_events SET published_at = now()"},
		{schema.RoleDispatcher, rawEvent(uuid.NewString(), 1)},
		{schema.RoleDispatcher, "DELETE FROM outbox.outbox_deliveries"},
		{schema.RoleDispatcher, "UPDATE outbox.outbox_deliveries SET expected_receipt_type = 'x'"},
		{schema.RoleDispatcher, "UPDATE outbox.outbox_deliveries SET consumer_name = 'x'"},
		{schema.RoleDispatcher, "INSERT INTO outbox.delivery_set_versions (delivery_set_version) VALUES (9)"},
		{schema.RoleDispatcher, "UPDATE outbox.delivery_set_versions SET status = 'retired'"},
		{schema.RoleProducer, "UPDATE outbox.outbox_deliveries SET status = 'leased'"},
		{schema.RoleProducer, "UPDATE outbox.outbox_events SET published_at = now()"},
		{schema.RoleProducer, "SELECT outbox.record_publication(NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL)"},
		{schema.RoleProducer, "INSERT INTO outbox.outbox_delivery_attempt_starts (attempt_id, destination, event_id, lease_token) VALUES (gen_random_uuid(), 'core_operations', gen_random_uuid(), gen_random_uuid())"},
		{schema.RoleProducer, "INSERT INTO outbox.outbox_quarantine (destination, event_id, reason, event_envelope_digest_algorithm_version, event_envelope_sha256) VALUES ('a', gen_random_uuid(), 'r', 'a', 'b')"},
		{schema.RoleProducer, "UPDATE outbox.delivery_set_versions SET status = 'retired'"},
		{schema.RoleProducer, "SELECT * FROM outbox.outbox_deliveries"},
	}
	for _, d := range denied {
		requireCode(t, as(d.role, d.stmt), pgerrcode.InsufficientPrivilege)
	}
	// What the dispatcher may do: a claim (delivery state + attempt start).
	require.NoError(t, db.WithTx(ctx, b.pool, func(ctx context.Context, tx pgx.Tx) error {
		setRole(t, ctx, tx, schema.RoleDispatcher)
		claim(t, ctx, tx, id, route.CoreOperations)
		var n int
		return tx.QueryRow(ctx, "SELECT count(*) FROM outbox.outbox_events e JOIN outbox.delivery_set_members m USING (delivery_set_version)").Scan(&n)
	}))
}

// Append wakes dispatchers: one NOTIFY on channel outbox_deliveries per
// destination per transaction, delivered at commit.
func TestAppendNotifiesDestinations(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	b := setup(t)
	conn, err := b.pool.Acquire(ctx)
	require.NoError(t, err)
	defer conn.Release()
	_, err = conn.Exec(ctx, "LISTEN outbox_deliveries")
	require.NoError(t, err)

	appendTx(t, b.pool, freshSample(envelope.RunCreatedV2), freshSample(envelope.WalletReservedV2), freshSample(envelope.BillingFinalizationResolutionAppliedV1))
	got := map[string]int{}
	for i := 0; i < 2; i++ {
		n, err := conn.Conn().WaitForNotification(ctx)
		require.NoError(t, err)
		require.Equal(t, "outbox_deliveries", n.Channel)
		got[n.Payload]++
	}
	require.Equal(t, map[string]int{"core_operations": 1, "billing_finalization_coordinator": 1}, got)
	// Nothing else is pending: a rolled-back append notifies nobody.
	_ = db.WithTx(ctx, b.pool, func(ctx context.Context, tx pgx.Tx) error {
		_, err := release.AppendTx(ctx, tx, freshSample(envelope.MeteringSettlementInputCurrentChangedV1))
		require.NoError(t, err)
		return fmt.Errorf("roll back")
	})
	appendTx(t, b.pool, freshSample(envelope.ExecutionAttemptEligibilityFinalizedV1))
	n, err := conn.Conn().WaitForNotification(ctx)
	require.NoError(t, err)
	require.Equal(t, "metering_input_processor", n.Payload)
}

// OB-STORE-2, exhaustively: changing any column of outbox_events but
// published_at is rejected by the immutability trigger (OW001). The column
// list comes from the catalog, so a column added later without joining the
// trigger's comparison fails here.
func TestEventImmutabilityEveryColumn(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	b := setup(t)
	id := appendTx(t, b.pool, freshSample(envelope.RunCreatedV2)).Events[0].EventID
	rows, err := b.pool.Query(ctx, `SELECT column_name, data_type FROM information_schema.columns
		WHERE table_schema = 'outbox' AND table_name = 'outbox_events' AND column_name <> 'published_at'`)
	require.NoError(t, err)
	type column struct {
		Name string `db:"column_name"`
		Kind string `db:"data_type"`
	}
	cols, err := pgx.CollectRows(rows, pgx.RowToStructByName[column])
	require.NoError(t, err)
	require.Greater(t, len(cols), 20)
	for _, c := range cols {
		col := pgx.Identifier{c.Name}.Sanitize()
		var set string
		switch c.Kind {
		case "text":
			set = col + " = COALESCE(" + col + ", '') || 'x'"
		case "uuid":
			set = col + " = gen_random_uuid()"
		case "bigint", "integer":
			set = col + " = " + col + " + 1"
		case "timestamp with time zone":
			set = col + " = " + col + " + interval '1 second'"
		case "jsonb":
			set = col + ` = ` + col + ` || '{"changed": true}'`
		case "xid8":
			set = col + " = '1'::xid8"
		default:
			t.Fatalf("column %s of type %s: add a change for this type", c.Name, c.Kind)
		}
		err := exec(ctx, b.pool, fmt.Sprintf("UPDATE outbox.outbox_events SET %s WHERE event_id = '%s'", set, id))
		requireCode(t, err, outbox.CodeImmutable)
	}
}
