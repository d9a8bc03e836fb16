package billing_test

import (
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
	"github.com/oceanway/core/contracts/strict"
)

var settlementAt = time.Date(2026, 3, 1, 13, 0, 0, 250000000, time.UTC)

func settlementQuad(ref string, fill byte) strict.Quadruple {
	b := make([]byte, 64)
	for i := range b {
		b[i] = fill
	}
	return strict.Quadruple{Ref: ref, SchemaVersion: "1", DigestAlgorithmVersion: digest.JCSSHA256V1, Digest: string(b)}
}

func settlementDimensionFixture() billing.SettlementDimension {
	return billing.SettlementDimension{
		BillingReservationID: "0195f4a8-0000-7000-8000-000000000041", BillingAccountID: "0195f4a8-0000-7000-8000-000000000040",
		RunID: "0195f4a8-0000-7000-8000-000000000020", RunStepID: "0195f4a8-0000-7000-8000-000000000050",
		ExecutionAttemptID: "0195f4a8-0000-7000-8000-000000000060", ChargeDimensionKey: "text.output_tokens",
		EconomicIdentity: envelope.SettlementEconomicIdentityV1{Kind: "credits"},
	}
}

func settlementInput(version int64, fill byte) billing.SettlementInput {
	return billing.SettlementInput{Snapshot: settlementQuad("sis-"+string('0'+rune(version)), fill), StateVersion: version}
}

func sealedSettlement[T billing.SettlementSealed](t *testing.T, x T) T {
	t.Helper()
	_, err := billing.SealSettlement(x)
	require.NoError(t, err)
	return x
}

type settlementGolden struct {
	kind, name string
	obj        billing.SettlementSealed
}

