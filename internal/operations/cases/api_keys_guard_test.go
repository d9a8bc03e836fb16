package cases_test

import (
	"context"
	"testing"

	"github.com/jackc/pgerrcode"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/internal/boundary"
	"github.com/oceanway/core/internal/db"
	"github.com/oceanway/core/internal/dbtest"
	"github.com/oceanway/core/internal/migrate"
	"github.com/oceanway/core/internal/operations/cases"
	operationsschema "github.com/oceanway/core/internal/operations/schema"
	outboxschema "github.com/oceanway/core/internal/outbox/schema"
)

// execAs runs stmt in its own transaction, as role when one is named (else
// as the pool's user, the tables' owner).
func execAs(ctx context.Context, pool *pgxpool.Pool, role, stmt string) error {
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

// OP-1, issue 33: an operator's stored API response never changes, for any
// role. The platform API's idempotency record of Operations' case
// operations (the first response to an operator's key) refuses UPDATE and
// DELETE (OP001.api-idempotency-insert-only) and TRUNCATE
// (OP001.api-idempotency-no-truncate) even as the table owner, and
// oceanway_operations may only insert and read it (42501 before any
// trigger). Only a success is stored, under a printable ASCII key.
func TestGuard_OP1_APIIdempotencyKeysImmutable_Issue33(t *testing.T) {
	t.Parallel()
	b := dbtest.New(t, dbtest.Opts{Boundaries: []boundary.Boundary{boundary.Core},
		Lines: []migrate.Line{outboxschema.Line(), operationsschema.Line()}, MaxConns: 4})
	pool, ctx := b.Core(), t.Context()
	const role = operationsschema.RoleOperations
	require.NoError(t, execAs(ctx, pool, role, `INSERT INTO operations.api_idempotency_keys
		(caller_workload, operation_id, idempotency_key, request_sha256, response_status, response_content_type, response_body)
		VALUES ('workforce:alice@example.org', 'requestCaseResolution', 'k-1', repeat('a', 64), 201, 'application/json', '{}')`))
	for _, c := range []struct{ stmt, op string }{
		{`UPDATE operations.api_idempotency_keys SET response_body = '{"x":1}'`, "UPDATE"},
		{"DELETE FROM operations.api_idempotency_keys", "DELETE"},
		{"TRUNCATE operations.api_idempotency_keys", "TRUNCATE"},
	} {
		err := execAs(ctx, pool, "", c.stmt)
		require.Equal(t, cases.CodeInsertOnly, db.SQLState(err), "the trigger refuses even the owner: %s: %v", c.stmt, err)
		require.ErrorContains(t, err, c.op+" on operations.api_idempotency_keys is forbidden")
		require.Equal(t, pgerrcode.InsufficientPrivilege, db.SQLState(execAs(ctx, pool, role, c.stmt)), c.stmt)
	}
	var n int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM operations.api_idempotency_keys`).Scan(&n))
	require.Equal(t, 1, n, "the stored response is still there")

	for _, stmt := range []string{
		`INSERT INTO operations.api_idempotency_keys VALUES ('workforce:alice@example.org', 'approveCaseResolution', 'k-2', repeat('a', 64), 409, 'application/problem+json', '{}')`,
		`INSERT INTO operations.api_idempotency_keys VALUES ('workforce:alice@example.org', 'approveCaseResolution', 'k 3', repeat('a', 64), 201, 'application/json', '{}')`,
	} {
		require.Equal(t, pgerrcode.CheckViolation, db.SQLState(execAs(ctx, pool, role, stmt)), stmt)
	}
}
