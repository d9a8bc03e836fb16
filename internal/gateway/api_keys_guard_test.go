package gateway_test

import (
	"context"
	"testing"

	"github.com/jackc/pgerrcode"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/internal/db"
	"github.com/oceanway/core/internal/gateway"
	gatewayschema "github.com/oceanway/core/internal/gateway/schema"
)

// execAsTx runs one statement in its own transaction on pool, as role when
// role is set (SET LOCAL ROLE), else as the pool's user (the table owner).
func execAsTx(ctx context.Context, pool *pgxpool.Pool, role, stmt string) error {
	return db.WithTx(ctx, pool, func(ctx context.Context, tx pgx.Tx) error {
		if role != "" {
			if _, err := tx.Exec(ctx, "SET LOCAL ROLE "+pgx.Identifier{role}.Sanitize()); err != nil {
				return err
			}
		}
		_, err := tx.Exec(ctx, stmt)
		return err
	})
}

// Issue 33: a stored API response of the Gateway's operations never
// changes, for any role: the platform API's idempotency record (the first
// response to a caller's key) refuses UPDATE and DELETE
// (GW001.api-idempotency-immutable) and TRUNCATE
// (GW001.api-idempotency-no-truncate) as the table owner, and
// oceanway_gateway may only insert and read it (42501 before any trigger).
// Only a success is stored, and a key is printable ASCII without spaces.
func TestGW001APIIdempotencyKeysImmutable(t *testing.T) {
	t.Parallel()
	pool, _ := setup(t)
	ctx := t.Context()
	const table = "gateway.api_idempotency_keys"
	require.NoError(t, execAsTx(ctx, pool, gatewayschema.RoleGateway, `INSERT INTO gateway.api_idempotency_keys
		(caller_workload, operation_id, idempotency_key, request_sha256, response_status, response_content_type, response_body)
		VALUES ('platform.adapter', 'dispatchAttempt', 'k-1', repeat('a', 64), 201, 'application/json', '{}')`))
	var n int
	require.NoError(t, pool.QueryRow(ctx, "SELECT count(*) FROM gateway.api_idempotency_keys").Scan(&n))
	require.Equal(t, 1, n, "oceanway_gateway inserts and reads")

	for _, stmt := range []string{
		"UPDATE gateway.api_idempotency_keys SET response_body = '{\"x\":1}'",
		"UPDATE gateway.api_idempotency_keys SET response_status = response_status",
		"DELETE FROM gateway.api_idempotency_keys",
	} {
		err := execAsTx(ctx, pool, "", stmt)
		require.Equal(t, gateway.CodeImmutable, db.SQLState(err), "%s: %v", stmt, err)
		require.ErrorContains(t, err, "on gateway.api_idempotency_keys is forbidden", stmt)
		require.Equal(t, pgerrcode.InsufficientPrivilege, db.SQLState(execAsTx(ctx, pool, gatewayschema.RoleGateway, stmt)), stmt)
	}
	err := execAsTx(ctx, pool, "", "TRUNCATE "+table)
	require.Equal(t, gateway.CodeImmutable, db.SQLState(err), "TRUNCATE: %v", err)
	require.ErrorContains(t, err, "TRUNCATE on "+table+" is forbidden")
	require.Equal(t, pgerrcode.InsufficientPrivilege, db.SQLState(execAsTx(ctx, pool, gatewayschema.RoleGateway, "TRUNCATE "+table)))

	// Only a success is stored, and a key is printable ASCII without spaces.
	for _, stmt := range []string{
		`INSERT INTO gateway.api_idempotency_keys VALUES ('platform.adapter', 'dispatchAttempt', 'k-2', repeat('a', 64), 500, 'application/json', '{}')`,
		`INSERT INTO gateway.api_idempotency_keys VALUES ('platform.adapter', 'dispatchAttempt', 'k-3', repeat('a', 64), 409, 'application/problem+json', '{}')`,
		`INSERT INTO gateway.api_idempotency_keys VALUES ('platform.adapter', 'dispatchAttempt', 'k 4', repeat('a', 64), 201, 'application/json', '{}')`,
		`INSERT INTO gateway.api_idempotency_keys VALUES ('platform.adapter', 'dispatchAttempt', 'k-5', 'not-a-digest', 201, 'application/json', '{}')`,
	} {
		require.Equal(t, pgerrcode.CheckViolation, db.SQLState(execAsTx(ctx, pool, gatewayschema.RoleGateway, stmt)), stmt)
	}
	require.NoError(t, pool.QueryRow(ctx, "SELECT count(*) FROM gateway.api_idempotency_keys").Scan(&n))
	require.Equal(t, 1, n, "the first response, unchanged and alone")
}
