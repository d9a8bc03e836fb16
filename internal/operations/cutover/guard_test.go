package cutover

import (
	"context"
	"fmt"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/internal/db"
	"github.com/oceanway/core/internal/operations/readmodel"
	operationsschema "github.com/oceanway/core/internal/operations/schema"
	outboxschema "github.com/oceanway/core/internal/outbox/schema"
)

// guardProjection names the shadow builds these tests write by hand (no
// projector serves it: the fence and the proof check read only the rows).
const guardProjection = "guard"

// fencedWrite inserts one unsupported-event record of guard/version as the
// projector's least-privileged role, under the shadow token tok ("" for
// none): the write every shadow-fenced table sees.
func fencedWrite(ctx context.Context, pool *pgxpool.Pool, version int64, tok, eventID string) error {
	return db.WithTx(ctx, pool, func(ctx context.Context, tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SET LOCAL ROLE "+operationsschema.RoleOperations); err != nil {
			return err
		}
		if tok != "" {
			if _, err := tx.Exec(ctx, `SELECT set_config('oceanway.shadow_token', $1, true)`, tok); err != nil {
				return err
			}
		}
		_, err := tx.Exec(ctx, `INSERT INTO operations.unsupported_events (projection_name, projection_version, event_id, event_type,
			event_schema_version, event_envelope_digest_algorithm_version, event_envelope_sha256, reason_code, first_seen_at, last_seen_at)
			VALUES ($1, $2, $3, 'x', '1', 'jcs-sha256-v1', repeat('0', 64), 'x', now(), now())`, guardProjection, version, eventID)
		return err
	})
}

// shadowBuild writes a build row of guard/version by hand (as the owner,
// what the cutover does as the operator) and returns its claim token.
func shadowBuild(t *testing.T, pool *pgxpool.Pool, version int64, state string, candidate *string) string {
	t.Helper()
	tok := uuid.NewString()
	var proof *string
	if state == "cut_over" {
		p := fmt.Sprintf("%064x", version)
		proof = &p
	}
	_, err := pool.Exec(t.Context(), `INSERT INTO operations.shadow_builds (projection_name, projection_version, state, claim_token,
		claim_owner, candidate_id, readiness_proof_digest) VALUES ($1, $2, $3, $4, 'guard-test', $5, $6)`,
		guardProjection, version, state, tok, candidate, proof)
	require.NoError(t, err)
	return tok
}

// candidate writes a frozen cutover candidate of guard/version by hand
// with the given member event ids.
func candidate(t *testing.T, pool *pgxpool.Pool, id string, version int64, tok string, members ...string) {
	t.Helper()
	_, err := pool.Exec(t.Context(), `INSERT INTO operations.cutover_candidates (candidate_id, projection_name, projection_version,
		active_projection_version, shadow_token, database_snapshot, frozen_at, member_count, members_sha256)
		VALUES ($1, $2, $3, 1, $4, 'snapshot', now(), $5, repeat('0', 64))`, id, guardProjection, version, tok, len(members))
	require.NoError(t, err)
	for _, ev := range members {
		_, err := pool.Exec(t.Context(), `INSERT INTO operations.cutover_candidate_members (candidate_id, event_id, event_type,
			event_schema_version, event_envelope_digest_algorithm_version, event_envelope_sha256, delivery_set_version,
			delivery_set_definition_schema_version, delivery_set_definition_digest_algorithm_version, delivery_set_definition_digest,
			consumer_name, expected_receipt_type, expected_receipt_schema_version)
			VALUES ($1, $2, 'x', '1', 'jcs-sha256-v1', repeat('0', 64), 1, '1', 'jcs-sha256-v1', repeat('0', 64), 'operations_projector',
			'R', '1')`, id, ev)
		require.NoError(t, err)
	}
}

func proofRow(ctx context.Context, pool *pgxpool.Pool, version int64, candidateID string, members int64) error {
	_, err := pool.Exec(ctx, `INSERT INTO operations.readiness_proofs (proof_digest, proof_digest_algorithm_version, projection_name,
		projection_version, candidate_id, member_count, proof_body, proved_at)
		VALUES ($1, 'jcs-sha256-v1', $2, $3, $4, $5, '{}', now())`, fmt.Sprintf("%064x", 1000+version), guardProjection, version, candidateID, members)
	return err
}

