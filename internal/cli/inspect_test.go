package cli_test

import (
	"bytes"
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/internal/admin"
	"github.com/oceanway/core/internal/admin/admintest"
	"github.com/oceanway/core/internal/cli"
	"github.com/oceanway/core/internal/dbtest"
)

// reexecCLI, set in a test's environment, makes this test binary run the
// CLI instead of the tests: `demo --processes` starts its owner processes
// from its own executable, which under test is this binary.
const reexecCLI = "OCEANWAY_CLI_TEST_REEXEC"

func TestMain(m *testing.M) {
	if os.Getenv(reexecCLI) == "1" {
		os.Exit(cli.Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
	}
	dbtest.Main(m)
}

// inspect runs `oceanway inspect ARGS --database-url <test server>
// --db-prefix <the world's prefix>` in process.
func inspect(t *testing.T, w *admintest.World, args ...string) mainResult {
	t.Helper()
	srv := dbtest.Server(t)
	args = append(append([]string{"inspect"}, args...), "--database-url", srv.URL, "--db-prefix", w.Bundle.Prefix)
	var stdout, stderr bytes.Buffer
	code := cli.Main(args, strings.NewReader(""), &stdout, &stderr)
	return mainResult{code: code, stdout: stdout.String(), stderr: stderr.String()}
}

// tableRow matches a table row of the given cells separated by spaces.
func tableRow(cells ...string) *regexp.Regexp {
	quoted := make([]string, len(cells))
	for i, c := range cells {
		quoted[i] = regexp.QuoteMeta(c)
	}
	return regexp.MustCompile(`(?m)^` + strings.Join(quoted, `\s+`) + `\s*$`)
}

func TestInspectDeliveries(t *testing.T) {
	t.Parallel()
	w := admintest.NewWorld(t)
	r := inspect(t, w, "deliveries")
	require.Equal(t, 0, r.code, r.stderr)
	require.Regexp(t, tableRow("BOUNDARY", "DESTINATION", "PENDING", "RETRYING", "LEASED", "LEASE_EXPIRED", "ACKNOWLEDGED", "QUARANTINED", "TOTAL", "OLDEST_PENDING"), r.stdout)
	require.Regexp(t, `(?m)^core\s+core_operations\s+1\s+0\s+1\s+0\s+1\s+1\s+4\s+\S+\s*$`, r.stdout)
	require.Regexp(t, tableRow("core", "billing_finalization_coordinator", "0", "0", "0", "0", "0", "0", "0", "-"), r.stdout)
	require.Regexp(t, `(?m)^execution\s+metering_input_processor\s+1\s+0\s+0\s+0\s+0\s+0\s+1\s+\S+\s*$`, r.stdout)
	// The world has no gateway and metering databases: skipped, said on stderr.
	require.Contains(t, r.stderr, "skipping database "+w.Bundle.Prefix+"_gateway")
	require.Contains(t, r.stderr, "skipping database "+w.Bundle.Prefix+"_metering")

	r = inspect(t, w, "deliveries", "--json")
	require.Equal(t, 0, r.code, r.stderr)
	var res admin.DeliveriesResult
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &res))
	require.Len(t, res.Boundaries, 2)
	for _, c := range res.Deliveries {
		if c.Boundary == "core" && c.Destination == "core_operations" {
			require.Equal(t, [5]int64{1, 1, 1, 1, 4}, [5]int64{c.Pending, c.Leased, c.Acknowledged, c.Quarantined, c.Total})
		}
	}
}

func TestInspectQuarantine(t *testing.T) {
	t.Parallel()
	w := admintest.NewWorld(t)
	r := inspect(t, w, "quarantine")
	require.Equal(t, 0, r.code, r.stderr)
	require.Regexp(t, `(?m)^\S+Z\s+core\s+core_operations\s+`+w.QuarantinedEvent+`\s+wallet\.reserved@2\.0\s+2\s+digest_conflict\s+`+
		regexp.QuoteMeta("digest_conflict: "+admintest.HostileReason)+`\s*$`, r.stdout)
	require.Contains(t, r.stdout, "1 of 1 quarantined deliveries shown")

	admintest.QuarantinePending(t, w)
	r = inspect(t, w, "quarantine", "--quarantine-limit", "1", "--json")
	require.Equal(t, 0, r.code, r.stderr)
	var res admin.QuarantineResult
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &res))
	require.Equal(t, int64(2), res.Quarantine.Total)
	require.True(t, res.Quarantine.Truncated)
	require.Len(t, res.Quarantine.Items, 1)
	require.Equal(t, w.PendingEvent, res.Quarantine.Items[0].EventID)
}

