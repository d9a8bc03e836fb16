package finalization_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/contracts/billing"
	"github.com/oceanway/core/contracts/settlement"
	"github.com/oceanway/core/internal/billing/finalization"
	"github.com/oceanway/core/internal/ownerread"
)

func evaluate(t *testing.T, w *world) *finalization.Evaluation {
	t.Helper()
	if w.closure.Recorded == nil {
		w.recordAll()
	}
	ev, err := finalization.Evaluate(t.Context(), w.owners(), w.closure, time.Now())
	require.NoError(t, err)
	m, err := billing.DecodeFinalizationInputManifest(ev.ManifestBody)
	require.NoError(t, err, "the manifest decodes strictly and recomputes")
	require.Equal(t, ev.Manifest, m)
	d, err := billing.DecodeBillingFinalizationDecision(ev.DecisionBody)
	require.NoError(t, err)
	require.Equal(t, ev.Decision.Decision, d.Decision)
	require.Equal(t, ev.Manifest.Manifest, d.InputManifest, "decision → manifest")
	return ev
}

// BI-1: closed inputs under the reservation → settle_and_release_remainder
// with settled = Σ targets and released = reserved − settled, exactly; the
// bundle holds one Execution receipt, one Metering receipt per dimension
// and one Gateway receipt per dispatched availability, none for the
// not-dispatched dimension; every entry echoes the operation and manifest.
func TestBI1SettleAndReleaseRemainderWithThreeReceiptSets(t *testing.T) {
	t.Parallel()
	w := newWorld("1200", "333") // 1200 × 0.001 + 333 × 0.003 = 1.2 + 0.999
	ev := evaluate(t, w)
	d := ev.Decision
	require.Equal(t, billing.DecisionSettleAndReleaseRemainder, d.Outcome)
	require.Equal(t, "2.199", d.SettledAmount)
	require.Equal(t, "1497.801", d.ReleasedAmount)
	sum, err := billing.SumAmounts(d.SettledAmount, d.ReleasedAmount)
	require.NoError(t, err)
	require.Equal(t, "1500", sum, "settled + released = reserved")
	require.Len(t, ev.Manifest.Dimensions, 3)
	b, err := billing.DecodeFinalizationValidationBundle(ev.BundleBody)
	require.NoError(t, err)
	require.Equal(t, d.Bundle, b.Bundle, "decision → bundle")
	require.Equal(t, ev.Manifest.Manifest, b.InputManifest, "bundle → manifest")
	require.Len(t, b.Metering, 3)
	require.Len(t, b.Gateway, 2)
	for _, g := range b.Gateway {
		require.Equal(t, dispatched, g.ExecutionAttemptID, "no Gateway receipt for the not-dispatched attempt")
	}
	require.Equal(t, 2, w.gwCalls)
	require.Len(t, w.mtCalls, 3)
	ops := map[string]bool{}
	for _, c := range w.mtCalls {
		require.Equal(t, ev.Manifest.Manifest, c.InputManifest)
		require.Equal(t, billing.FinalizationOperationID(fence), c.FinalizationOperationID)
		ops[c.ValidationOperationID] = true
	}
	require.Len(t, ops, 3, "one validation operation per dimension")
	require.Len(t, ev.Receipts, 4, "1 Execution + 3 Metering receipts are kept for storage")
}

// BI-1: the same inputs evaluated at another time give byte-identical
// content addresses (time fields are outside every candidate, refs derive
// from content): a replay finds the same manifest, bundle and decision.
func TestBI1EvaluationIsContentAddressed(t *testing.T) {
	t.Parallel()
	w := newWorld("10", "20")
	a := evaluate(t, w)
	b, err := finalization.Evaluate(t.Context(), w.owners(), w.closure, time.Now().Add(time.Hour))
	require.NoError(t, err)
	require.Equal(t, a.Manifest.Manifest, b.Manifest.Manifest)
	require.Equal(t, a.Bundle.Bundle, b.Bundle.Bundle)
	require.Equal(t, a.Decision.Decision, b.Decision.Decision)
	w.setUsage("text.output_tokens", "21", 2)
	w.recordAll()
	c := evaluate(t, w)
	require.NotEqual(t, a.Manifest.Manifest.Digest, c.Manifest.Manifest.Digest, "another input is another manifest")
}

