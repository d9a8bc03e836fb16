package db

import (
	"testing"
	"testing/fstest"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

func TestStatementsExpandFragmentsAndRefuseDefects(t *testing.T) {
	fsys := fstest.MapFS{
		"sql/fragment_cols.sql": {Data: []byte("-- the shared column list\na, b\n")},
		"sql/pick.sql":          {Data: []byte("-- pick one\nSELECT {{cols}} FROM t WHERE id = @id\n")},
	}
	s, err := LoadStatements("t", fsys, "sql")
	require.NoError(t, err)
	require.Equal(t, "-- pick one\nSELECT a, b FROM t WHERE id = @id", s.Get("pick"))
	require.Equal(t, []string{"pick"}, s.Keys())
	require.Panics(t, func() { s.Get("nope") })

	_, err = LoadStatements("t", fstest.MapFS{"sql/x.sql": {Data: []byte("SELECT {{missing}}")}}, "sql")
	require.ErrorContains(t, err, "unknown fragment")
	_, err = LoadStatements("t", fstest.MapFS{"sql/x.sql": {Data: []byte("  \n")}}, "sql")
	require.ErrorContains(t, err, "empty")
	_, err = LoadStatements("t", fstest.MapFS{}, "sql")
	require.ErrorContains(t, err, "no statements")
}

// The load-time positional rewrite sends exactly what pgx.NamedArgs sends
// for the named text: the same SQL and the same argument values, also for a
// repeated name, a name pgx does not see (in a string, a comment, a quoted
// identifier) and a missing value (NULL).
func TestStatementPositionalMatchesNamedArgs(t *testing.T) {
	text := "-- uses @not_an_arg\nSELECT @b::int, 'lit @c', \"q@d\", @a, @b, @e /* @f */ WHERE x = @a"
	s, err := LoadStatements("t", fstest.MapFS{"sql/q.sql": {Data: []byte(text)}}, "sql")
	require.NoError(t, err)
	named := pgx.NamedArgs{"a": 1, "b": "two", "c": 3, "d": 4, "f": 6} // e missing
	wantSQL, wantArgs, err := named.RewriteQuery(t.Context(), nil, s.Get("q"), nil)
	require.NoError(t, err)
	st := s.Statement("q")
	require.Equal(t, wantSQL, st.SQL)
	require.Equal(t, wantArgs, st.Args(named))
	require.Equal(t, []string{"b", "a", "e"}, st.Names())
	require.Panics(t, func() { s.Statement("nope") })
}
