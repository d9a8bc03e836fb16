package execution_test

import (
	"testing"

	"github.com/jackc/pgerrcode"
	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/internal/boundary"
	"github.com/oceanway/core/internal/dbtest"
	"github.com/oceanway/core/internal/execution"
	executionschema "github.com/oceanway/core/internal/execution/schema"
	"github.com/oceanway/core/internal/migrate"
	outboxschema "github.com/oceanway/core/internal/outbox/schema"
)

// EX-2, issue 33: a stored API response of the Execution owner never
// changes, for any role: the platform API's idempotency record (the first
// response to a caller's key, execution.api_idempotency_keys) refuses
// UPDATE and DELETE (EX001.api-idempotency-immutable) and TRUNCATE
// (EX001.api-idempotency-no-truncate) as the table owner, and
// oceanway_execution may only insert and read it. Only a success is
// stored, and a key is printable ASCII without spaces.
func TestGuard_EX2_APIIdempotencyKeysImmutable(t *testing.T) {
	t.Parallel()
	b := dbtest.New(t, dbtest.Opts{
		Boundaries: []boundary.Boundary{boundary.Execution},
		Lines:      []migrate.Line{outboxschema.Line(), executionschema.Line()},
		MaxConns:   2,
	})
	owner := b.Execution() // the migrations' role: the table owner
	role := dbtest.RolePool(t, b.DSNs[boundary.Execution], executionschema.RoleExecution)
	require.Empty(t, forge(t, role, sqls(`INSERT INTO execution.api_idempotency_keys
		(caller_workload, operation_id, idempotency_key, request_sha256, response_status, response_content_type, response_body)
		VALUES ('platform', 'openRun', 'k-1', repeat('a', 64), 201, 'application/json', '{}')`)), "oceanway_execution stores a response")
	var n int
	require.NoError(t, role.QueryRow(t.Context(), "SELECT count(*) FROM execution.api_idempotency_keys").Scan(&n))
	require.Equal(t, 1, n, "and reads it")

	for _, stmt := range []string{
		`UPDATE execution.api_idempotency_keys SET response_body = '{"x":1}'`,
		"DELETE FROM execution.api_idempotency_keys",
	} {
		// EX001.api-idempotency-immutable
		code, msg := forgeMsg(t, owner, sqls(stmt))
		require.Equal(t, execution.CodeImmutable, code, stmt)
		require.Contains(t, msg, "on execution.api_idempotency_keys is forbidden", stmt)
		require.Equal(t, pgerrcode.InsufficientPrivilege, forge(t, role, sqls(stmt)), stmt)
	}
	// EX001.api-idempotency-no-truncate
	code, msg := forgeMsg(t, owner, sqls("TRUNCATE execution.api_idempotency_keys"))
	require.Equal(t, execution.CodeImmutable, code)
	require.Contains(t, msg, "TRUNCATE on execution.api_idempotency_keys is forbidden")
	require.Equal(t, pgerrcode.InsufficientPrivilege, forge(t, role, sqls("TRUNCATE execution.api_idempotency_keys")))

	for _, stmt := range []string{
		`INSERT INTO execution.api_idempotency_keys VALUES ('platform', 'openRun', 'k-2', repeat('a', 64), 503, 'application/problem+json', '{}')`,
		`INSERT INTO execution.api_idempotency_keys VALUES ('platform', 'openRun', 'k 3', repeat('a', 64), 201, 'application/json', '{}')`,
	} {
		require.Equal(t, pgerrcode.CheckViolation, forge(t, role, sqls(stmt)), stmt)
	}
	require.NoError(t, role.QueryRow(t.Context(), "SELECT count(*) FROM execution.api_idempotency_keys").Scan(&n))
	require.Equal(t, 1, n, "the first response, unchanged")
}