func requireRefused(t *testing.T, err error, code, fragment string) {
	t.Helper()
	require.Error(t, err)
	require.Equal(t, code, db.SQLState(err), "error: %v", err)
	require.ErrorContains(t, err, fragment)
}

// DS-8, the shadow fence (operations.shadow_fence), one refusal per clause,
// each driven as the projector's role (oceanway_operations) and told apart
// by its message (five clauses share OP003):
// OP003.shadow-write-without-token, OP003.token-without-shadow-build,
// OP003.token-after-cutover, OP003.shadow-build-paused,
// OP003.stale-shadow-token, OP004.outside-frozen-candidate.
func TestGuard_DS8_ShadowFenceClauses(t *testing.T) {
	t.Parallel()
	b, ctx := setup(t, 8), t.Context()

	// OP003.shadow-write-without-token: a shadow build is written only under its token.
	shadowBuild(t, b.pool, 2, "building", nil)
	requireRefused(t, fencedWrite(ctx, b.pool, 2, "", uuid.NewString()), SQLStateShadowFence, "writes need its shadow claim token")

	// OP003.token-without-shadow-build: a token for a version with no build.
	requireRefused(t, fencedWrite(ctx, b.pool, 3, uuid.NewString(), uuid.NewString()), SQLStateShadowFence, "has no shadow build; shadow token refused")

	// OP003.token-after-cutover: the build's own token, after the switch.
	c4 := uuid.NewString()
	tok := shadowBuild(t, b.pool, 4, "cut_over", &c4)
	requireRefused(t, fencedWrite(ctx, b.pool, 4, tok, uuid.NewString()), SQLStateShadowFence, "is active since its cutover; shadow token refused")
	require.NoError(t, fencedWrite(ctx, b.pool, 4, "", uuid.NewString()), "the active version is written without a token")

	// OP003.shadow-build-paused: the build's own token while paused.
	tok = shadowBuild(t, b.pool, 5, "paused", nil)
	requireRefused(t, fencedWrite(ctx, b.pool, 5, tok, uuid.NewString()), SQLStateShadowFence, "is paused")

	// OP003.stale-shadow-token: another token than the build's current one.
	tok = shadowBuild(t, b.pool, 6, "building", nil)
	requireRefused(t, fencedWrite(ctx, b.pool, 6, uuid.NewString(), uuid.NewString()), SQLStateShadowFence, "stale shadow claim token")
	require.NoError(t, fencedWrite(ctx, b.pool, 6, tok, uuid.NewString()), "the current token writes while building")

	// OP004.outside-frozen-candidate: catching up, only the candidate's events.
	c7, member := uuid.NewString(), uuid.NewString()
	tok = shadowBuild(t, b.pool, 7, "catching_up", &c7)
	candidate(t, b.pool, c7, 7, tok, member)
	requireRefused(t, fencedWrite(ctx, b.pool, 7, tok, uuid.NewString()), SQLStateOutsideBoundary, "is outside the frozen cutover candidate")
	require.NoError(t, fencedWrite(ctx, b.pool, 7, tok, member), "a candidate member is written while catching up")
}

