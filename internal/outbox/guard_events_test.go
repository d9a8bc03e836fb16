package outbox_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/contracts/envelope"
	"github.com/oceanway/core/contracts/route"
	"github.com/oceanway/core/internal/db"
	"github.com/oceanway/core/internal/outbox"
	"github.com/oceanway/core/internal/outbox/schema"
)

// requireRefusal asserts the SQLSTATE and a message fragment unique to the
// clause (one code covers several clauses).
func requireRefusal(t *testing.T, err error, code, fragment string) {
	t.Helper()
	requireCode(t, err, code)
	require.ErrorContains(t, err, fragment)
}

// asRoleTx runs stmts in one transaction as role ("" for the connecting
// owner); the error is a statement's or COMMIT's.
func asRoleTx(ctx context.Context, t *testing.T, b *testBundle, role string, stmts ...string) error {
	return db.WithTx(ctx, b.pool, func(ctx context.Context, tx pgx.Tx) error {
		if role != "" {
			setRole(t, ctx, tx, role)
		}
		for _, s := range stmts {
			if _, err := tx.Exec(ctx, s); err != nil {
				return err
			}
		}
		return nil
	})
}

// rawEventOfPair is rawEvent for another exact pair, its envelope agreeing
// with its columns (so OW018 does not refuse it first).
func rawEventOfPair(eventID, eventType, schemaVersion string) string {
	env := strings.NewReplacer(`"eventSchemaVersion":"2.0"`, `"eventSchemaVersion":"`+schemaVersion+`"`,
		`"eventType":"run.created@2.0"`, `"eventType":"`+eventType+`"`).Replace(rawEnvelope(eventID))
	return rawEventWith(eventID, 1, map[string]string{
		"event_type": "'" + eventType + "'", "schema_version": "'" + schemaVersion + "'", "event_envelope": "'" + env + "'",
	})
}

// OB-STORE-2, OB-PUB-1: an event is born unpublished, clause
// OW012.event-inserted-published. As the table owner: no runtime role may
// insert published_at at all (the producer's column grant omits it, 42501).
func TestGuard_OBSTORE2_EventBornUnpublished(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	b := setup(t)
	id := uuid.NewString()
	stmt := strings.Replace(strings.Replace(rawEvent(id, 1), "(event_id,", "(published_at, event_id,", 1), "SELECT ", "SELECT now(), ", 1)
	requireRefusal(t, asRoleTx(ctx, t, b, "", stmt, rawDelivery(id, "core_operations", route.OperationsProjector, route.OperationsProjectionAppliedReceipt, "1")),
		outbox.CodeNotInitialState, "cannot be inserted as published")
}

// OB-PUB-1: published_at is set once, clause OW007.published-at-set-once:
// once the event is published (every mandatory delivery acknowledged), no
// later UPDATE changes or resets it. As the table owner: the runtime roles
// have no UPDATE of published_at (column grants, TestEventImmutability).
func TestGuard_OBPUB1_PublishedAtSetOnce(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	b := setup(t)
	ev := appendTx(t, b.pool, freshSample(envelope.RunCreatedV2)).Events[0]
	res, err := ackTx(t, b, ev, route.CoreOperations, nil)
	require.NoError(t, err)
	require.Equal(t, outbox.PublicationComplete, res)
	where := fmt.Sprintf(" WHERE event_id = '%s'", ev.EventID)
	for _, set := range []string{"published_at = published_at + interval '1 second'", "published_at = NULL"} {
		requireRefusal(t, asRoleTx(ctx, t, b, "", "UPDATE outbox.outbox_events SET "+set+where),
			outbox.CodePublishedAtGuard, "cannot be reset, changed or overwritten")
	}
}

// DS-9, OB-APPEND-2: an event whose pair the active definition does not
// list cannot commit, clause OW006.pair-not-applicable (the commit-time
// proof; AppendTx refuses it earlier in Go). As oceanway_producer.
func TestGuard_DS9_PairNotApplicableRefusedAtCommit(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	b := setup(t)
	err := asRoleTx(ctx, t, b, schema.RoleProducer, rawEventOfPair(uuid.NewString(), "unknown.pair@1", "1"))
	requireRefusal(t, err, outbox.CodeDefinitionNotActive, "is not applicable in definition")
}

