package reconciliation

import (
	"github.com/oceanway/core/contracts/schema"
	"github.com/oceanway/core/contracts/strict"
)

// Case is the business identity of one case generation. Request,
// Candidate, Decision, the Grant's claims and the Applied fact each carry it
// in full, so every hop compares it field by field and none has to look it
// up (or trust a bare ref).
type Case struct {
	ReconciliationCaseRef    string
	ReconciliationGeneration int64
	// Identity is the FinalizationReconciliationCaseIdentityReservation@1.
	Identity             strict.Quadruple
	BillingAccountID     string
	BillingReservationID string
	RunID                string
	FenceID              string
}

func (c Case) put(m map[string]any) {
	m["reconciliationCaseRef"], m["reconciliationGeneration"] = c.ReconciliationCaseRef, c.ReconciliationGeneration
	c.Identity.Put(m, PrefixCaseIdentity)
	m["billingAccountId"], m["billingReservationId"] = c.BillingAccountID, c.BillingReservationID
	m["runId"], m["billingFinalizationFenceId"] = c.RunID, c.FenceID
}

func caseOf(m map[string]any) Case {
	return Case{
		ReconciliationCaseRef: str(m, "reconciliationCaseRef"), ReconciliationGeneration: i64(m, "reconciliationGeneration"),
		Identity: quad(m, PrefixCaseIdentity), BillingAccountID: str(m, "billingAccountId"),
		BillingReservationID: str(m, "billingReservationId"), RunID: str(m, "runId"), FenceID: str(m, "billingFinalizationFenceId"),
	}
}

func caseFields() []schema.Field {
	return schema.Fields(
		schema.F("reconciliationCaseRef", schema.RefText, "the pre-reserved case ref"),
		schema.F("reconciliationGeneration", schema.Int{Min: 1}, ""),
		schema.Quad(PrefixCaseIdentity, "the FinalizationReconciliationCaseIdentityReservation@1 of the generation"),
		ids("billingAccountId", "billingReservationId", "runId", "billingFinalizationFenceId"),
	)
}

// diff names the first field in which c and o differ ("" when equal).
func (c Case) diff(o Case) string {
	switch {
	case c.ReconciliationCaseRef != o.ReconciliationCaseRef:
		return "reconciliationCaseRef"
	case c.ReconciliationGeneration != o.ReconciliationGeneration:
		return "reconciliationGeneration"
	case c.Identity != o.Identity:
		return PrefixCaseIdentity
	case c.BillingAccountID != o.BillingAccountID:
		return "billingAccountId"
	case c.BillingReservationID != o.BillingReservationID:
		return "billingReservationId"
	case c.RunID != o.RunID:
		return "runId"
	case c.FenceID != o.FenceID:
		return "billingFinalizationFenceId"
	}
	return ""
}