func settlementGoldens(t *testing.T) []settlementGolden {
	dim := settlementDimensionFixture()
	money := dim
	money.EconomicIdentity = envelope.SettlementEconomicIdentityV1{Kind: "money", Currency: "EUR"}
	basis := digest.Digest{Algorithm: digest.JCSSHA256V1, Value: "5555555555555555555555555555555555555555555555555555555555555555"}
	refund := sealedSettlement(t, &billing.BillingSettlementTransition{
		Transition: strict.Quadruple{Ref: "bst-1"}, Dimension: dim, TransitionKind: billing.TransitionRefund, FromSettlementStateRevision: 1,
		SettledAmountBefore: "120", TargetAmount: "95", SettledAmountAfter: "95", TransitionAmount: "25",
		PreviousSettlementInput: settlementInput(1, 'a'), SettlementInput: settlementInput(2, 'b'), ValidationReceipt: settlementQuad("mvr-2", 'c'),
		CausationKind: billing.TransitionCausedByFinalization, CausedBy: settlementQuad("bfc-1", 'd'),
		LogicalOperationID: "0195f4a8-0000-7000-8000-000000000080", SettlementBasis: basis, CommittedAt: settlementAt,
	})
	exposureTransition := sealedSettlement(t, &billing.BillingSettlementTransition{
		Transition: strict.Quadruple{Ref: "bst-2"}, Dimension: dim, TransitionKind: billing.TransitionLateSettlementExposure, FromSettlementStateRevision: 2,
		SettledAmountBefore: "95", TargetAmount: "130", SettledAmountAfter: "95", TransitionAmount: "35",
		PreviousSettlementInput: settlementInput(2, 'b'), SettlementInput: settlementInput(3, 'e'), ValidationReceipt: settlementQuad("mvr-3", 'f'),
		CausationKind: billing.TransitionCausedByTransition, CausedBy: refund.Transition,
		LogicalOperationID: "0195f4a8-0000-7000-8000-000000000081", SettlementBasis: basis, CommittedAt: settlementAt.Add(time.Second),
	})
	adjustment := sealedSettlement(t, &billing.BillingSettlementTransition{
		Transition: strict.Quadruple{Ref: "bst-3"}, Dimension: money, TransitionKind: billing.TransitionAdjustment, FromSettlementStateRevision: 3,
		SettledAmountBefore: "0.42", TargetAmount: "0.5", SettledAmountAfter: "0.5", TransitionAmount: "0.08",
		PreviousSettlementInput: settlementInput(3, 'e'), SettlementInput: settlementInput(5, '1'), ValidationReceipt: settlementQuad("mvr-5", '2'),
		CausationKind: billing.TransitionCausedByTransition, CausedBy: exposureTransition.Transition,
		LogicalOperationID: "0195f4a8-0000-7000-8000-000000000082", SettlementBasis: basis, CommittedAt: settlementAt.Add(2 * time.Second),
	})
	// ADR-031 F → T → Late Result → T: the correction after a late
	// settlement command result names that result as its predecessor.
	afterLate := sealedSettlement(t, &billing.BillingSettlementTransition{
		Transition: strict.Quadruple{Ref: "bst-4"}, Dimension: dim, TransitionKind: billing.TransitionRefund, FromSettlementStateRevision: 4,
		SettledAmountBefore: "130", TargetAmount: "120", SettledAmountAfter: "120", TransitionAmount: "10",
		PreviousSettlementInput: settlementInput(3, 'e'), SettlementInput: settlementInput(4, '3'), ValidationReceipt: settlementQuad("mvr-4", '4'),
		CausationKind: billing.TransitionCausedByLateResult, CausedBy: settlementQuad("lscres-1", '6'),
		LogicalOperationID: "0195f4a8-0000-7000-8000-000000000083", SettlementBasis: basis, CommittedAt: settlementAt.Add(3 * time.Second),
	})
	exposure := sealedSettlement(t, &billing.LateSettlementExposure{
		Exposure: strict.Quadruple{Ref: "lse-1"}, Dimension: dim, Transition: exposureTransition.Transition, SettlementStateRevision: 3,
		SettlementInput: exposureTransition.SettlementInput, ExposureAmount: "35", RecordedAt: settlementAt.Add(time.Second),
		Case: &billing.ExposureCase{ReconciliationCaseRef: "lcase-0195f4a8-0000-7000-8000-0000000000c1", CaseGeneration: 2,
			Identity: settlementQuad("lcir-2", 'c'), CaseRequestOperationID: "0195f4a8-0000-7000-8000-0000000000c2"},
	})
	exposureMoney := sealedSettlement(t, &billing.LateSettlementExposure{
		Exposure: strict.Quadruple{Ref: "lse-2"}, Dimension: money, Transition: settlementQuad("bst-9", '9'), SettlementStateRevision: 2,
		SettlementInput: settlementInput(4, '4'), ExposureAmount: "0.000125", RecordedAt: settlementAt.Add(time.Second),
	})
	work := func(ref string, cause string, gen, fenceRev, stateRev int64, last, verify billing.SettlementInput) *billing.BillingSettlementCatchUpWork {
		return sealedSettlement(t, &billing.BillingSettlementCatchUpWork{
			Work: strict.Quadruple{Ref: ref}, Dimension: dim, WorkCause: cause, CreatedAt: settlementAt,
			Basis: billing.CatchUpBasis{SettlementDimensionID: dim.SettlementDimensionID(), SettlementCatchUpFenceRevision: fenceRev,
				WorkGeneration: gen, SettlementStateRevision: stateRev, LastEvaluatedInput: last, InputToVerify: verify},
		})
	}
	w1 := work("bscw-1", billing.CatchUpCauseFinalization, 1, 1, 1, settlementInput(1, 'a'), settlementInput(2, 'b'))
	w2 := work("bscw-2", billing.CatchUpCauseSuccessor, 2, 2, 2, settlementInput(2, 'b'), settlementInput(2, 'b'))
	fence := func(ref, state string, rev int64, w *billing.BillingSettlementCatchUpWork, wm billing.CatchUpWatermark, evidence strict.Quadruple) *billing.BillingSettlementCatchUpFence {
		return sealedSettlement(t, &billing.BillingSettlementCatchUpFence{
			Fence: strict.Quadruple{Ref: ref}, Dimension: dim, SettlementCatchUpFenceRevision: rev, SettlementStateRevision: w.Basis.SettlementStateRevision,
			LastEvaluatedInput: w.Basis.LastEvaluatedInput, Watermark: wm, CoordinationState: state, WorkGeneration: w.Basis.WorkGeneration,
			Work: w.Work, ValidationOperationID: w.ValidationOperationID(), Evidence: evidence, RecordedAt: settlementAt,
		})
	}
	observed := billing.CatchUpWatermark{Observed: true, Input: settlementInput(2, 'b'), InboxRevision: 1}
	finished := func(ref, outcome string, w, successor *billing.BillingSettlementCatchUpWork, transition strict.Quadruple) *billing.BillingSettlementCatchUpWorkAttemptFinished {
		f := &billing.BillingSettlementCatchUpWorkAttemptFinished{Finished: strict.Quadruple{Ref: ref}, Dimension: dim, Work: w.Work,
			WorkGeneration: w.Basis.WorkGeneration, ValidationOperationID: w.ValidationOperationID(), ValidationReceipt: settlementQuad("mvr-f", '6'),
			Outcome: outcome, FinishedAt: settlementAt}
		if successor != nil {
			f.RebaselinedInput, f.SuccessorWork = successor.Basis.LastEvaluatedInput, successor.Work
			f.SuccessorWorkGeneration, f.SuccessorValidationOperationID = successor.Basis.WorkGeneration, successor.ValidationOperationID()
		}
		if outcome == billing.CatchUpFinishedTransitionApplied {
			f.Transition, f.ToSettlementStateRevision = transition, 2
		}
		return sealedSettlement(t, f)
	}
	return []settlementGolden{
		{billing.KindBillingSettlementTransition, "refund_after_finalization", refund},
		{billing.KindBillingSettlementTransition, "late_settlement_exposure", exposureTransition},
		{billing.KindBillingSettlementTransition, "adjustment_money", adjustment},
		{billing.KindBillingSettlementTransition, "refund_after_late_result", afterLate},
		{billing.KindLateSettlementExposure, "credits", exposure},
		{billing.KindLateSettlementExposure, "money", exposureMoney},
		{billing.KindBillingSettlementCatchUpWork, "first_after_finalization", w1},
		{billing.KindBillingSettlementCatchUpWork, "successor", w2},
		{billing.KindBillingSettlementCatchUpFence, "pending_first", fence("bscf-1", billing.CatchUpPendingVerification, 1, w1, billing.CatchUpWatermark{}, strict.Quadruple{})},
		{billing.KindBillingSettlementCatchUpFence, "caught_up", fence("bscf-3", billing.CatchUpCaughtUp, 3, w2, observed, settlementQuad("mvr-c", '7'))},
		{billing.KindBillingSettlementCatchUpWorkAttemptFinished, "transition_applied", finished("bscf-f1", billing.CatchUpFinishedTransitionApplied, w1, w2, refund.Transition)},
		{billing.KindBillingSettlementCatchUpWorkAttemptFinished, "already_evaluated", finished("bscf-f2", billing.CatchUpFinishedAlreadyEvaluated, w1, w2, strict.Quadruple{})},
		{billing.KindBillingSettlementCatchUpWorkAttemptFinished, "caught_up", finished("bscf-f3", billing.CatchUpFinishedCaughtUp, w2, nil, strict.Quadruple{})},
		{billing.KindBillingSettlementCatchUpFence, "blocked", fence("bscf-4", billing.CatchUpBlockedOnOwnerConflict, 2, w2, observed, settlementQuad("bscb-1", '8'))},
	}
}