// DS-8 / OPS-4, the readiness proof check (operations.readiness_proof_check),
// one refusal per clause (00006): OP005.proof-candidate-not-current (the
// proof's candidate is not the frozen candidate of a catching-up build),
// OP005.proof-member-count, OP005.proof-missing-receipt,
// OP005.proof-unresolved-gap, OP005.proof-unsupported-record,
// OP005.proof-quarantined-delivery: each proof below breaks exactly one of
// them (one message, OP005: the counts it reports tell them apart). As the
// table owner: the operator writes proofs; the projector role has no
// INSERT on readiness_proofs (42501). The shadow's own records are written
// as the projector role under the build's token.
func TestGuard_DS8_ReadinessProofClauses(t *testing.T) {
	t.Parallel()
	b, ctx := setup(t, 8), t.Context()
	catchUp := func(version int64, candidateID string) {
		_, err := b.pool.Exec(ctx, `UPDATE operations.shadow_builds SET state = 'catching_up', candidate_id = $3
			WHERE projection_name = $1 AND projection_version = $2`, guardProjection, version, candidateID)
		require.NoError(t, err)
	}
	asProjector := func(tok, stmt string, args ...any) {
		require.NoError(t, db.WithTx(ctx, b.pool, func(ctx context.Context, tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, "SET LOCAL ROLE "+operationsschema.RoleOperations); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, `SELECT set_config('oceanway.shadow_token', $1, true)`, tok); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, stmt, args...)
			return err
		}))
	}
	receipt := func(tok string, version int64, eventID string) {
		asProjector(tok, `INSERT INTO operations.applied_receipts (consumer_name, projection_name, projection_version, event_id,
			event_type, event_schema_version, event_envelope_digest_algorithm_version, event_envelope_sha256, receipt_ref,
			receipt_schema_version, receipt_digest_algorithm_version, receipt_digest, receipt_body)
			VALUES ('operations_projector', $1, $2, $3, 'x', '1', 'jcs-sha256-v1', repeat('0', 64), $4, '1', 'jcs-sha256-v1',
			repeat('0', 64), '{}')`, guardProjection, version, eventID, "guard-receipt-"+eventID)
	}

	// OP005.proof-candidate-not-current: a building version's candidate.
	c10 := uuid.NewString()
	tok := shadowBuild(t, b.pool, 10, "building", nil)
	candidate(t, b.pool, c10, 10, tok)
	requireRefused(t, proofRow(ctx, b.pool, 10, c10, 0), SQLStateProofRefused, "is not the frozen candidate of a catching-up shadow")

	// OP005.proof-member-count: the proof claims a member the candidate lacks.
	c11 := uuid.NewString()
	tok = shadowBuild(t, b.pool, 11, "catching_up", &c11)
	candidate(t, b.pool, c11, 11, tok)
	requireRefused(t, proofRow(ctx, b.pool, 11, c11, 1), SQLStateProofRefused, "members 0 (proof says 1), missing receipts 0, unresolved gaps 0, unsupported 0, quarantined 0")
	require.NoError(t, proofRow(ctx, b.pool, 11, c11, 0), "the exact proof is accepted")

	// OP005.proof-missing-receipt: a candidate member without the version's receipt.
	c14 := uuid.NewString()
	tok = shadowBuild(t, b.pool, 14, "catching_up", &c14)
	candidate(t, b.pool, c14, 14, tok, uuid.NewString())
	requireRefused(t, proofRow(ctx, b.pool, 14, c14, 1), SQLStateProofRefused, "members 1 (proof says 1), missing receipts 1, unresolved gaps 0")

	// OP005.proof-unresolved-gap: the version holds an unresolved revision gap.
	c15 := uuid.NewString()
	tok = shadowBuild(t, b.pool, 15, "building", nil)
	asProjector(tok, `INSERT INTO operations.revision_gaps (projection_name, projection_version, waiting_event_id, waiting_event_type,
		aggregate_type, aggregate_id, waiting_revision, applied_revision_at_detection, event_envelope_digest_algorithm_version,
		event_envelope_sha256, detected_at, last_seen_at)
		VALUES ($1, 15, gen_random_uuid(), 'x', 'run', 'r', 3, 0, 'jcs-sha256-v1', repeat('0', 64), now(), now())`, guardProjection)
	candidate(t, b.pool, c15, 15, tok)
	catchUp(15, c15)
	requireRefused(t, proofRow(ctx, b.pool, 15, c15, 0), SQLStateProofRefused, "missing receipts 0, unresolved gaps 1, unsupported 0")

	// OP005.proof-unsupported-record: an unresolved unsupported-schema record.
	c16 := uuid.NewString()
	tok = shadowBuild(t, b.pool, 16, "building", nil)
	require.NoError(t, fencedWrite(ctx, b.pool, 16, tok, uuid.NewString()))
	candidate(t, b.pool, c16, 16, tok)
	catchUp(16, c16)
	requireRefused(t, proofRow(ctx, b.pool, 16, c16, 0), SQLStateProofRefused, "unresolved gaps 0, unsupported 1, quarantined 0")

	// OP005.proof-quarantined-delivery: a candidate event whose core_operations
	// delivery is quarantined (quarantined by hand as the dispatcher), with
	// the version's receipt, so nothing else is missing.
	require.NoError(t, b.admit(ctx, 1))
	var eventID, sha string
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT e.event_id::text, e.event_envelope_sha256 FROM outbox.outbox_events e
		JOIN outbox.outbox_deliveries d USING (event_id) WHERE d.destination = 'core_operations' LIMIT 1`).Scan(&eventID, &sha))
	require.NoError(t, db.WithTx(ctx, b.pool, func(ctx context.Context, tx pgx.Tx) error {
		attemptID, leaseToken := uuid.NewString(), uuid.NewString()
		for _, st := range []struct {
			sql  string
			args []any
		}{
			{"SET LOCAL ROLE " + outboxschema.RoleDispatcher, nil},
			{`INSERT INTO outbox.outbox_delivery_attempt_starts (attempt_id, destination, event_id, lease_token)
				VALUES ($1, 'core_operations', $2, $3)`, []any{attemptID, eventID, leaseToken}},
			{`UPDATE outbox.outbox_deliveries SET status = 'leased', lease_owner = 'guard-test', lease_token = $3,
				lease_expires_at = now() + interval '1 minute', current_attempt_id = $2, attempt_count = attempt_count + 1,
				last_attempt_at = now() WHERE event_id = $1 AND destination = 'core_operations'`, []any{eventID, attemptID, leaseToken}},
			{`INSERT INTO outbox.outbox_delivery_attempt_finishes (attempt_id, outcome, retry_disposition, normalized_error_code)
				VALUES ($1, 'non_retryable', 'quarantined', 'unknown_schema')`, []any{attemptID}},
			{`UPDATE outbox.outbox_deliveries SET status = 'quarantined', last_error_code = 'unknown_schema'
				WHERE event_id = $1 AND destination = 'core_operations'`, []any{eventID}},
			{`INSERT INTO outbox.outbox_quarantine (destination, event_id, reason, event_envelope_digest_algorithm_version,
				event_envelope_sha256, attempt_id) VALUES ('core_operations', $1, 'unknown_schema', 'jcs-sha256-v1', $2, $3)`,
				[]any{eventID, sha, attemptID}},
		} {
			if _, err := tx.Exec(ctx, st.sql, st.args...); err != nil {
				return fmt.Errorf("%s: %w", st.sql, err)
			}
		}
		return nil
	}))
	c17 := uuid.NewString()
	tok = shadowBuild(t, b.pool, 17, "building", nil)
	receipt(tok, 17, eventID)
	candidate(t, b.pool, c17, 17, tok, eventID)
	catchUp(17, c17)
	requireRefused(t, proofRow(ctx, b.pool, 17, c17, 1), SQLStateProofRefused, "missing receipts 0, unresolved gaps 0, unsupported 0, quarantined 1")
}

// The Operations facts are insert-only for every role, the owner included
// (each trigger executes operations.reject_change, OP001): clauses
// OP001.applied-receipts-insert-only, OP001.projected-events-insert-only,
// OP001.completeness-proofs-insert-only, OP001.cutover-candidates-insert-only,
// OP001.candidate-members-insert-only, OP001.readiness-proofs-insert-only.
// As the table owner: the projector role has no UPDATE or DELETE on any of
// them (42501 before the trigger).
func TestGuard_OPS_InsertOnlyFacts(t *testing.T) {
	t.Parallel()
	b, ctx := setup(t, 8), t.Context()
	require.NoError(t, b.admit(ctx, 1))
	require.NoError(t, b.deliverAll(ctx))
	_, _, err := readmodel.New(b.pool).RecordCompleteness(ctx, readmodel.Params{})
	require.NoError(t, err)
	c12, member := uuid.NewString(), uuid.NewString()
	tok := shadowBuild(t, b.pool, 12, "catching_up", &c12)
	candidate(t, b.pool, c12, 12, tok, member)
	c13 := uuid.NewString()
	tok = shadowBuild(t, b.pool, 13, "catching_up", &c13)
	candidate(t, b.pool, c13, 13, tok)
	require.NoError(t, proofRow(ctx, b.pool, 13, c13, 0))

	for table, set := range map[string]string{
		"applied_receipts":          "receipt_ref = receipt_ref",
		"projected_events":          "event_id = event_id",
		"completeness_proofs":       "snapshot_id = snapshot_id",
		"cutover_candidates":        "member_count = member_count",
		"cutover_candidate_members": "event_type = event_type",
		"readiness_proofs":          "member_count = member_count",
	} {
		t.Run(table, func(t *testing.T) {
			require.NotZero(t, count(t, b.pool, "SELECT count(*) FROM operations."+table), "a row to refuse")
			for _, stmt := range []string{"UPDATE operations." + table + " SET " + set, "DELETE FROM operations." + table} {
				_, err := b.pool.Exec(ctx, stmt)
				requireRefused(t, err, SQLStateInsertOnly, "on operations."+table+" is forbidden")
			}
		})
	}
}