// OB-STORE-5: a quarantine row starts unacknowledged and without a case,
// clause OW012.quarantine-not-initial. As oceanway_dispatcher.
func TestGuard_OBSTORE5_QuarantineBornOpen(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	b := setup(t)
	ev := appendTx(t, b.pool, freshSample(envelope.RunCreatedV2)).Events[0]
	quarantine := func(extra string) error {
		return db.WithTx(ctx, b.pool, func(ctx context.Context, tx pgx.Tx) error {
			setRole(t, ctx, tx, schema.RoleDispatcher)
			a := claim(t, ctx, tx, ev.EventID, route.CoreOperations)
			if _, err := tx.Exec(ctx, `INSERT INTO outbox.outbox_delivery_attempt_finishes (attempt_id, outcome, retry_disposition, normalized_error_code)
				VALUES ($1, 'non_retryable', 'quarantined', 'unknown_schema')`, a.ID); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, `UPDATE outbox.outbox_deliveries SET status = 'quarantined', last_error_code = 'unknown_schema'
				WHERE event_id = $1 AND destination = 'core_operations'`, ev.EventID); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, `INSERT INTO outbox.outbox_quarantine (destination, event_id, reason,
				event_envelope_digest_algorithm_version, event_envelope_sha256, attempt_id`+extra+`)
				VALUES ('core_operations', $1, 'unknown_schema', 'jcs-sha256-v1', $2, $3`+strings.Repeat(", 'case-1'", strings.Count(extra, ","))+`)`,
				ev.EventID, ev.EnvelopeDigest.Value, a.ID)
			return err
		})
	}
	requireRefusal(t, quarantine(", case_id"), outbox.CodeNotInitialState, "starts unacknowledged and without a case")
	require.NoError(t, quarantine(""), "the open quarantine commits")
}

// Every append-only outbox table refuses TRUNCATE (a statement trigger
// executing outbox.reject_delete, OW002), one clause per table:
// OW002.deliveries-no-truncate, OW002.attempt-starts-no-truncate,
// OW002.attempt-finishes-no-truncate, OW002.quarantine-no-truncate,
// OW002.definitions-no-truncate, OW002.bindings-no-truncate,
// OW002.bootstrap-no-truncate, OW002.adoptions-no-truncate,
// OW002.legacy-quarantine-no-truncate, OW002.retention-runs-no-truncate,
// OW002.archived-events-no-truncate, OW002.archived-deliveries-no-truncate,
// OW002.drills-no-truncate. CASCADE takes the referencing tables along,
// whose own triggers refuse too: the message names the table whose
// trigger refused. As the table owner: no runtime role has TRUNCATE (42501).
func TestGuard_OW002_TruncateRefusedOnEveryAppendOnlyTable(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	b := setup(t)
	appendTx(t, b.pool, freshSample(envelope.RunCreatedV2))
	for _, table := range []string{
		"outbox_deliveries", "outbox_delivery_attempt_starts", "outbox_delivery_attempt_finishes", "outbox_quarantine",
		"delivery_set_versions", "destination_bindings",
		"bootstrap_definitions", "legacy_adoptions", "legacy_quarantine",
		"retention_runs", "archived_events", "archived_deliveries", "retention_recovery_drills",
	} {
		err := asRoleTx(ctx, t, b, "", "TRUNCATE outbox."+table+" CASCADE")
		requireRefusal(t, err, outbox.CodeAppendOnly, "TRUNCATE on outbox."+table+" is forbidden")
	}
}

// DS-8: a projection version's identity is immutable and the row is never
// deleted: clauses OW001.projection-version-immutable and
// OW002.projection-versions-no-delete. As the table owner: only the
// definer may update the ready mark, and no role deletes (42501).
func TestGuard_DS8_ProjectionVersionsImmutable(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	b := setup(t)
	requireRefusal(t, asRoleTx(ctx, t, b, "", "UPDATE outbox.projection_versions SET registered_at = registered_at - interval '1 day'"),
		outbox.CodeImmutable, "is immutable once ready")
	requireRefusal(t, asRoleTx(ctx, t, b, "", "DELETE FROM outbox.projection_versions"),
		outbox.CodeAppendOnly, "DELETE on outbox.projection_versions is forbidden")
}