func settlementContract(t *testing.T, kind string) billing.SettlementContract {
	t.Helper()
	for _, c := range billing.SettlementContracts() {
		if c.Name == kind {
			return c
		}
	}
	t.Fatalf("unknown kind %s", kind)
	return billing.SettlementContract{}
}

// CT-4 (BI-2, BI-3 contracts): every golden is regenerated from the fixtures
// and byte-compared; the raw file decodes strictly, its embedded digest
// recomputes, and canonical bytes and digest match the files.
func TestSettlementGolden_CT4(t *testing.T) {
	t.Parallel()
	perKind := map[string]int{}
	for _, g := range settlementGoldens(t) {
		perKind[g.kind]++
		c := settlementContract(t, g.kind)
		dir := filepath.Join("testdata", "golden", g.kind, g.name)
		goldentest.Check(t, filepath.Join(dir, "raw.json"), goldentest.Indent(t, g.obj.ToJSON()))
		raw, err := os.ReadFile(filepath.Join(dir, "raw.json"))
		require.NoError(t, err)
		require.NoError(t, c.Validate(raw), g.name)
		canonical, err := jcs.Canonicalize(raw)
		require.NoError(t, err)
		goldentest.Check(t, filepath.Join(dir, "canonical.json"), canonical)
		d, err := c.Digest(raw)
		require.NoError(t, err)
		goldentest.Check(t, filepath.Join(dir, "digest.txt"), []byte(d.String()+"\n"))
		require.Equal(t, g.obj.Quad().Digest, d.Value, "embedded digest is the candidate digest")
	}
	for _, c := range billing.SettlementContracts() {
		require.GreaterOrEqual(t, perKind[c.Name], 2, c.Name)
	}
}