func TestInspectEventShowsAttemptHistory(t *testing.T) {
	t.Parallel()
	w := admintest.NewWorld(t)
	r := inspect(t, w, "event", w.QuarantinedEvent)
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "1 event(s) for event "+w.QuarantinedEvent)
	require.Contains(t, r.stdout, "event "+w.QuarantinedEvent+"  wallet.reserved@2.0  [core]  not published")
	require.Regexp(t, `(?m)^\s+envelope digest\s+jcs-sha256-v1:[0-9a-f]{64}$`, r.stdout)
	require.Regexp(t, `(?m)^\s+definition\s+version 1, schema 1, jcs-sha256-v1:[0-9a-f]{64}$`, r.stdout)
	require.Regexp(t, `(?m)^\s+envelope\s+\{"aggregateId":`, r.stdout)
	require.Contains(t, r.stdout, "delivery core_operations -> operations_projector: quarantined, 2 attempt(s), last error digest_conflict")
	require.Contains(t, r.stdout, "quarantined  ")
	require.Regexp(t, `(?m)^\s+1\s+[0-9a-f-]{36}\s+\S+Z\s+\S+Z\s+retryable\s+retry_scheduled\s+consumer_busy\s*$`, r.stdout)
	require.Regexp(t, `(?m)^\s+2\s+[0-9a-f-]{36}\s+\S+Z\s+\S+Z\s+non_retryable\s+quarantined\s+digest_conflict\s*$`, r.stdout)

	// The in-flight attempt.
	r = inspect(t, w, "event", w.LeasedEvent)
	require.Equal(t, 0, r.code, r.stderr)
	require.Regexp(t, `(?m)^\s+lease\s+admin-test until \S+Z$`, r.stdout)
	require.Regexp(t, `(?m)^\s+1\s+[0-9a-f-]{36}\s+\S+Z\s+-\s+unfinished\s+-\s+-\s*$`, r.stdout)

	r = inspect(t, w, "event", w.AckedEvent, "--json")
	require.Equal(t, 0, r.code, r.stderr)
	var res admin.LookupResult
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &res))
	require.Len(t, res.Events, 1)
	e := res.Events[0]
	require.NotNil(t, e.PublishedAt)
	require.Equal(t, "acknowledged", e.Deliveries[0].Status)
	require.Equal(t, "acknowledged", e.Deliveries[0].Attempts[0].Outcome)
	require.NotNil(t, e.Deliveries[0].Ack)
}

func TestInspectRunAndReservation(t *testing.T) {
	t.Parallel()
	w := admintest.NewWorld(t)
	for _, args := range [][]string{{"run", w.RunA}, {"reservation", w.Res}} {
		r := inspect(t, w, args...)
		require.Equal(t, 0, r.code, r.stderr)
		require.Contains(t, r.stdout, "3 event(s) for "+args[0]+" "+args[1])
		for _, id := range []string{w.AckedEvent, w.QuarantinedEvent, w.ExecutionEvent} {
			require.Contains(t, r.stdout, "event "+id+"  ")
		}
		require.Contains(t, r.stdout, "event "+w.ExecutionEvent+"  execution.attempt-eligibility.finalized@1  [execution]  not published")

		r = inspect(t, w, append(args, "--json")...)
		require.Equal(t, 0, r.code, r.stderr)
		var res admin.LookupResult
		require.NoError(t, json.Unmarshal([]byte(r.stdout), &res))
		require.Len(t, res.Events, 3)
	}
}

