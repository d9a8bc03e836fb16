package cli

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/internal/admin/admintest"
	"github.com/oceanway/core/internal/dbtest"
	"github.com/oceanway/core/internal/operations/readmodel"
)

// OPS-4 under serve: the periodic job records the completeness proof, so
// `oceanway inspect completeness` answers verified (current) for a running
// system instead of unverified; it stops with its context.
func TestOPS4ServeRecordsCompleteness(t *testing.T) {
	t.Parallel()
	w := admintest.NewWorld(t)
	core := w.Bundle.Core()
	rm := readmodel.New(core)
	c, err := rm.Completeness(t.Context(), readmodel.Params{})
	require.NoError(t, err)
	require.Equal(t, readmodel.Unverified, c.VerificationState)

	ctx, cancel := context.WithCancel(t.Context())
	wait := startCompletenessProofs(ctx, core, 10*time.Millisecond, slog.New(slog.DiscardHandler))
	require.Eventually(t, func() bool {
		c, err := rm.Completeness(t.Context(), readmodel.Params{})
		return err == nil && c.VerificationState == readmodel.Verified && c.SnapshotCurrency == readmodel.VerifiedCurrent
	}, 10*time.Second, 10*time.Millisecond)
	cancel()
	wait()

	srv := dbtest.Server(t)
	var stdout, stderr bytes.Buffer
	code := Main([]string{"inspect", "completeness", "--database-url", srv.URL, "--db-prefix", w.Bundle.Prefix},
		strings.NewReader(""), &stdout, &stderr)
	require.Equal(t, 0, code, stderr.String())
	require.Contains(t, stdout.String(), readmodel.VerifiedCurrent)
	require.NotContains(t, stdout.String(), readmodel.Unverified)
}