// The typed decoders return exactly the sealed object.
func TestSettlementDecodeRoundTrip(t *testing.T) {
	t.Parallel()
	for _, g := range settlementGoldens(t) {
		body, err := jcs.Marshal(g.obj.ToJSON())
		require.NoError(t, err)
		var back billing.SettlementSealed
		switch g.kind {
		case billing.KindBillingSettlementTransition:
			back, err = billing.DecodeBillingSettlementTransition(body)
		case billing.KindLateSettlementExposure:
			back, err = billing.DecodeLateSettlementExposure(body)
		case billing.KindBillingSettlementCatchUpWork:
			back, err = billing.DecodeBillingSettlementCatchUpWork(body)
		case billing.KindBillingSettlementCatchUpFence:
			back, err = billing.DecodeBillingSettlementCatchUpFence(body)
		case billing.KindBillingSettlementCatchUpWorkAttemptFinished:
			back, err = billing.DecodeBillingSettlementCatchUpWorkAttemptFinished(body)
		}
		require.NoError(t, err)
		require.Equal(t, g.obj, back, g.kind+"/"+g.name)
	}
}

type settlementNegative struct {
	kind, name, requirement, base string
	mutate                        func(m map[string]any)
	want                          error
}

func settlementNegatives() []settlementNegative {
	setInput := func(key string, version int64) func(m map[string]any) {
		return func(m map[string]any) { m[key].(map[string]any)["settlementInputStateVersion"] = version }
	}
	return []settlementNegative{
		{billing.KindBillingSettlementTransition, "to_revision_skips", "BI-2", "refund_after_finalization", func(m map[string]any) { m["toSettlementStateRevision"] = int64(3) }, billing.ErrTransitionRule},
		{billing.KindBillingSettlementTransition, "finalization_causes_later_revision", "BI-2", "late_settlement_exposure", func(m map[string]any) {
			m["causation"] = map[string]any{"kind": "finalization", "billingFinalizationCommittedRef": "bfc-1", "billingFinalizationCommittedSchemaVersion": "1",
				"billingFinalizationCommittedDigestAlgorithmVersion": "jcs-sha256-v1", "billingFinalizationCommittedDigest": "dddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddd"}
		}, billing.ErrTransitionRule},
		{billing.KindBillingSettlementTransition, "predecessor_to_is_not_from", "BI-2", "late_settlement_exposure", func(m map[string]any) {
			m["causation"].(map[string]any)["predecessorToSettlementStateRevision"] = int64(3)
		}, billing.ErrTransitionRule},
		{billing.KindBillingSettlementTransition, "late_result_predecessor_to_is_not_from", "BI-2", "refund_after_late_result", func(m map[string]any) {
			m["causation"].(map[string]any)["predecessorToSettlementStateRevision"] = int64(3)
		}, billing.ErrTransitionRule},
		{billing.KindBillingSettlementTransition, "refund_amount_does_not_add_up", "BI-2", "refund_after_finalization", func(m map[string]any) { m["transitionAmount"] = "24" }, billing.ErrTransitionRule},
		{billing.KindBillingSettlementTransition, "exposure_charged", "BI-2", "late_settlement_exposure", func(m map[string]any) { m["settledAmountAfter"] = "130" }, billing.ErrTransitionRule},
		{billing.KindBillingSettlementTransition, "input_does_not_advance", "BI-2", "refund_after_finalization", setInput("settlementInput", 1), billing.ErrTransitionRule},
		{billing.KindBillingSettlementTransition, "validation_operation_reused", "BI-2", "late_settlement_exposure", func(m map[string]any) {
			m["validationOperationId"] = "0195f4a8-0000-7000-8000-0000000000ff"
		}, billing.ErrSettlementDerivedID},
		{billing.KindBillingSettlementTransition, "dimension_id_rebound", "BI-2", "refund_after_finalization", func(m map[string]any) { m["chargeDimensionKey"] = "text.input_tokens" }, billing.ErrSettlementDerivedID},
		{billing.KindBillingSettlementTransition, "unknown_kind", "CT-2", "refund_after_finalization", func(m map[string]any) { m["transitionKind"] = "credit_note" }, strict.ErrUnknownEnum},
		{billing.KindBillingSettlementTransition, "float_amount", "CT-2", "refund_after_finalization", func(m map[string]any) { m["transitionAmount"] = "2.5e1" }, strict.ErrInvalidValue},
		{billing.KindBillingSettlementTransition, "other_disposition", "BI-2", "refund_after_finalization", func(m map[string]any) { m["lateEligibleDisposition"] = "charge_automatically" }, strict.ErrUnexpectedLiteral},
		{billing.KindBillingSettlementTransition, "previous_input_rebound", "CT-3", "refund_after_finalization", func(m map[string]any) {
			m["previousSettlementInput"].(map[string]any)["settlementInputSnapshotRef"] = "sis-other"
		}, digest.ErrMismatch},
		{billing.KindLateSettlementExposure, "case_requested_without_identity", "BI-2", "credits", func(m map[string]any) {
			delete(m["caseRequest"].(map[string]any), "lateSettlementCaseIdentityReservationDigest")
		}, strict.ErrMissingField},
		{billing.KindLateSettlementExposure, "case_generation_zero", "BI-2", "credits", func(m map[string]any) {
			m["caseRequest"].(map[string]any)["caseGeneration"] = int64(0)
		}, strict.ErrOutOfRange},
		{billing.KindLateSettlementExposure, "zero_amount", "BI-2", "credits", func(m map[string]any) { m["exposureAmount"] = "0" }, billing.ErrExposureRule},
		{billing.KindLateSettlementExposure, "id_does_not_recompute", "BI-2", "credits", func(m map[string]any) { m["settlementStateRevision"] = int64(4) }, billing.ErrSettlementDerivedID},
		{billing.KindLateSettlementExposure, "automatic_charge", "BI-2", "credits", func(m map[string]any) { m["automaticCharge"] = "charged" }, strict.ErrUnexpectedLiteral},
		{billing.KindLateSettlementExposure, "case_state_unknown", "CT-2", "money", func(m map[string]any) { m["caseRequest"] = map[string]any{"state": "opened"} }, strict.ErrUnknownEnum},
		{billing.KindBillingSettlementCatchUpWork, "verify_behind_evaluated", "BI-3", "successor", setInput("inputToVerify", 1), billing.ErrCatchUpRule},
		{billing.KindBillingSettlementCatchUpWork, "same_version_other_snapshot", "BI-3", "successor", func(m map[string]any) {
			m["inputToVerify"].(map[string]any)["settlementInputSnapshotRef"] = "sis-other"
		}, billing.ErrCatchUpRule},
		{billing.KindBillingSettlementCatchUpWork, "generation_rebound", "BI-3", "successor", func(m map[string]any) { m["workGeneration"] = int64(3) }, billing.ErrSettlementDerivedID},
		{billing.KindBillingSettlementCatchUpWork, "operation_reused", "BI-3", "successor", func(m map[string]any) {
			m["billingCatchUpValidationOperationId"] = "0195f4a8-0000-7000-8000-0000000000fe"
		}, billing.ErrSettlementDerivedID},
		{billing.KindBillingSettlementCatchUpFence, "caught_up_watermark_ahead", "BI-3", "caught_up", setInput("settlementInputWatermark", 3), billing.ErrCatchUpRule},
		{billing.KindBillingSettlementCatchUpFence, "pending_with_receipt", "BI-3", "pending_first", func(m map[string]any) {
			cs := m["coordinationState"].(map[string]any)
			settlementQuad("mvr-c", '7').Put(cs, "catchUpValidationReceipt")
		}, strict.ErrMixedUnion},
		{billing.KindBillingSettlementCatchUpWorkAttemptFinished, "successor_skips_generation", "BI-3", "transition_applied", func(m map[string]any) {
			m["outcome"].(map[string]any)["successorWorkGeneration"] = int64(4)
		}, billing.ErrCatchUpRule},
		{billing.KindBillingSettlementCatchUpWorkAttemptFinished, "caught_up_with_successor", "BI-3", "caught_up", func(m map[string]any) {
			m["outcome"].(map[string]any)["successorWorkGeneration"] = int64(3)
		}, strict.ErrMixedUnion},
		{billing.KindBillingSettlementCatchUpFence, "unknown_state", "CT-2", "pending_first", func(m map[string]any) {
			m["coordinationState"].(map[string]any)["state"] = "done"
		}, strict.ErrUnknownEnum},
	}
}