// BI-1: no billable input (every target zero) → release_all, the whole
// reservation released, settled exactly "0".
func TestBI1ReleaseAllOnZeroTargets(t *testing.T) {
	t.Parallel()
	w := newWorld("0", "0")
	ev := evaluate(t, w)
	require.Equal(t, billing.DecisionReleaseAll, ev.Decision.Outcome)
	require.Equal(t, "0", ev.Decision.SettledAmount)
	require.Equal(t, "1500", ev.Decision.ReleasedAmount)
}

// BI-1: inputs not closed (a pending dimension, an attempt without any
// settlement input, Metering answering not current, the Gateway not finding
// the availability, a current input whose event Billing has not observed
// yet) → blocked with a visible reason, no bundle, no amounts.
func TestBI1BlockedWhileInputsAreNotClosed(t *testing.T) {
	t.Parallel()
	for name, setup := range map[string]func(w *world){
		"pending dimension":     func(w *world) { w.setUsage("text.output_tokens", "", 1) },
		"attempt with no input": func(w *world) { delete(w.inputs, rejected) },
		"not current": func(w *world) {
			w.notCurrnt[w.inputs[dispatched][0].Snapshot.SettlementDimensionID] = true
		},
		"availability not found": func(w *world) { w.gwAnswer = ownerread.NotFound },
		"event not yet observed by Billing": func(w *world) {
			w.recordAll()
			delete(w.closure.Recorded, w.inputs[dispatched][1].Snapshot.SettlementDimensionID)
		},
		"a usage dimension Metering has not settled yet": func(w *world) { w.gwExtra = []string{"tools.calls"} },
		"Billing observed an older version": func(w *world) {
			w.recordAll()
			w.setUsage("text.output_tokens", "101", 2)
		},
	} {
		w := newWorld("100", "100")
		setup(w)
		ev := evaluate(t, w)
		require.Equal(t, billing.DecisionBlocked, ev.Decision.Outcome, name)
		require.Equal(t, billing.ReasonInputsNotClosed, ev.Decision.ReasonCode, name)
		require.Nil(t, ev.Bundle, name)
		require.Empty(t, ev.Decision.SettledAmount, name)
	}
	w := newWorld("100", "100")
	w.closed = false
	ev := evaluate(t, w)
	require.Equal(t, billing.ReasonExecutionNotClosed, ev.Decision.ReasonCode)
	require.Empty(t, ev.Manifest.Dimensions)
}

