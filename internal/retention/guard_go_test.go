package retention_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/internal/boundary"
	"github.com/oceanway/core/internal/dbtest"
	"github.com/oceanway/core/internal/retention"
)

func sumHex(b []byte) string { s := sha256.Sum256(b); return hex.EncodeToString(s[:]) }

// reformatDeliveryTime rewrites, in the archive's one segment, the first
// delivery timestamp "…+00:00" as "…Z": the same instant, still canonical
// JSON, so the segment and its manifest (both re-addressed) verify, but a
// restore re-exports the database's own text and digests differently.
func reformatDeliveryTime(t *testing.T, dir string) {
	t.Helper()
	manifests, err := filepath.Glob(filepath.Join(dir, "manifests", "*.json"))
	require.NoError(t, err)
	require.Len(t, manifests, 1)
	m, err := os.ReadFile(manifests[0])
	require.NoError(t, err)
	objects, err := filepath.Glob(filepath.Join(dir, "objects", "*.json"))
	require.NoError(t, err)
	for _, o := range objects {
		seg, err := os.ReadFile(o)
		require.NoError(t, err)
		at := bytes.Index(seg, []byte(`"deliveries":[`))
		if at < 0 {
			continue // a definition
		}
		ts := bytes.Index(seg[at:], []byte(`+00:00"`))
		require.Positive(t, ts)
		changed := append(append(append([]byte(nil), seg[:at+ts]...), 'Z', '"'), seg[at+ts+len(`+00:00"`):]...)
		oldSum, newSum := strings.TrimSuffix(filepath.Base(o), ".json"), sumHex(changed)
		oldEntry := fmt.Sprintf(`"bytes":%d,"role":"segment","sha256":"%s"`, len(seg), oldSum)
		require.Equal(t, 1, bytes.Count(m, []byte(oldEntry)), "manifest entry of the segment")
		m = bytes.Replace(m, []byte(oldEntry), []byte(fmt.Sprintf(`"bytes":%d,"role":"segment","sha256":"%s"`, len(changed), newSum)), 1)
		require.NoError(t, os.Remove(o))
		require.NoError(t, os.WriteFile(filepath.Join(dir, "objects", newSum+".json"), changed, 0o644))
		require.NoError(t, os.Remove(manifests[0]))
		require.NoError(t, os.WriteFile(filepath.Join(dir, "manifests", sumHex(m)+".json"), m, 0o644))
		return
	}
	t.Fatal("no segment in the archive")
}

// TestGuardGoRestoreSegmentMismatch (RET-1): the restore drill compares
// every segment re-exported from the scratch database with the archive's
// bytes; an archive that verifies (canonical, every digest recomputes) but
// whose restored rows do not reproduce it is ErrRestoreMismatch, never a
// reproduced drill (the drill that the controlled delete requires).
// Clause: RET-1.restore-segment-mismatch.
func TestGuardGoRestoreSegmentMismatch(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	f := setupHistory(t, 1, 0)
	dir := t.TempDir()
	scratch := dbtest.New(t, dbtest.Opts{Boundaries: []boundary.Boundary{boundary.Core}, MaxConns: 4})
	_, err := retention.Archive(ctx, f.pool, retention.ArchiveParams{OlderThan: time.Microsecond, Dir: dir, Drill: scratch.Core()})
	require.NoError(t, err)
	reformatDeliveryTime(t, dir)
	_, err = retention.Verify(dir)
	require.NoError(t, err, "the changed archive still verifies")
	drill, err := retention.Restore(ctx, scratch.Core(), dir)
	require.ErrorIs(t, err, retention.ErrRestoreMismatch) // RET-1.restore-segment-mismatch
	require.ErrorContains(t, err, "the restored segment digests to")
	require.Nil(t, drill)
}