type settlementManifestEntry struct {
	Kind        string `json:"kind"`
	File        string `json:"file"`
	Requirement string `json:"requirement"`
	Expected    string `json:"expected"`
}

// CT-2/CT-3, BI-2, BI-3: every negative artefact is rejected with its named reason.
func TestSettlementNegatives_CT2(t *testing.T) {
	t.Parallel()
	gs := settlementGoldens(t)
	var entries []settlementManifestEntry
	for _, n := range settlementNegatives() {
		var base billing.SettlementSealed
		for _, g := range gs {
			if g.kind == n.kind && g.name == n.base {
				base = g.obj
			}
		}
		require.NotNil(t, base, n.kind+"/"+n.base)
		m := base.ToJSON()
		n.mutate(m)
		file := filepath.Join(n.kind, n.name+".json")
		goldentest.Check(t, filepath.Join("testdata", "negative", file), goldentest.Indent(t, m))
		raw, err := os.ReadFile(filepath.Join("testdata", "negative", file))
		require.NoError(t, err)
		err = settlementContract(t, n.kind).Validate(raw)
		require.ErrorIs(t, err, n.want, file)
		entries = append(entries, settlementManifestEntry{Kind: n.kind, File: file, Requirement: n.requirement, Expected: n.want.Error()})
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].File < entries[j].File })
	b, err := json.MarshalIndent(entries, "", "  ")
	require.NoError(t, err)
	goldentest.Check(t, filepath.Join("testdata", "negative", "settlement-manifest.json"), append(b, '\n'))
}

