package billing_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/contracts/billing"
	"github.com/oceanway/core/contracts/digest"
	"github.com/oceanway/core/contracts/envelope"
	"github.com/oceanway/core/contracts/goldentest"
	"github.com/oceanway/core/contracts/jcs"
	"github.com/oceanway/core/contracts/kinds"
	"github.com/oceanway/core/contracts/strict"
)

var committedAt = time.Date(2026, 11, 30, 12, 0, 0, 123456000, time.UTC)

func q(ref string) strict.Quadruple {
	h := sha256.Sum256([]byte(ref))
	return strict.Quadruple{Ref: ref, SchemaVersion: "1", DigestAlgorithmVersion: digest.JCSSHA256V1, Digest: hex.EncodeToString(h[:])}
}

func committedFixture(t *testing.T, outcome, settled, released, project string) *billing.Committed {
	t.Helper()
	state := billing.ReservationSettled
	if outcome == billing.SuccessReleaseAll {
		state = billing.ReservationReleased
	}
	c := &billing.Committed{
		Committed: strict.Quadruple{Ref: "bfc-0195f4a8-0000-7000-8000-000000000001"}, TenantKind: envelope.TenantOrganization,
		TenantID: "0195f4a8-0000-7000-8000-000000000030", WorkspaceID: "0195f4a8-0000-7000-8000-000000000031", ProjectID: project,
		BillingReservationID: "0195f4a8-0000-7000-8000-000000000041", BillingAccountID: "0195f4a8-0000-7000-8000-000000000040",
		RunID: "0195f4a8-0000-7000-8000-000000000020", FenceID: "0195f4a8-0000-7000-8000-000000000050", FenceRevision: 3,
		WorkGeneration: 2, OperationID: "0195f4a8-0000-7000-8000-000000000051", Work: q("bfw-2"), RunAdmissionManifest: q("ram-1"),
		ClosureEventID: "0195f4a8-0000-7000-8000-000000000060", ClosureEnvelopeDigest: q("closure-envelope").Digested(),
		CoordinatorReceipt: q("bfcr-1"), RunExecutionFinalization: q("ref-1"), FinalizationStateVersion: 1,
		AttemptSetManifest: q("asm-1"), AttemptCount: 2, InputManifest: q("fim-1"), ValidationBundle: q("fvb-1"), Decision: q("bfd-1"),
		Outcome: outcome, EconomicIdentity: envelope.SettlementEconomicIdentityV1{Kind: "credits"},
		ReservedAmount: "1500", SettledAmount: settled, ReleasedAmount: released, ReservationState: state,
		LedgerPostingGroupID: "0195f4a8-0000-7000-8000-000000000070", Postings: billing.FinalizationPostings("1500", settled, released),
		CommittedAt: committedAt,
	}
	_, err := c.Seal()
	require.NoError(t, err)
	return c
}

type committedGolden struct {
	name string
	obj  *billing.Committed
}

func committedGoldens(t *testing.T) []committedGolden {
	return []committedGolden{
		{"settle_and_release_remainder", committedFixture(t, billing.SuccessSettleAndReleaseRemainder, "1234.5", "265.5", "0195f4a8-0000-7000-8000-000000000032")},
		{"settle_everything", committedFixture(t, billing.SuccessSettleAndReleaseRemainder, "1500", "0", "")},
		{"release_all", committedFixture(t, billing.SuccessReleaseAll, "0", "1500", "")},
	}
}

func committedKind(t *testing.T) kinds.Kind {
	t.Helper()
	k, err := kinds.Lookup(billing.KindBillingFinalizationCommitted)
	require.NoError(t, err)
	return k
}

// CT-4: the goldens of BillingFinalizationCommitted@1 (raw, canonical,
// digest) validate through contracts/kinds and their embedded digest is the
// candidate digest; decoding returns exactly the sealed fact.
func TestCommittedGolden_CT4(t *testing.T) {
	t.Parallel()
	k := committedKind(t)
	for _, g := range committedGoldens(t) {
		dir := filepath.Join("testdata", "golden", billing.KindBillingFinalizationCommitted, g.name)
		goldentest.Check(t, filepath.Join(dir, "raw.json"), goldentest.Indent(t, g.obj.ToJSON()))
		raw, err := os.ReadFile(filepath.Join(dir, "raw.json"))
		require.NoError(t, err)
		require.NoError(t, k.Validate(raw), g.name)
		canonical, err := jcs.Canonicalize(raw)
		require.NoError(t, err)
		goldentest.Check(t, filepath.Join(dir, "canonical.json"), canonical)
		d, err := k.Digest(raw)
		require.NoError(t, err)
		goldentest.Check(t, filepath.Join(dir, "digest.txt"), []byte(d.String()+"\n"))
		require.Equal(t, g.obj.Committed.Digest, d.Value)
		back, err := billing.DecodeCommitted(canonical)
		require.NoError(t, err)
		require.Equal(t, g.obj, back)
	}
}

