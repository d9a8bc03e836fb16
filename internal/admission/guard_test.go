package admission_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	admissionschema "github.com/oceanway/core/internal/admission/schema"
	"github.com/oceanway/core/internal/boundary"
	"github.com/oceanway/core/internal/db"
	"github.com/oceanway/core/internal/dbtest"
	"github.com/oceanway/core/internal/migrate"
	outboxschema "github.com/oceanway/core/internal/outbox/schema"
)

// codeImmutable is admission's SQLSTATE for a change of an immutable fact
// (admission.reject_change).
const codeImmutable = "AD001"

func requireImmutable(t *testing.T, err error, fragment string) {
	t.Helper()
	require.Error(t, err)
	require.Equal(t, codeImmutable, db.SQLState(err), "error: %v", err)
	require.ErrorContains(t, err, fragment)
}

func execTx(ctx context.Context, pool *pgxpool.Pool, role string, stmt string) error {
	return db.WithTx(ctx, pool, func(ctx context.Context, tx pgx.Tx) error {
		if role != "" {
			if _, err := tx.Exec(ctx, "SET LOCAL ROLE "+role); err != nil {
				return err
			}
		}
		_, err := tx.Exec(ctx, stmt)
		return err
	})
}

// EX-1, issue 30: admission's facts never change, for any role: one clause
// per trigger (each executes admission.reject_change, AD001), told apart
// by the table the message names. UPDATE and DELETE: AD001.requests-immutable,
// AD001.manifests-immutable, AD001.runs-immutable,
// AD001.reservations-immutable; TRUNCATE (CASCADE reaches the referencing
// tables, whose own triggers refuse too): AD001.requests-no-truncate,
// AD001.manifests-no-truncate, AD001.runs-no-truncate,
// AD001.reservations-no-truncate. As the table owner: oceanway_admission
// has SELECT and INSERT only (42501 before any trigger, checked below).
func TestGuard_EX1_AdmissionFactsImmutable(t *testing.T) {
	t.Parallel()
	pool, svc := setup(t, true)
	ctx := t.Context()
	_, err := svc.Admit(ctx, request())
	require.NoError(t, err)
	for table, set := range map[string]string{
		"admission_requests":      "request_body = request_body",
		"run_admission_manifests": "manifest_body = manifest_body",
		"runs":                    "admitted_at = admitted_at",
		"reservations":            "created_at = created_at",
	} {
		t.Run(table, func(t *testing.T) {
			for _, stmt := range []string{"UPDATE admission." + table + " SET " + set, "DELETE FROM admission." + table} {
				requireImmutable(t, execTx(ctx, pool, "", stmt), "on admission."+table+" is forbidden")
				require.Equal(t, "42501", db.SQLState(execTx(ctx, pool, admissionschema.RoleAdmission, stmt)), stmt)
			}
			requireImmutable(t, execTx(ctx, pool, "", "TRUNCATE admission."+table+" CASCADE"), "TRUNCATE on admission."+table+" is forbidden")
		})
	}
}

// EX-1: the admission line's own immutability of the trigger snapshots
// (AD001.trigger-snapshots-immutable: no UPDATE or DELETE) and of the Work
// (AD001.works-no-delete). The billing line, which every core database
// applies after admission, moves both tables to its schema and replaces
// these two triggers with its own guards (BL001.trigger-snapshots-immutable,
// billing.works_guard): the clauses are live only in a database with the
// admission line and no billing line, which is what this test migrates;
// the rows are written by hand as the owner.
func TestGuard_EX1_AdmissionLineAloneKeepsFenceFactsImmutable(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pool := dbtest.New(t, dbtest.Opts{Boundaries: []boundary.Boundary{boundary.Core},
		Lines: []migrate.Line{outboxschema.Line(), admissionschema.Line()}, MaxConns: 4}).Core()
	require.NoError(t, db.WithTx(ctx, pool, func(ctx context.Context, tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `
			INSERT INTO admission.admission_requests VALUES
			  ('00000000-0000-0000-0000-000000000001', 'jcs-sha256-v1', repeat('a', 64), '{}', '00000000-0000-0000-0000-0000000000a1', now());
			INSERT INTO admission.run_admission_manifests VALUES
			  ('manifest-1', '1', 'jcs-sha256-v1', repeat('b', 64), '00000000-0000-0000-0000-0000000000a1', '{}', now());
			INSERT INTO admission.runs VALUES ('00000000-0000-0000-0000-0000000000a1', '00000000-0000-0000-0000-000000000001',
			  'organization', gen_random_uuid(), gen_random_uuid(), NULL, gen_random_uuid(), gen_random_uuid(),
			  '00000000-0000-0000-0000-0000000000b1', 'manifest-1', '1', 'jcs-sha256-v1', repeat('b', 64), gen_random_uuid(), now());
			INSERT INTO admission.reservations VALUES ('00000000-0000-0000-0000-0000000000b1', gen_random_uuid(),
			  '00000000-0000-0000-0000-0000000000a1', 'credits', 100, 'reserved', gen_random_uuid(), now());
			INSERT INTO admission.billing_finalization_fences VALUES ('00000000-0000-0000-0000-0000000000c1',
			  '00000000-0000-0000-0000-0000000000b1', '00000000-0000-0000-0000-0000000000a1', 1, 'pending_evaluation', 1, 1,
			  'none', 'none', now());
			INSERT INTO admission.billing_finalization_trigger_snapshots VALUES ('snapshot-1', '1', 'jcs-sha256-v1', repeat('c', 64),
			  '00000000-0000-0000-0000-0000000000c1', 1, '{}', now());
			INSERT INTO admission.billing_finalization_works VALUES ('00000000-0000-0000-0000-0000000000c1', 1, 'work-1', '1',
			  'jcs-sha256-v1', repeat('d', 64), gen_random_uuid(), 'snapshot-1', '{}', 'waiting', 'closure_event_not_applied', now());`)
		return err
	}))
	for _, stmt := range []string{
		"UPDATE admission.billing_finalization_trigger_snapshots SET snapshot_body = snapshot_body",
		"DELETE FROM admission.billing_finalization_trigger_snapshots",
	} {
		requireImmutable(t, execTx(ctx, pool, "", stmt), "on admission.billing_finalization_trigger_snapshots is forbidden")
	}
	requireImmutable(t, execTx(ctx, pool, "", "DELETE FROM admission.billing_finalization_works"),
		"DELETE on admission.billing_finalization_works is forbidden")
}
