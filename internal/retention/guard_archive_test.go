package retention_test

import (
	"context"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/internal/boundary"
	"github.com/oceanway/core/internal/db"
	"github.com/oceanway/core/internal/dbtest"
	outboxschema "github.com/oceanway/core/internal/outbox/schema"
	"github.com/oceanway/core/internal/retention"
)

// RET-1, the controlled delete's own refusals (outbox.retention_archive_unproven,
// called by outbox.retention_archive once the recovery drill is found;
// 00102 carries its clause markers), each driven as oceanway_retention,
// the operator's least-privileged role, with a recorded drill of exactly
// the call's arguments so the drill check (OWR04) passes, and told apart
// by its message (two codes, OWR01 and OWR02, cover them all):
//
//   - the call: OWR02.archive-digest-per-event, OWR02.archive-event-twice,
//     OWR01.archive-time-in-future;
//   - an event that is not closed, clause OWR01.event-not-closed, with its
//     reason: OWR01.event-not-hot, OWR01.event-unpublished,
//     OWR01.event-after-cutoff, OWR01.event-quarantined,
//     OWR01.event-open-delivery, OWR01.event-legacy-adoption,
//     OWR02.event-digest-differs;
//   - counts: OWR02.archive-counts-differ;
//   - after each delete, the rows it removed: OWR02.removed-finishes-differ,
//     OWR02.removed-starts-differ, OWR02.removed-deliveries-differ,
//     OWR02.removed-events-differ.
//
// Two reasons cannot arise through the guarded writes (a published event
// has every mandatory delivery acknowledged, OW007.published-before-complete,
// and a quarantine row needs its delivery quarantined,
// OW014.quarantine-state-disagrees; the first release has no optional
// member): the retention function keeps refusing them as its own line of
// defence, and the fixture writes them as the table owner with the guard
// switched off inside its transaction. The delete counts can only differ
// when something skips a delete (a concurrent change, or a trigger): the
// owner adds a trigger that skips every delete of one table.
func TestGuard_RET1_ControlledDeleteClauses(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	f := setupHistory(t, 4, 1)
	rp := dbtest.RolePool(t, f.bundle.DSNs[boundary.Core], outboxschema.RoleRetention)
	ids, shas := closedEvents(t, f.pool)
	require.Len(t, ids, 4)
	var open, openSHA string
	require.NoError(t, f.pool.QueryRow(ctx, `SELECT event_id::text, event_envelope_sha256 FROM outbox.outbox_events
		WHERE published_at IS NULL`).Scan(&open, &openSHA))
	call := func(cutoff string, ids, shas []string, deliveries, starts, finishes int) error {
		manifest := recordDrill(t, rp, ids, shas, deliveries, starts, finishes)
		_, err := rp.Exec(ctx, `SELECT outbox.retention_archive(gen_random_uuid(), $6, `+cutoff+`, now(), $1::uuid[], $2::text[], $3, $4, $5)`,
			ids, shas, deliveries, starts, finishes, manifest)
		return err
	}
	refused := func(err error, code, fragment string) {
		t.Helper()
		require.Error(t, err)
		require.Equal(t, code, db.SQLState(err), "error: %v", err)
		require.ErrorContains(t, err, fragment)
	}
	owner := func(stmts ...string) {
		t.Helper()
		require.NoError(t, db.WithTx(ctx, f.pool, func(ctx context.Context, tx pgx.Tx) error {
			for _, s := range stmts {
				if _, err := tx.Exec(ctx, s); err != nil {
					return err
				}
			}
			return nil
		}))
	}
	one, oneSHA := ids[:1], shas[:1]
	const now = "now()"

	// the call
	refused(call(now, one, []string{}, 1, 1, 1), retention.CodeArchiveMismatch, "needs one archived digest per event")
	refused(call(now, []string{ids[0], ids[0]}, []string{shas[0], shas[0]}, 1, 1, 1), retention.CodeArchiveMismatch, "lists an event twice")
	refused(call("now() + interval '1 hour'", one, oneSHA, 1, 1, 1), retention.CodeNotClosed, "has a cutoff or verification time in the future")

	// events that are not closed (OWR01.event-not-closed), by reason
	refused(call(now, []string{uuid.NewString()}, oneSHA, 0, 0, 0), retention.CodeNotClosed, ": not in the hot table")
	refused(call(now, []string{open}, []string{openSHA}, 1, 0, 0), retention.CodeNotClosed, ": unpublished")
	refused(call("'2000-01-01T00:00:00Z'", one, oneSHA, 1, 1, 1), retention.CodeNotClosed, ": created after the cutoff")
	refused(call(now, one, []string{openSHA}, 1, 1, 1), retention.CodeArchiveMismatch, ": archived digest differs from the stored envelope digest")
	// an open legacy event, delivered since (the adoption record of class open stays)
	owner(`INSERT INTO outbox.legacy_adoptions (legacy_source, legacy_row_id, event_id, class,
		event_envelope_digest_algorithm_version, event_envelope_sha256, delivery_set_version)
		SELECT 'legacy', 1, event_id, 'open', 'jcs-sha256-v1', event_envelope_sha256, delivery_set_version
		  FROM outbox.outbox_events WHERE event_id = '` + ids[1] + `'`)
	refused(call(now, ids[1:2], shas[1:2], 1, 1, 1), retention.CodeNotClosed, ": legacy adoption record")
	// a quarantine row of a published event (its proof switched off by the owner)
	owner(`ALTER TABLE outbox.outbox_quarantine DISABLE TRIGGER outbox_quarantine_proof`,
		`INSERT INTO outbox.outbox_quarantine (destination, event_id, reason, event_envelope_digest_algorithm_version,
			event_envelope_sha256, attempt_id)
			SELECT s.destination, s.event_id, 'fixture', 'jcs-sha256-v1', '`+shas[2]+`', s.attempt_id
			  FROM outbox.outbox_delivery_attempt_starts s WHERE s.event_id = '`+ids[2]+`'`,
		`ALTER TABLE outbox.outbox_quarantine ENABLE TRIGGER outbox_quarantine_proof`)
	refused(call(now, ids[2:3], shas[2:3], 1, 1, 1), retention.CodeNotClosed, ": quarantined")
	// a published event with a pending delivery (the published_at guard switched off by the owner)
	owner(`ALTER TABLE outbox.outbox_events DISABLE TRIGGER outbox_events_immutable`,
		`UPDATE outbox.outbox_events SET published_at = now() WHERE event_id = '`+open+`'`,
		`ALTER TABLE outbox.outbox_events ENABLE TRIGGER outbox_events_immutable`)
	refused(call(now, []string{open}, []string{openSHA}, 1, 0, 0), retention.CodeNotClosed, ": open delivery")

	// counts
	refused(call(now, one, oneSHA, 1, 0, 0), retention.CodeArchiveMismatch, "archive holds 1/0/0 deliveries/starts/finishes")

	// each delete removes what was counted: a trigger of the owner's skips
	// every delete of one table in turn
	owner(`CREATE FUNCTION public.guard_test_skip_delete() RETURNS trigger LANGUAGE plpgsql AS 'BEGIN RETURN NULL; END'`)
	for table, fragment := range map[string]string{
		"outbox_delivery_attempt_finishes": "removed 0 attempt finishes, expected 1",
		"outbox_delivery_attempt_starts":   "removed 0 attempt starts, expected 1",
		"outbox_deliveries":                "removed 0 deliveries, expected 1",
		"outbox_events":                    "removed 0 events, expected 1",
	} {
		owner(`CREATE TRIGGER a_guard_test_skip_delete BEFORE DELETE ON outbox.` + table +
			` FOR EACH ROW EXECUTE FUNCTION public.guard_test_skip_delete()`)
		refused(call(now, ids[3:4], shas[3:4], 1, 1, 1), retention.CodeArchiveMismatch, fragment)
		owner(`DROP TRIGGER a_guard_test_skip_delete ON outbox.` + table)
	}
	require.Equal(t, 5, count(t, f.pool, `SELECT count(*) FROM outbox.outbox_events`), "refused runs removed nothing")
	require.NoError(t, call(now, ids[3:4], shas[3:4], 1, 1, 1), "the closed event leaves")
}
