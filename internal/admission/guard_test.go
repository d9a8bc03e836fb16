package admission_test

import (
	"context"
	"testing"

	"github.com/jackc/pgerrcode"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	admissionschema "github.com/oceanway/core/internal/admission/schema"
	"github.com/oceanway/core/internal/db"
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
				require.Equal(t, pgerrcode.InsufficientPrivilege, db.SQLState(execTx(ctx, pool, admissionschema.RoleAdmission, stmt)), stmt)
			}
			requireImmutable(t, execTx(ctx, pool, "", "TRUNCATE admission."+table+" CASCADE"), "TRUNCATE on admission."+table+" is forbidden")
		})
	}
}

// EX-1, issue 33: a stored API response never changes, for any role: the
// platform API's idempotency record (the first response to a caller's key)
// refuses UPDATE, DELETE (AD001.api-idempotency-immutable) and TRUNCATE
// (AD001.api-idempotency-no-truncate) as the table owner, and
// oceanway_admission may only insert and read it.
func TestGuard_EX1_APIIdempotencyKeysImmutable(t *testing.T) {
	t.Parallel()
	pool, _ := setup(t, false)
	ctx := t.Context()
	require.NoError(t, execTx(ctx, pool, admissionschema.RoleAdmission, `INSERT INTO admission.api_idempotency_keys
		(caller_workload, operation_id, idempotency_key, request_sha256, response_status, response_content_type, response_body)
		VALUES ('platform', 'admitRun', 'k-1', repeat('a', 64), 201, 'application/json', '{}')`))
	for _, stmt := range []string{"UPDATE admission.api_idempotency_keys SET response_body = '{\"x\":1}'", "DELETE FROM admission.api_idempotency_keys"} {
		requireImmutable(t, execTx(ctx, pool, "", stmt), "on admission.api_idempotency_keys is forbidden")
		require.Equal(t, pgerrcode.InsufficientPrivilege, db.SQLState(execTx(ctx, pool, admissionschema.RoleAdmission, stmt)), stmt)
	}
	requireImmutable(t, execTx(ctx, pool, "", "TRUNCATE admission.api_idempotency_keys"), "TRUNCATE on admission.api_idempotency_keys is forbidden")
	// Only a success is stored, and a key is printable ASCII.
	for _, stmt := range []string{
		`INSERT INTO admission.api_idempotency_keys VALUES ('platform', 'admitRun', 'k-2', repeat('a', 64), 500, 'application/json', '{}')`,
		`INSERT INTO admission.api_idempotency_keys VALUES ('platform', 'admitRun', 'k 3', repeat('a', 64), 201, 'application/json', '{}')`,
	} {
		require.Equal(t, pgerrcode.CheckViolation, db.SQLState(execTx(ctx, pool, admissionschema.RoleAdmission, stmt)), stmt)
	}
}