// BI-2: the kind under reconcile_before_charge: a negative difference is a
// refund, a positive one an exposure (never an automatic adjustment), no
// difference no transition; amounts are exact decimals.
func TestTransitionKindFor_BI2(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ before, target, kind, amount string }{
		{"120", "95", billing.TransitionRefund, "25"},
		{"0.1", "0.3", billing.TransitionLateSettlementExposure, "0.2"},
		{"7", "7.0", "", ""},
	} {
		kind, amount, ok, err := billing.TransitionKindFor(c.before, c.target)
		require.NoError(t, err)
		require.Equal(t, c.kind != "", ok)
		require.Equal(t, c.kind, kind)
		require.Equal(t, c.amount, amount)
	}
	_, _, _, err := billing.TransitionKindFor("-1", "2")
	require.ErrorIs(t, err, billing.ErrTransitionRule)
}

// Seal refuses a transition whose amounts do not add up.
func TestSealSettlementRefusesInvalid(t *testing.T) {
	t.Parallel()
	x := &billing.BillingSettlementTransition{Transition: strict.Quadruple{Ref: "bst-x"}, Dimension: settlementDimensionFixture(),
		TransitionKind: billing.TransitionRefund, FromSettlementStateRevision: 1, SettledAmountBefore: "1", TargetAmount: "2",
		SettledAmountAfter: "2", TransitionAmount: "1", PreviousSettlementInput: settlementInput(1, 'a'), SettlementInput: settlementInput(2, 'b'),
		ValidationReceipt: settlementQuad("mvr", 'c'), CausationKind: billing.TransitionCausedByFinalization, CausedBy: settlementQuad("bfc", 'd'),
		LogicalOperationID: "0195f4a8-0000-7000-8000-000000000080", SettlementBasis: digest.Digest{Algorithm: digest.JCSSHA256V1,
			Value: "5555555555555555555555555555555555555555555555555555555555555555"}, CommittedAt: settlementAt}
	_, err := billing.SealSettlement(x)
	require.ErrorIs(t, err, billing.ErrInvalidSettlementObject)
	require.ErrorIs(t, err, billing.ErrTransitionRule)
}