func TestInspectDefinitionsAndCompleteness(t *testing.T) {
	t.Parallel()
	w := admintest.NewWorld(t)
	r := inspect(t, w, "definitions")
	require.Equal(t, 0, r.code, r.stderr)
	require.Regexp(t, `(?m)^core\s+1\s+1\s+jcs-sha256-v1:[0-9a-f]{64}\s+active\s+\S+Z\s+14\s+13\s+billing_finalization_coordinator,billing_settlement_catch_up,core_operations,metering_input_processor\s*$`, r.stdout)
	require.Regexp(t, `(?m)^execution\s+1\s+1\s+`, r.stdout)
	require.Regexp(t, `(?m)^core\s+operations_read_model\s+1\s+1\s+\S+Z\s*$`, r.stdout)

	r = inspect(t, w, "completeness")
	require.Equal(t, 0, r.code, r.stderr)
	require.Regexp(t, `(?m)^core\s+incomplete\s+4\s+1\s+3\s+\S+\s+0\s+0\s+open_mandatory_deliveries,quarantined_mandatory_deliveries\s*$`, r.stdout)
	require.Regexp(t, tableRow("core", "core_operations", "4", "2", "1", "1"), r.stdout)
	require.Regexp(t, `(?m)^operations projection\s+operations_read_model@1$`, r.stdout)
	require.Regexp(t, `(?m)^\s+verification\s+unverified$`, r.stdout)
	require.Regexp(t, `(?m)^\s+reason\s+no_completed_snapshot$`, r.stdout)

	r = inspect(t, w, "completeness", "--json")
	require.Equal(t, 0, r.code, r.stderr)
	var res admin.CompletenessResult
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &res))
	require.Equal(t, admin.VerdictIncomplete, res.Outbox[0].Verdict)
	require.Equal(t, "unverified", res.Operations.VerificationState)
}

func TestInspectNotFoundAndInvalidIDs(t *testing.T) {
	t.Parallel()
	w := admintest.NewWorld(t)
	r := inspect(t, w, "event", "00000000-0000-0000-0000-000000000000")
	require.Equal(t, 1, r.code)
	require.Empty(t, r.stdout)
	require.Contains(t, r.stderr, "nothing found: no event for event id 00000000-0000-0000-0000-000000000000 in core, execution")

	// Garbage is rejected before connecting: the server below does not exist.
	for _, args := range [][]string{{"event", "x"}, {"run", "'; DROP TABLE outbox.outbox_events; --"}, {"reservation", "{" + w.Res + "}"}} {
		var stdout, stderr bytes.Buffer
		code := cli.Main(append([]string{"inspect"}, append(args, "--database-url", "postgres://nobody@127.0.0.1:1/x?connect_timeout=1")...),
			strings.NewReader(""), &stdout, &stderr)
		require.Equal(t, 1, code)
		require.Empty(t, stdout.String())
		require.Contains(t, stderr.String(), "is not an exact UUID", args)
		require.NotContains(t, stderr.String(), "connect")
	}

	// Missing argument.
	r = inspect(t, w, "run")
	require.Equal(t, 1, r.code)
	require.Contains(t, r.stderr, "accepts 1 arg")
}

func TestInspectConnectionErrors(t *testing.T) {
	t.Parallel()
	srv := dbtest.Server(t)
	prefix := dbtest.NewPrefix(t)
	var stdout, stderr bytes.Buffer
	code := cli.Main([]string{"inspect", "deliveries", "--database-url", srv.URL, "--db-prefix", prefix}, strings.NewReader(""), &stdout, &stderr)
	require.Equal(t, 1, code)
	require.Empty(t, stdout.String())
	require.Contains(t, stderr.String(), "no boundary database found")

	// A boundary given its own DSN must answer.
	w := admintest.NewWorld(t)
	stdout.Reset()
	stderr.Reset()
	code = cli.Main([]string{"inspect", "deliveries", "--database-url", srv.URL, "--db-prefix", w.Bundle.Prefix,
		"--gateway-dsn", srv.DatabaseURL(prefix + "_gateway")}, strings.NewReader(""), &stdout, &stderr)
	require.Equal(t, 1, code)
	require.Contains(t, stderr.String(), "connect gateway")

	// Per-boundary DSNs alone.
	stdout.Reset()
	stderr.Reset()
	code = cli.Main([]string{"inspect", "deliveries", "--db-prefix", "absent_prefix_x",
		"--database-url", srv.URL, "--core-dsn", w.Bundle.DSNs["core"]}, strings.NewReader(""), &stdout, &stderr)
	require.Equal(t, 0, code, stderr.String())
	require.Regexp(t, `(?m)^core\s+core_operations\s+1\s+0\s+1\s+0\s+1\s+1\s+4\s+`, stdout.String())
	require.NotContains(t, stdout.String(), "execution")
}
