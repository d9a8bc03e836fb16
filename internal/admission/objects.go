package admission

import (
	"fmt"
	"strconv"
	"time"

	"github.com/oceanway/core/contracts/digest"
	"github.com/oceanway/core/contracts/envelope"
	"github.com/oceanway/core/contracts/execution"
	"github.com/oceanway/core/contracts/jcs"
	"github.com/oceanway/core/contracts/strict"
)

// SchemaVersion1 is the schema version of every object this package defines.
const SchemaVersion1 = "1"

// Prefixes and own time fields of the content-addressed objects (CT-3: the
// digest candidate is the full JSON form without the repository-owned ref,
// the object's own time field and the digest).
var (
	triggerSelf = strict.SelfAddressed{Prefix: "billingFinalizationTriggerSnapshot", TimeFields: []string{"capturedAt"}}
	workSelf    = strict.SelfAddressed{Prefix: "billingFinalizationWork", TimeFields: []string{"createdAt"}}
)

// DerivationFinalizationOperation names the derivation of a Work
// generation's billingFinalizationOperationId (ADR-031: derived from
// Reservation/Run/Generation and the content-addressed Trigger Snapshot).
const DerivationFinalizationOperation = "billing_finalization_operation@1"

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

// TriggerSnapshot is BillingFinalizationTriggerSnapshot@1 — our definition:
// the inputs one Work generation was triggered with.
//
//	billingFinalizationTriggerSnapshotRef / SchemaVersion("1") / DigestAlgorithmVersion / Digest
//	billingFinalizationFenceId / billingReservationId / billingAccountId / runId
//	finalizationFenceRevision / workGeneration
//	runAdmissionManifest quadruple
//	closureWatermark = {state=none}            (no closure event applied yet)
//	settlementInputWatermark = {state=none}
//	capturedAt
type TriggerSnapshot struct {
	Snapshot             strict.Quadruple
	FenceID              string
	BillingReservationID string
	BillingAccountID     string
	RunID                string
	FenceRevision        int64
	WorkGeneration       int64
	Manifest             strict.Quadruple
	CapturedAt           time.Time
}

// ToJSON returns the snapshot's full JSON form.
func (s *TriggerSnapshot) ToJSON() map[string]any {
	out := map[string]any{
		"billingFinalizationFenceId": s.FenceID,
		"billingReservationId":       s.BillingReservationID,
		"billingAccountId":           s.BillingAccountID,
		"runId":                      s.RunID,
		"finalizationFenceRevision":  s.FenceRevision,
		"workGeneration":             s.WorkGeneration,
		"closureWatermark":           map[string]any{"state": "none"},
		"settlementInputWatermark":   map[string]any{"state": "none"},
		"capturedAt":                 strict.FormatTimestamp(s.CapturedAt),
	}
	s.Manifest.Put(out, execution.PrefixRunAdmissionManifest)
	s.Snapshot.Put(out, triggerSelf.Prefix)
	return out
}

// Work is BillingFinalizationWork@1 — our definition: one durable,
// content-addressed Work generation of a Finalization Fence.
//
//	billingFinalizationWorkRef / SchemaVersion("1") / DigestAlgorithmVersion / Digest
//	billingFinalizationFenceId / billingReservationId / billingAccountId / runId
//	workGeneration / billingFinalizationOperationId
//	billingFinalizationTriggerSnapshot quadruple
//	createdAt
//
// Its waiting state (closure_event_not_applied) is repository state, not
// part of the content: the Work does not change when it becomes runnable.
type Work struct {
	Work                 strict.Quadruple
	FenceID              string
	BillingReservationID string
	BillingAccountID     string
	RunID                string
	Generation           int64
	OperationID          string
	Trigger              strict.Quadruple
	CreatedAt            time.Time
}

// ToJSON returns the work's full JSON form.
func (w *Work) ToJSON() map[string]any {
	out := map[string]any{
		"billingFinalizationFenceId":     w.FenceID,
		"billingReservationId":           w.BillingReservationID,
		"billingAccountId":               w.BillingAccountID,
		"runId":                          w.RunID,
		"workGeneration":                 w.Generation,
		"billingFinalizationOperationId": w.OperationID,
		"createdAt":                      strict.FormatTimestamp(w.CreatedAt),
	}
	w.Trigger.Put(out, triggerSelf.Prefix)
	w.Work.Put(out, workSelf.Prefix)
	return out
}

// FinalizationOperationID derives a Work generation's
// billingFinalizationOperationId from the reservation, the run, the
// generation and the trigger snapshot digest.
func FinalizationOperationID(reservationID, runID string, generation int64, trigger digest.Digest) string {
	return envelope.DeriveID(DerivationFinalizationOperation, map[string]any{
		"billingReservationId": reservationID,
		"runId":                runID,
		"workGeneration":       generation,
		"billingFinalizationTriggerSnapshotDigestAlgorithmVersion": string(trigger.Algorithm),
		"billingFinalizationTriggerSnapshotDigest":                 trigger.Value,
	})
}

// seal fills schema/algorithm versions into q, computes the digest of the
// candidate of toJSON() and returns the canonical body.
func seal(self strict.SelfAddressed, q *strict.Quadruple, toJSON func() map[string]any) ([]byte, error) {
	q.SchemaVersion = SchemaVersion1
	q.DigestAlgorithmVersion = digest.JCSSHA256V1
	q.Digest = ""
	d, err := self.Compute(digest.JCSSHA256V1, toJSON())
	if err != nil {
		return nil, fmt.Errorf("digest %s: %w", self.Prefix, err)
	}
	q.Digest = d.Value
	full := toJSON()
	if err := self.Verify(full); err != nil {
		return nil, fmt.Errorf("verify %s: %w", self.Prefix, err)
	}
	if err := q.Validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", self.Prefix, err)
	}
	return jcs.Marshal(full)
}