// BI-1 / issue 15: target above the reservation, a conflicting input, an
// Execution conflict or another economic identity → reconciliation_required
// as an evaluation only: no bundle, no amount, and for the target rule no
// receipt is even requested.
func TestBI1ReconciliationRequiredIsAnEvaluationOnly(t *testing.T) {
	t.Parallel()
	w := newWorld("1000000", "1") // 1000 credits of input; the correction below adds 600 of output
	w.setUsage("text.output_tokens", "200000", 2)
	w.recordAll()
	ev := evaluate(t, w)
	require.Equal(t, billing.DecisionReconciliationRequired, ev.Decision.Outcome)
	require.Equal(t, billing.ReasonTargetAboveReservation, ev.Decision.ReasonCode)
	require.Equal(t, "1600", ev.Manifest.TargetTotal)
	require.Nil(t, ev.Bundle)
	require.Zero(t, w.gwCalls, "nothing above the reservation is ever validated for settlement")
	require.Empty(t, w.mtCalls)

	for name, setup := range map[string]func(w *world){
		"conflicting input":     func(w *world) { w.setUsage("text.input_tokens", "conflict", 2) },
		"gateway conflicting":   func(w *world) { w.gwAnswer = ownerread.Conflicting },
		"execution conflicting": func(w *world) { w.closure.Finalization = quad("ref-other", '9') },
		"recorded another snapshot at the same version": func(w *world) {
			w.recordAll()
			id := w.inputs[dispatched][0].Snapshot.SettlementDimensionID
			w.closure.Recorded[id] = settlement.Ref{Snapshot: quad("sis-other", '8'), StateVersion: 1}
		},
		"recorded an input of no closed attempt": func(w *world) {
			w.recordAll()
			w.closure.Recorded["0195f4a8-0000-7000-8000-0000000000ee"] = settlement.Ref{Snapshot: quad("sis-stray", '8'), StateVersion: 1}
		},
		"money identity": func(w *world) {
			in := w.inputs[rejected][0].Snapshot
			in.EconomicIdentity = settlement.EconomicIdentity{Kind: "money", Currency: "EUR"}
			w.put(in)
		},
	} {
		w := newWorld("100", "100")
		setup(w)
		ev := evaluate(t, w)
		require.Equal(t, billing.DecisionReconciliationRequired, ev.Decision.Outcome, name)
		require.Nil(t, ev.Bundle, name)
		require.Empty(t, ev.Decision.SettledAmount, name)
		// Issue 32: an Execution conflict binds the owner's stored
		// RunExecutionFinalizationConflictFact@1 quadruple; no other reason does.
		if name == "execution conflicting" {
			require.Equal(t, billing.ReasonExecutionConflicting, ev.Decision.ReasonCode)
			require.Equal(t, "rfc-"+w.fact.RunID, ev.Decision.ExecutionConflict.Ref)
			require.NoError(t, ev.Decision.ExecutionConflict.Validate())
			back, err := billing.DecodeBillingFinalizationDecision(ev.DecisionBody)
			require.NoError(t, err)
			require.Equal(t, ev.Decision.ExecutionConflict, back.ExecutionConflict)
		} else {
			require.Zero(t, ev.Decision.ExecutionConflict, name)
		}
	}
}

// BI-1, issue 32 part 4 (guard BI-1.registered-dimension-missing): the
// dispatched attempt's manifest registers a charge dimension Metering has
// no input for (its first evidence has not arrived: Metering's Work awaits
// it) → blocked, no bundle, no amount, no receipt requested; once its input
// is there the same run settles. An input of a dimension the manifest does
// not register (guard BI-1.dimension-not-registered), or a manifest that
// freezes no dimension, needs reconciliation.
func TestBI1BlockedUntilEveryRegisteredDimensionIsPresent(t *testing.T) {
	t.Parallel()
	w := newWorld("100", "100")
	w.registered[dispatched] = []string{"text.input_tokens", "text.output_tokens", "tools.calls"}
	ev := evaluate(t, w)
	require.Equal(t, billing.DecisionBlocked, ev.Decision.Outcome)
	require.Equal(t, billing.ReasonInputsNotClosed, ev.Decision.ReasonCode)
	require.Nil(t, ev.Bundle)
	require.Empty(t, ev.Decision.SettledAmount)
	require.Empty(t, w.mtCalls, "no receipt is requested while a registered dimension is missing")

	w.setUsage("tools.calls", "4", 1) // its evidence arrives: Metering settles it
	w.recordAll()
	ev = evaluate(t, w)
	require.Equal(t, billing.DecisionSettleAndReleaseRemainder, ev.Decision.Outcome)
	require.Len(t, ev.Manifest.Dimensions, 4, "the manifest enumerates every registered dimension")

	for name, setup := range map[string]func(w *world){
		"input of an unregistered dimension": func(w *world) { w.registered[dispatched] = []string{"text.input_tokens"} },
		"manifest that freezes no dimension": func(w *world) { w.registered[dispatched] = nil },
	} {
		w := newWorld("100", "100")
		setup(w)
		ev := evaluate(t, w)
		require.Equal(t, billing.DecisionReconciliationRequired, ev.Decision.Outcome, name)
		require.Nil(t, ev.Bundle, name)
	}
}
