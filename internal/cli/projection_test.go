package cli_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/internal/dbtest"
)

// Issue 31 item 7 (DS-8): `oceanway projection shadow` feeds the new
// version through the projector with the same Billing owner reads serve
// wires, so on a demo database it applies every pair the online projector
// applied (the billing finalization, settlement transition and case events
// included), nothing waits, `projection cutover` proves the version ready
// and switches, and the rebuilt version's fingerprint equals the one the
// online projector built. Without the reads the shadow left every billing
// event waiting and the cutover refused ("covers N of M candidate members").
func TestProjectionShadowAndCutoverApplyEveryPairOfADemo(t *testing.T) {
	// Not parallel: the demo runs every boundary's dispatchers (see
	// TestDemoCommandPassesAndRefusesReuse).
	srv := dbtest.Server(t)
	prefix := dbtest.NewPrefix(t)
	conn := []string{"--database-url", srv.URL, "--db-prefix", prefix}
	demo := runMain(t, nil, append([]string{"demo", "--runs", "12", "--plain"}, conn...)...)
	require.Equal(t, 0, demo.code, demo.stdout+demo.stderr)

	type print struct {
		Receipts int64  `json:"receipts"`
		SHA256   string `json:"sha256"`
	}
	fp := func(version string) print {
		r := runMain(t, nil, append([]string{"projection", "fingerprint", "--projection-version", version, "--json"}, conn...)...)
		require.Equal(t, 0, r.code, r.stderr)
		var p print
		require.NoError(t, json.Unmarshal([]byte(r.stdout), &p))
		return p
	}
	online := fp("1")

	sh := runMain(t, nil, append([]string{"projection", "shadow", "--projection-version", "2", "--json"}, conn...)...)
	require.Equal(t, 0, sh.code, sh.stderr)
	var shadow struct {
		Feed struct {
			Applied int64 `json:"applied"`
			Waiting int64 `json:"waiting"`
		} `json:"feed"`
		Fingerprint print `json:"fingerprint"`
	}
	require.NoError(t, json.Unmarshal([]byte(sh.stdout), &shadow))
	require.Zero(t, shadow.Feed.Waiting, "every source event applied: %s", sh.stdout)
	require.Equal(t, online.Receipts, shadow.Feed.Applied)
	require.Equal(t, online, shadow.Fingerprint, "the rebuilt version equals the online one")

	cut := runMain(t, nil, append([]string{"projection", "cutover", "--projection-version", "2", "--json"}, conn...)...)
	require.Equal(t, 0, cut.code, cut.stdout+cut.stderr)
	var res struct {
		ProjectionVersion int64 `json:"projectionVersion"`
		CandidateMembers  int64 `json:"candidateMembers"`
	}
	require.NoError(t, json.Unmarshal([]byte(cut.stdout), &res))
	require.EqualValues(t, 2, res.ProjectionVersion)
	require.Equal(t, online.Receipts, res.CandidateMembers)
	require.Equal(t, online, fp("2"))
}
