package reconciliation_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/contracts/goldentest"
	"github.com/oceanway/core/contracts/jcs"
	rc "github.com/oceanway/core/contracts/reconciliation"
)

type golden struct {
	kind, name string
	obj        interface{ ToJSON() map[string]any }
}

func goldens(t testing.TB) []golden {
	var out []golden
	for _, v := range []struct {
		name string
		v    variant
	}{{"generation_1", firstGeneration}, {"generation_2", secondGeneration}} {
		c := buildChain(t, v.v, nil)
		out = append(out,
			golden{rc.KindCaseIdentityReservation, v.name, c.identity},
			golden{rc.KindCommandRequest, v.name, c.req},
			golden{rc.KindImpactPreview, v.name, c.preview},
			golden{rc.KindApproval, v.name, c.approval},
			golden{rc.KindJitActivation, v.name, c.jit},
			golden{rc.KindCandidate, v.name, c.cand},
			golden{rc.KindDecision, v.name, c.dec},
			golden{rc.KindGrantClaims, v.name, c.claims},
			golden{rc.KindGrantExchangeResult, v.name, c.exchange},
			golden{rc.KindApplied, v.name, c.applied},
		)
	}
	first, second := lateIdentities(t)
	out = append(out, golden{rc.KindLateCaseIdentityReservation, "generation_1", first},
		golden{rc.KindLateCaseIdentityReservation, "generation_2", second})
	return append(out, lateGoldens(t)...)
}

// lateGoldens: the late settlement command chain in two variants (credits,
// case generation 1; money{EUR}, case generation 2), plus the applied
// fact's settlement_transition branch.
func lateGoldens(t testing.TB) []golden {
	var out []golden
	for _, v := range []struct {
		name string
		v    lateVariant
	}{{"credits_generation_1", lateFirst}, {"money_generation_2", lateSecond}} {
		c := buildLateChain(t, v.v, nil)
		out = append(out,
			golden{rc.KindLateCommandRequest, v.name, c.req},
			golden{rc.KindLateImpactPreview, v.name, c.preview},
			golden{rc.KindLateApproval, v.name, c.approval},
			golden{rc.KindLateJitActivation, v.name, c.jit},
			golden{rc.KindLateCandidate, v.name, c.cand},
			golden{rc.KindLateDecision, v.name, c.dec},
			golden{rc.KindLateGrantClaims, v.name, c.claims},
			golden{rc.KindFundingDecision, v.name, c.funding},
			golden{rc.KindLateResult, v.name, c.result},
			golden{rc.KindCaseResolutionApplied, v.name, c.applied},
		)
	}
	_, moot := mootingTransition(t, buildLateChain(t, lateFirst, nil))
	return append(out, golden{rc.KindCaseResolutionApplied, "settlement_transition", moot})
}

func contract(t testing.TB, kind string) rc.Contract {
	t.Helper()
	for _, c := range rc.Contracts() {
		if c.Name == kind {
			return c
		}
	}
	t.Fatalf("unknown kind %s", kind)
	return rc.Contract{}
}

// CT-4, OP-1: every golden is regenerated from the fixtures and
// byte-compared; the raw file decodes strictly, its embedded digest
// recomputes, and the canonical bytes and digest match the files.
func TestGolden_CT4_OP1(t *testing.T) {
	t.Parallel()
	perKind := map[string]int{}
	for _, g := range goldens(t) {
		perKind[g.kind]++
		c := contract(t, g.kind)
		dir := filepath.Join("testdata", "golden", g.kind, g.name)
		goldentest.Check(t, filepath.Join(dir, "raw.json"), goldentest.Indent(t, g.obj.ToJSON()))
		raw, err := os.ReadFile(filepath.Join(dir, "raw.json"))
		require.NoError(t, err)
		require.NoError(t, c.Validate(raw), dir)
		canonical, err := jcs.Canonicalize(raw)
		require.NoError(t, err)
		goldentest.Check(t, filepath.Join(dir, "canonical.json"), canonical)
		if c.Digest == nil { // the grant claims: named by the JWS's sha256
			continue
		}
		d, err := c.Digest(raw)
		require.NoError(t, err)
		goldentest.Check(t, filepath.Join(dir, "digest.txt"), []byte(d.String()+"\n"))
		require.Equal(t, g.obj.(rc.Sealed).Quad().Digest, d.Value, "embedded digest is the candidate digest")
	}
	for _, c := range rc.Contracts() {
		require.GreaterOrEqual(t, perKind[c.Name], 2, c.Name)
	}
}

