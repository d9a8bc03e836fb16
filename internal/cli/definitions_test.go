package cli_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/contracts/deliveryset"
	"github.com/oceanway/core/internal/boundary"
	"github.com/oceanway/core/internal/cli"
	"github.com/oceanway/core/internal/dbtest"
	"github.com/oceanway/core/internal/outbox"
)

// definitionFile writes a first release definition as a canonical file.
func definitionFile(t *testing.T, setVersion, projectionVersion int64) string {
	t.Helper()
	d, err := deliveryset.Build(setVersion, "operations_read_model", projectionVersion)
	require.NoError(t, err)
	doc, err := d.Canonical()
	require.NoError(t, err)
	p := filepath.Join(t.TempDir(), "definition.json")
	require.NoError(t, os.WriteFile(p, doc, 0o600))
	return p
}

// TestDefinitionsCommand covers DS-6 from the command line: register is
// insert-or-compare of a strictly decoded definition and never activates;
// activation is explicit and only of a registered version.
func TestDefinitionsCommand(t *testing.T) {
	t.Parallel()
	b := dbtest.New(t, dbtest.Opts{Boundaries: []boundary.Boundary{boundary.Core}})
	ctx := t.Context()
	run := func(args ...string) mainResult {
		t.Helper()
		args = append(append([]string{"definitions"}, args...), "--core-dsn", b.DSNs[boundary.Core])
		var stdout, stderr bytes.Buffer
		code := cli.Main(args, strings.NewReader(""), &stdout, &stderr)
		return mainResult{code: code, stdout: stdout.String(), stderr: stderr.String()}
	}
	count := func() int {
		defs, err := outbox.Definitions(ctx, b.Core())
		require.NoError(t, err)
		return len(defs)
	}

	r := run("list")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "no definitions registered")

	f1 := definitionFile(t, 1, 1)
	r = run("register", "--file", f1, "--source-release", "test")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "definition 1 registered")
	r = run("register", "--file", f1) // DS-6: the same file twice is a no-op
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "already registered, identical (no change)")
	require.Equal(t, 1, count())

	// DS-6: the same version with another candidate is refused with the reason.
	r = run("register", "--file", definitionFile(t, 1, 2))
	require.Equal(t, 1, r.code)
	require.Contains(t, r.stderr, "deliverySetVersion 1 is registered with digest")

	// DS-5: a digest that does not recompute, an unknown field: refused before
	// the database is touched.
	doc, err := os.ReadFile(definitionFile(t, 2, 1))
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(doc, &m))
	m["deliverySetDefinitionDigest"] = strings.Repeat("a", 64)
	bad, err := json.Marshal(m)
	require.NoError(t, err)
	badFile := filepath.Join(t.TempDir(), "bad.json")
	require.NoError(t, os.WriteFile(badFile, bad, 0o600))
	r = run("register", "--file", badFile)
	require.Equal(t, 1, r.code)
	require.Contains(t, r.stderr, "invalid delivery set definition")
	delete(m, "deliverySetDefinitionDigest")
	m["extra"] = true
	bad, err = json.Marshal(m)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(badFile, bad, 0o600))
	r = run("register", "--file", badFile)
	require.Equal(t, 1, r.code)
	require.Contains(t, r.stderr, "invalid delivery set definition")
	require.Equal(t, 1, count())

	// Registration never activates.
	_, err = outbox.ActiveDefinition(ctx, b.Core())
	require.ErrorIs(t, err, outbox.ErrNoActiveDefinition)

	// Only a registered version can be activated; the first activation of a
	// database is explicit about its new projection (--initial).
	r = run("activate", "--version", "7", "--initial")
	require.Equal(t, 1, r.code)
	require.Contains(t, r.stderr, "definition not registered: 7")
	r = run("activate", "--version", "1")
	require.Equal(t, 1, r.code)
	require.Contains(t, r.stderr, "projection version is not ready")
	r = run("activate", "--version", "1", "--initial")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "definition 1 active")
	r = run("activate", "--version", "1", "--initial")
	require.Equal(t, 1, r.code)
	require.Contains(t, r.stderr, "already active")
	r = run("activate", "--version", "1")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "already active (no change)")

	// A second version with the same projection: registered, then switched.
	f2 := definitionFile(t, 2, 1)
	require.Equal(t, 0, run("register", "--file", f2).code)
	r = run("activate", "--version", "2", "--json")
	require.Equal(t, 0, r.code, r.stderr)
	var act struct {
		Activated struct{ DeliverySetVersion int64 }  `json:"activated"`
		Retired   *struct{ DeliverySetVersion int64 } `json:"retired"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &act))
	require.EqualValues(t, 2, act.Activated.DeliverySetVersion)
	require.NotNil(t, act.Retired)
	require.EqualValues(t, 1, act.Retired.DeliverySetVersion)

	r = run("list", "--json")
	require.Equal(t, 0, r.code, r.stderr)
	var rows []struct {
		DeliverySetVersion          int64  `json:"deliverySetVersion"`
		DeliverySetDefinitionDigest string `json:"deliverySetDefinitionDigest"`
		Status                      string `json:"status"`
		SourceRelease               string `json:"sourceRelease"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &rows))
	require.Len(t, rows, 2)
	require.Equal(t, "retired", rows[0].Status)
	require.Equal(t, "test", rows[0].SourceRelease)
	require.Equal(t, "active", rows[1].Status)

	// show prints the stored canonical document, which registers as a no-op.
	r = run("show")
	require.Equal(t, 0, r.code, r.stderr)
	doc2, err := os.ReadFile(f2)
	require.NoError(t, err)
	require.Equal(t, string(doc2)+"\n", r.stdout)
	r = run("show", "--version", "1")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, rows[0].DeliverySetDefinitionDigest)
}
