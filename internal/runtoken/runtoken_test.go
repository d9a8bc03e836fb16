package runtoken_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/internal/runtoken"
	"github.com/oceanway/core/internal/workload"
)

// Issue 33: a run execution token over the API is a permission Core
// signs; a token signed by any other key, of another type, or altered is
// refused.
func TestSignedRunTokenVerifiesOnlyUnderCoresKey(t *testing.T) {
	core, corePub, err := workload.Generate()
	require.NoError(t, err)
	other, _, err := workload.Generate()
	require.NoError(t, err)
	body := []byte(`{"kind":"RunExecutionToken@1"}`)

	s, err := runtoken.NewSigner(core)
	require.NoError(t, err)
	jws, err := s.Sign(body)
	require.NoError(t, err)
	again, err := s.Sign(body)
	require.NoError(t, err)
	require.Equal(t, jws, again, "the same token signs to the same JWS")

	v, err := runtoken.NewVerifier(corePub)
	require.NoError(t, err)
	got, err := v.Verify(jws)
	require.NoError(t, err)
	require.Equal(t, body, got)

	forger, err := runtoken.NewSigner(other)
	require.NoError(t, err)
	forged, err := forger.Sign(body)
	require.NoError(t, err)
	parts := strings.Split(jws, ".")
	tampered := parts[0] + "." + strings.TrimRight(parts[1], "=") + "e30" + "." + parts[2]
	workloadSigner, err := workload.NewSigner(workload.SignerConfig{Workload: "core", Key: core})
	require.NoError(t, err)
	workloadToken, err := workloadSigner.Sign("execution_api", "api:openRun")
	require.NoError(t, err)
	for name, bad := range map[string]string{"another key": forged, "altered payload": tampered,
		"a workload token of Core's key (typ JWT)": workloadToken, "not a JWS": "x"} {
		_, err := v.Verify(bad)
		require.ErrorIs(t, err, runtoken.ErrInvalid, name)
	}
}