// decode runs the kind's typed decoder.
func decode(kind string, body []byte) (interface{ ToJSON() map[string]any }, error) {
	switch kind {
	case rc.KindCaseIdentityReservation:
		return rc.DecodeCaseIdentityReservation(body)
	case rc.KindCommandRequest:
		return rc.DecodeCommandRequest(body)
	case rc.KindImpactPreview:
		return rc.DecodeImpactPreview(body)
	case rc.KindApproval:
		return rc.DecodeApproval(body)
	case rc.KindJitActivation:
		return rc.DecodeJitActivation(body)
	case rc.KindCandidate:
		return rc.DecodeCandidate(body)
	case rc.KindDecision:
		return rc.DecodeDecision(body)
	case rc.KindGrantClaims:
		return rc.DecodeGrantClaims(body)
	case rc.KindGrantExchangeResult:
		return rc.DecodeGrantExchangeResult(body)
	case rc.KindApplied:
		return rc.DecodeApplied(body)
	case rc.KindLateCaseIdentityReservation:
		return rc.DecodeLateCaseIdentityReservation(body)
	case rc.KindLateCommandRequest:
		return rc.DecodeLateCommandRequest(body)
	case rc.KindLateImpactPreview:
		return rc.DecodeLateImpactPreview(body)
	case rc.KindLateApproval:
		return rc.DecodeLateApproval(body)
	case rc.KindLateJitActivation:
		return rc.DecodeLateJitActivation(body)
	case rc.KindLateCandidate:
		return rc.DecodeLateCandidate(body)
	case rc.KindLateDecision:
		return rc.DecodeLateDecision(body)
	case rc.KindLateGrantClaims:
		return rc.DecodeLateGrantClaims(body)
	case rc.KindFundingDecision:
		return rc.DecodeFundingDecision(body)
	case rc.KindLateResult:
		return rc.DecodeLateResult(body)
	case rc.KindCaseResolutionApplied:
		return rc.DecodeCaseResolutionApplied(body)
	}
	return nil, fmt.Errorf("no decoder for %s", kind)
}

// The typed decoders return exactly the sealed object.
func TestDecodeRoundTrip(t *testing.T) {
	t.Parallel()
	for _, g := range goldens(t) {
		body, err := jcs.Marshal(g.obj.ToJSON())
		require.NoError(t, err)
		back, err := decode(g.kind, body)
		require.NoError(t, err, g.kind)
		require.Equal(t, g.obj, back, g.kind+"/"+g.name)
	}
}

// CT-2: whatever a strict decoder accepts is exactly what its typed object
// writes back (nothing read is dropped or invented), and nothing panics.
func FuzzDecode(f *testing.F) {
	goldentest.AddSeeds(f, "testdata/golden/*/*/raw.json", "testdata/negative/*/*.json")
	f.Fuzz(func(t *testing.T, doc []byte) {
		for _, c := range rc.Contracts() {
			x, err := decode(c.Name, doc)
			if err != nil {
				continue
			}
			want, err := jcs.Canonicalize(doc)
			require.NoError(t, err)
			got, err := jcs.Marshal(x.ToJSON())
			require.NoError(t, err)
			require.Equal(t, string(want), string(got), c.Name)
		}
	})
}
