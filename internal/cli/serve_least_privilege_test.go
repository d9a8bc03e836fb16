package cli

import (
	"bytes"
	"net/url"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/internal/dbtest"
)

// OB-STORE-6 (issue 18, item 4): serve runs with least privilege by
// default; a connecting user that cannot take oceanway_dispatcher and
// oceanway_operations is refused at start with the GRANT to run.
func TestServeLeastPrivilegeByDefaultSaysWhatToGrant(t *testing.T) {
	t.Parallel()
	srv := dbtest.Server(t)
	prefix := dbtest.NewPrefix(t)
	ctx := t.Context()
	var out, errOut bytes.Buffer
	require.Equal(t, 0, Main([]string{"migrate", "--database-url", srv.URL, "--db-prefix", prefix}, strings.NewReader(""), &out, &errOut),
		"stderr: %s", errOut.String())

	user := prefix + "_login"
	conn, err := pgx.Connect(ctx, srv.URL)
	require.NoError(t, err)
	t.Cleanup(func() {
		_, _ = conn.Exec(ctx, "DROP ROLE IF EXISTS "+pgx.Identifier{user}.Sanitize())
		_ = conn.Close(ctx)
	})
	_, err = conn.Exec(ctx, "CREATE ROLE "+pgx.Identifier{user}.Sanitize()+" LOGIN")
	require.NoError(t, err)
	u, err := url.Parse(srv.URL)
	require.NoError(t, err)
	u.User = url.User(user)

	errOut.Reset()
	code := Main([]string{"serve", "--database-url", u.String(), "--db-prefix", prefix, "--migrate=false", "--listen", "127.0.0.1:0"},
		strings.NewReader(""), &out, &errOut)
	require.Equal(t, 1, code)
	// oceanway_admission: the metering worker's read of the admission manifest.
	require.Contains(t, errOut.String(), "is not a member of oceanway_billing, oceanway_dispatcher, oceanway_operations, oceanway_admission")
	require.Contains(t, errOut.String(), `GRANT "oceanway_billing", "oceanway_dispatcher", "oceanway_operations", "oceanway_admission" TO "`+user+`"`)
	require.Contains(t, errOut.String(), "--least-privilege=false")
}