type committedNegative struct {
	name, requirement string
	base              string
	mutate            func(m map[string]any)
	want              error
}

// Every reject of BillingFinalizationCommitted@1, with its reason (BI-1, CT-2, CT-3).
func TestCommittedNegatives_BI1(t *testing.T) {
	t.Parallel()
	gs := committedGoldens(t)
	base := map[string]*billing.Committed{}
	for _, g := range gs {
		base[g.name] = g.obj
	}
	type entry struct {
		Kind        string `json:"kind"`
		File        string `json:"file"`
		Requirement string `json:"requirement"`
		Expected    string `json:"expected"`
	}
	var entries []entry
	for _, n := range []committedNegative{
		{"does_not_add_up", "BI-1", "settle_and_release_remainder", func(m map[string]any) { m["releasedAmount"] = "266" }, billing.ErrAmountsDoNotAddUp},
		{"settles_above_reservation", "BI-1", "settle_everything", func(m map[string]any) { m["settledAmount"] = "1600" }, billing.ErrAmountsDoNotAddUp},
		{"release_all_settles", "BI-1", "release_all", func(m map[string]any) {
			m["settledAmount"], m["releasedAmount"] = "1", "1499"
		}, billing.ErrOutcomeState},
		{"blocked_outcome", "BI-1", "release_all", func(m map[string]any) { m["billingFinalizationDecision"] = "blocked" }, strict.ErrUnknownEnum},
		{"reconciliation_outcome", "BI-1", "release_all", func(m map[string]any) { m["billingFinalizationDecision"] = "reconciliation_required" }, strict.ErrUnknownEnum},
		{"state_mismatch", "BI-1", "release_all", func(m map[string]any) { m["reservationState"] = "settled" }, billing.ErrOutcomeState},
		{"unbalanced_postings", "BI-1", "settle_and_release_remainder", func(m map[string]any) {
			m["ledgerPostings"].([]any)[1].(map[string]any)["amount"] = "1234"
		}, billing.ErrPostings},
		{"missing_posting", "BI-1", "settle_and_release_remainder", func(m map[string]any) {
			m["ledgerPostings"] = m["ledgerPostings"].([]any)[:2]
		}, billing.ErrPostings},
		{"float_amount", "CT-2", "settle_and_release_remainder", func(m map[string]any) { m["settledAmount"] = "1.2345e3" }, strict.ErrInvalidValue},
		{"number_amount", "CT-2", "settle_and_release_remainder", func(m map[string]any) { m["settledAmount"] = int64(1234) }, strict.ErrWrongType},
		{"unknown_field", "CT-2", "release_all", func(m map[string]any) { m["latest"] = true }, strict.ErrUnknownField},
		{"bare_decision_ref", "CT-3", "release_all", func(m map[string]any) { delete(m, "billingFinalizationDecisionDigest") }, strict.ErrMissingField},
		{"digest_does_not_recompute", "CT-3", "settle_and_release_remainder", func(m map[string]any) { m["finalizationFenceRevision"] = int64(4) }, digest.ErrMismatch},
	} {
		m := base[n.base].ToJSON()
		n.mutate(m)
		file := filepath.Join(billing.KindBillingFinalizationCommitted, n.name+".json")
		goldentest.Check(t, filepath.Join("testdata", "negative", file), goldentest.Indent(t, m))
		raw, err := os.ReadFile(filepath.Join("testdata", "negative", file))
		require.NoError(t, err)
		require.ErrorIs(t, billing.ValidateCommitted(raw), n.want, file)
		entries = append(entries, entry{Kind: billing.KindBillingFinalizationCommitted, File: file, Requirement: n.requirement, Expected: n.want.Error()})
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].File < entries[j].File })
	b, err := json.MarshalIndent(entries, "", "  ")
	require.NoError(t, err)
	goldentest.Check(t, filepath.Join("testdata", "negative", billing.KindBillingFinalizationCommitted, "manifest.json"), append(b, '\n'))
}

// Seal refuses a fact whose amounts do not add up.
func TestCommittedSealRefusesInvalid(t *testing.T) {
	t.Parallel()
	c := committedFixture(t, billing.SuccessReleaseAll, "0", "1500", "")
	c.ReleasedAmount = "1400"
	_, err := c.Seal()
	require.ErrorIs(t, err, billing.ErrInvalidCommitted)
	require.ErrorIs(t, err, billing.ErrAmountsDoNotAddUp)
}

// Exact decimals round-trip; nothing goes through a float.
func TestAmountsAreExact(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"0", "1", "0.1", "123456789012345678901234567890.12345678901234567"} {
		r, err := billing.ParseAmount(s)
		require.NoError(t, err, s)
		back, ok := billing.FormatAmount(r)
		require.True(t, ok)
		require.Equal(t, s, back)
	}
	for _, s := range []string{"-1", "1e3", "01", "1.0", ".5"} {
		_, err := billing.ParseAmount(s)
		require.Error(t, err, s)
	}
}
