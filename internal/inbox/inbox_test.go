package inbox

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgerrcode"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/contracts/route"
	"github.com/oceanway/core/internal/outbox/transport"
)

// CON-2: temporary database conditions are retryable with a specific code;
// classified errors keep their class; nothing unknown becomes non-retryable.
func TestToDeliveryError(t *testing.T) {
	t.Parallel()
	pg := func(code string) error { return fmt.Errorf("wrapped: %w", &pgconn.PgError{Code: code}) }
	for _, c := range []struct {
		err       error
		retryable bool
		code      string
	}{
		{pg(pgerrcode.LockNotAvailable), true, CodeLockUnavailable},
		{pg(pgerrcode.QueryCanceled), true, CodeTimeout},
		{pg(pgerrcode.SerializationFailure), true, CodeSerializationConflict},
		{pg(pgerrcode.DeadlockDetected), true, CodeSerializationConflict},
		{pg(pgerrcode.ConnectionFailure), true, CodeDatabaseUnavailable},
		{pg(pgerrcode.TooManyConnections), true, CodeDatabaseUnavailable},
		{pg(pgerrcode.AdminShutdown), true, CodeDatabaseUnavailable},
		{pg(pgerrcode.UniqueViolation), true, CodeStoreError},
		{errors.New("something odd"), true, CodeStoreError},
		{context.DeadlineExceeded, true, CodeTimeout},
		{fmt.Errorf("x: %w", context.Canceled), true, CodeCanceled},
		{transport.NonRetryable("kept", errors.New("k")), false, "kept"},
		{fmt.Errorf("outer: %w", transport.Retryable("wait", errors.New("w"))), true, "wait"},
	} {
		got := ToDeliveryError(c.err)
		retryable, code := transport.RetryableAndCode(got)
		require.Equal(t, c.retryable, retryable, "%v", c.err)
		require.Equal(t, c.code, code, "%v", c.err)
		require.ErrorIs(t, got, c.err)
	}
	require.NoError(t, ToDeliveryError(nil))
}

func TestTableStatements(t *testing.T) {
	t.Parallel()
	plain := NewTable("metering", "consumer_receipts", false)
	require.Contains(t, plain.lookup, `FROM "metering"."consumer_receipts"`)
	require.NotContains(t, plain.lookup, "projection_name")
	require.NotContains(t, plain.insert, "projection_name")
	require.NotContains(t, plain.lookup+plain.insert, "{")

	proj := NewTable("operations", "applied_receipts", true)
	require.Contains(t, proj.lookup, "projection_name = @projection_name AND projection_version = @projection_version")
	require.Contains(t, proj.insert, "receipt_body, projection_name, projection_version)")
	require.Contains(t, proj.insert, "@receipt_body, @projection_name, @projection_version)")
	require.NotContains(t, proj.lookup+proj.insert, "{")
	require.NotRegexp(t, `\$[0-9]`, plain.lookup+plain.insert+proj.lookup+proj.insert, "named arguments only")

	_, err := proj.keyArgs(Key{ConsumerName: "c", EventID: "e"})
	require.Error(t, err, "a projection table needs a projection key")
	args, err := proj.keyArgs(Key{ConsumerName: "c", EventID: "e", Projection: route.Required("p", 2)})
	require.NoError(t, err)
	require.Equal(t, pgx.NamedArgs{"consumer_name": "c", "event_id": "e", "projection_name": "p", "projection_version": int64(2)}, args)
	_, err = plain.keyArgs(Key{ConsumerName: "c", EventID: "e", Projection: route.Required("p", 2)})
	require.Error(t, err)
}

func TestLockKeyIncludesProjection(t *testing.T) {
	t.Parallel()
	a := Key{ConsumerName: "operations_projector", EventID: "e", Projection: route.Required("p", 1)}.lockKey()
	b := Key{ConsumerName: "operations_projector", EventID: "e", Projection: route.Required("p", 2)}.lockKey()
	require.NotEqual(t, a, b)
	require.True(t, strings.HasSuffix(a, "|e"))
}
