package billing

import (
	"fmt"
	"time"

	"github.com/oceanway/core/contracts/strict"
)

// BillingFinalizationDecision is BillingFinalizationDecision@1 — our
// definition of ADR-031's decision over one input manifest:
//
//	billingFinalizationDecisionRef / SchemaVersion("1") / DigestAlgorithmVersion / Digest
//	billingAccountId, billingReservationId, runId, billingFinalizationFenceId, billingFinalizationOperationId
//	finalizationInputManifest quadruple, reservationEconomicIdentity {credits}, reservedAmount, targetTotal
//	outcome = { decision=settle_and_release_remainder; bundle quadruple; settledAmount; releasedAmount }
//	        | { decision=release_all; bundle quadruple; settledAmount="0"; releasedAmount }
//	        | { decision=blocked; reasonCode }                    a visible wait
//	        | { decision=reconciliation_required; reasonCode }    an evaluation only (issue 15)
//	decidedAt                                  excluded from the digest candidate
//
// Rules: for the two successes settled + released = reserved exactly,
// settled = targetTotal ≤ reserved; release_all releases everything.
type BillingFinalizationDecision struct {
	Decision                strict.Quadruple
	BillingAccountID        string
	BillingReservationID    string
	RunID                   string
	FenceID                 string
	FinalizationOperationID string
	InputManifest           strict.Quadruple
	ReservedAmount          string
	TargetTotal             string
	Outcome                 string
	Bundle                  strict.Quadruple // the two successes
	SettledAmount           string           // the two successes
	ReleasedAmount          string           // the two successes
	ReasonCode              string           // blocked, reconciliation_required
	// ExecutionConflict is the Execution owner's stored
	// RunExecutionFinalizationConflictFact@1 a reconciliation_required
	// decision with reason execution_conflicting binds (issue 32); zero otherwise.
	ExecutionConflict strict.Quadruple
	DecidedAt         time.Time
}

func (*BillingFinalizationDecision) Kind() string              { return KindBillingFinalizationDecision }
func (d *BillingFinalizationDecision) Quad() *strict.Quadruple { return &d.Decision }

// Succeeded reports whether the decision is one of the two outcomes that
// move money and end the reservation.
func (d *BillingFinalizationDecision) Succeeded() bool {
	return d.Outcome == DecisionSettleAndReleaseRemainder || d.Outcome == DecisionReleaseAll
}

// ToJSON returns the full JSON form.
func (d *BillingFinalizationDecision) ToJSON() map[string]any {
	outcome := map[string]any{"decision": d.Outcome}
	if d.Succeeded() {
		d.Bundle.Put(outcome, PrefixValidationBundle)
		outcome["settledAmount"], outcome["releasedAmount"] = d.SettledAmount, d.ReleasedAmount
	} else {
		outcome["reasonCode"] = d.ReasonCode
		if d.ExecutionConflict.Ref != "" {
			d.ExecutionConflict.Put(outcome, PrefixExecutionConflict)
		}
	}
	out := map[string]any{
		"billingAccountId": d.BillingAccountID, "billingReservationId": d.BillingReservationID, "runId": d.RunID,
		"billingFinalizationFenceId": d.FenceID, "billingFinalizationOperationId": d.FinalizationOperationID,
		"reservationEconomicIdentity": Credits.toJSON(), "reservedAmount": d.ReservedAmount, "targetTotal": d.TargetTotal,
		"outcome": outcome, "decidedAt": strict.FormatTimestamp(d.DecidedAt),
	}
	d.InputManifest.Put(out, PrefixInputManifest)
	d.Decision.Put(out, PrefixDecision)
	return out
}

// DecodeBillingFinalizationDecision strictly decodes a decision, checks its
// amount rules and verifies its digest.
func DecodeBillingFinalizationDecision(doc []byte) (*BillingFinalizationDecision, error) {
	m, err := decodeMap(KindBillingFinalizationDecision, doc)
	if err != nil {
		return nil, err
	}
	o := obj(m, "outcome")
	d := &BillingFinalizationDecision{
		Decision: quad(m, PrefixDecision), BillingAccountID: str(m, "billingAccountId"), BillingReservationID: str(m, "billingReservationId"),
		RunID: str(m, "runId"), FenceID: str(m, "billingFinalizationFenceId"), FinalizationOperationID: str(m, "billingFinalizationOperationId"),
		InputManifest: quad(m, PrefixInputManifest), ReservedAmount: str(m, "reservedAmount"), TargetTotal: str(m, "targetTotal"),
		Outcome: str(o, "decision"), SettledAmount: str(o, "settledAmount"), ReleasedAmount: str(o, "releasedAmount"),
		ReasonCode: str(o, "reasonCode"),
	}
	if d.Succeeded() {
		d.Bundle = quad(o, PrefixValidationBundle)
	} else if _, ok := o[PrefixExecutionConflict+"Ref"]; ok {
		d.ExecutionConflict = quad(o, PrefixExecutionConflict)
	}
	d.DecidedAt, _ = strict.ParseTimestamp(str(m, "decidedAt"))
	return d, nil
}

// decisionRules: a success settles exactly the target total, never above
// the reservation, and settled + released = reserved.
func decisionRules(m map[string]any) error {
	o := obj(m, "outcome")
	// The execution conflict quadruple is whole or absent, and only with
	// reconciliation_required / execution_conflicting (issue 32).
	present := 0
	for _, f := range []string{"Ref", "SchemaVersion", "DigestAlgorithmVersion", "Digest"} {
		if _, ok := o[PrefixExecutionConflict+f]; ok {
			present++
		}
	}
	switch {
	case present != 0 && present != 4:
		return fmt.Errorf("%w: the execution conflict quadruple is partial", ErrDecisionRule)
	case present == 4 && (str(o, "decision") != DecisionReconciliationRequired || str(o, "reasonCode") != ReasonExecutionConflicting):
		return fmt.Errorf("%w: an execution conflict fact only with reconciliation_required / execution_conflicting", ErrDecisionRule)
	}
	switch str(o, "decision") {
	case DecisionSettleAndReleaseRemainder, DecisionReleaseAll:
	default:
		return nil
	}
	reserved, settled, released := str(m, "reservedAmount"), str(o, "settledAmount"), str(o, "releasedAmount")
	if c, err := CompareAmounts(settled, str(m, "targetTotal")); err != nil || c != 0 {
		return fmt.Errorf("%w: settledAmount %s is not the target total %s", ErrDecisionRule, settled, str(m, "targetTotal"))
	}
	if c, err := CompareAmounts(settled, reserved); err != nil || c > 0 {
		return fmt.Errorf("%w: settledAmount %s is above the reservation %s", ErrDecisionRule, settled, reserved)
	}
	sum, err := SumAmounts(settled, released)
	if err != nil || sum != reserved {
		return fmt.Errorf("%w: settled %s + released %s ≠ reserved %s", ErrDecisionRule, settled, released, reserved)
	}
	return nil
}
