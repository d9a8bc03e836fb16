package outbox_test

import (
	"fmt"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/internal/outbox"
	"github.com/oceanway/core/internal/outbox/schema"
)

// codeEventArchived is retention.CodeEventArchived (OWR03); retention
// imports the outbox, so the outbox tests name it here.
const codeEventArchived = "OWR03"

// RET-1: the retention record is insert-only: clauses
// OW003.retention-runs-no-update, OW002.retention-runs-no-delete,
// OW003.archived-events-no-update, OW002.archived-events-no-delete,
// OW003.archived-deliveries-no-update, OW002.archived-deliveries-no-delete,
// OW003.drills-no-update, OW002.drills-no-delete; and an archived event id
// is never appended again, clause OWR03.event-id-archived (as
// oceanway_producer). The rows are written by hand as the owner, and
// refused as the owner: oceanway_retention only reads them and its definer
// only inserts (42501 before any trigger).
func TestGuard_RET1_RetentionRecordInsertOnly(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	b := setup(t)
	run, archived := uuid.NewString(), uuid.NewString()
	require.NoError(t, asRoleTx(ctx, t, b, "",
		fmt.Sprintf(`INSERT INTO outbox.retention_runs (run_id, manifest_digest_algorithm_version, manifest_sha256, cutoff,
			events, deliveries, attempt_starts, attempt_finishes, verified_at)
			VALUES ('%s', 'jcs-sha256-v1', repeat('1', 64), now() - interval '1 hour', 1, 1, 0, 0, now() - interval '1 minute')`, run),
		fmt.Sprintf(`INSERT INTO outbox.archived_events (event_id, run_id, event_type, schema_version,
			event_envelope_digest_algorithm_version, event_envelope_sha256, delivery_set_version,
			delivery_set_definition_schema_version, delivery_set_definition_digest_algorithm_version,
			delivery_set_definition_digest, created_at, published_at)
			VALUES ('%s', '%s', 'run.created@2.0', '2.0', 'jcs-sha256-v1', repeat('a', 64), 1, '1', 'jcs-sha256-v1',
			repeat('b', 64), now() - interval '2 hours', now() - interval '2 hours')`, archived, run),
		fmt.Sprintf(`INSERT INTO outbox.archived_deliveries (event_id, destination, consumer_name, mandatory, status,
			required_projection_name, required_projection_version, ack_receipt_key, ack_receipt_digest)
			VALUES ('%s', 'core_operations', 'c', true, 'acknowledged', 'operations', 1, 'k', repeat('c', 64))`, archived),
		`INSERT INTO outbox.retention_recovery_drills (drill_sha256, drill_digest_algorithm_version, manifest_sha256,
			events_sha256, events, deliveries, attempt_starts, attempt_finishes, scratch_database, runtime_version,
			drilled_at, drill_document)
			SELECT encode(sha256(convert_to(d, 'UTF8')), 'hex'), 'jcs-sha256-v1', repeat('1', 64), repeat('2', 64), 1, 1, 0, 0,
			'scratch', 'test', now(), d FROM (SELECT '{"drill":1}'::text AS d) s`))
	for table, set := range map[string]string{
		"retention_runs":            "verified_at = verified_at",
		"archived_events":           "event_type = event_type",
		"archived_deliveries":       "ack_receipt_key = 'other'",
		"retention_recovery_drills": "runtime_version = 'other'",
	} {
		requireRefusal(t, asRoleTx(ctx, t, b, "", "UPDATE outbox."+table+" SET "+set),
			outbox.CodeInsertOnly, "UPDATE of outbox."+table+" is forbidden")
		requireRefusal(t, asRoleTx(ctx, t, b, "", "DELETE FROM outbox."+table),
			outbox.CodeAppendOnly, "DELETE on outbox."+table+" is forbidden")
	}

	// OWR03.event-id-archived: the archived id, appended again by the producer.
	err := asRoleTx(ctx, t, b, schema.RoleProducer, rawEvent(archived, 1))
	requireRefusal(t, err, codeEventArchived, "was archived by a retention run; its id cannot be appended again")
}
