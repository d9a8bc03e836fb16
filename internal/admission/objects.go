package admission

import (
	"strconv"

	"github.com/oceanway/core/contracts/digest"
	"github.com/oceanway/core/contracts/envelope"
	"github.com/oceanway/core/internal/billing"
)

// SchemaVersion1 is the schema version of every object this package defines.
const SchemaVersion1 = "1"

// credits is SettlementEconomicIdentity@1 {kind=credits}.
func credits() map[string]any { return envelope.SettlementEconomicIdentityV1{Kind: "credits"}.Map() }

// RequestDoc is the canonical admission request (AdmissionRequest@1, our
// definition): what the idempotency digest covers.
func (r Request) doc() map[string]any {
	m := map[string]any{
		"admissionOperationId":        r.AdmissionOperationID,
		"tenantKind":                  r.TenantKind,
		"tenantId":                    r.TenantID,
		"workspaceId":                 r.WorkspaceID,
		"billingAccountId":            r.BillingAccountID,
		"correlationId":               r.correlationID(),
		"reservationEconomicIdentity": credits(),
		"reservedAmount":              strconv.FormatInt(r.ReservedCredits, 10),
	}
	if r.ProjectID != "" {
		m["projectId"] = r.ProjectID
	}
	return m
}

// RunAdmissionManifest@1 is defined in contracts/execution (its fields and
// why each is there are listed on execution.RunAdmissionManifest), so the
// Execution owner recomputes exactly the object Core sealed.

// FinalizationOperationID derives a Work generation's
// billingFinalizationOperationId (billing owns the derivation).
func FinalizationOperationID(reservationID, runID string, generation int64, trigger digest.Digest) string {
	return billing.FinalizationOperationID(reservationID, runID, generation, trigger)
}
