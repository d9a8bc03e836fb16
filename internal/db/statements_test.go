package db

import (
	"testing"
	"testing/fstest"

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
