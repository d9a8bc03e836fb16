package billing

import (
	"fmt"
	"time"

	"github.com/oceanway/core/contracts/digest"
	"github.com/oceanway/core/contracts/envelope"
	"github.com/oceanway/core/contracts/jcs"
	"github.com/oceanway/core/contracts/strict"
)

// SchemaVersion1 is the schema version of the objects this package defines.
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

// ClosureMark is the applied closure a trigger snapshot freezes: the one
// execution.run-finalization.closed@1 the coordinator applied.
type ClosureMark struct {
	EventID                  string
	EnvelopeDigest           digest.Digest
	RunExecutionFinalization strict.Quadruple
	StateVersion             int64
	AttemptSetManifest       strict.Quadruple
	AttemptCount             int64
}

func (c *ClosureMark) toJSON() map[string]any {
	if c == nil {
		return map[string]any{"state": "none"}
	}
	m := map[string]any{
		"state":          "applied",
		"closureEventId": c.EventID,
		"closureEventEnvelopeDigestAlgorithmVersion": string(c.EnvelopeDigest.Algorithm),
		"closureEventEnvelopeSha256":                 c.EnvelopeDigest.Value,
		"runExecutionFinalizationStateVersion":       c.StateVersion,
		"attemptCount":                               c.AttemptCount,
	}
	c.RunExecutionFinalization.Put(m, "runExecutionFinalization")
	c.AttemptSetManifest.Put(m, "attemptSetManifest")
	return m
}

// SettlementMark is one dimension's settlement-input watermark a trigger
// snapshot freezes.
type SettlementMark struct {
	SettlementDimensionID string
	StateVersion          int64
	Snapshot              strict.Quadruple // settlementInputSnapshot
}

func settlementJSON(marks []SettlementMark) map[string]any {
	if len(marks) == 0 {
		return map[string]any{"state": "none"}
	}
	dims := make([]any, 0, len(marks))
	for _, s := range marks {
		d := map[string]any{"settlementDimensionId": s.SettlementDimensionID, "settlementInputStateVersion": s.StateVersion}
		s.Snapshot.Put(d, "settlementInputSnapshot")
		dims = append(dims, d)
	}
	return map[string]any{"state": "advanced", "dimensions": dims}
}

// TriggerSnapshot is BillingFinalizationTriggerSnapshot@1 — our definition:
// the inputs one Work generation was triggered with.
//
//	billingFinalizationTriggerSnapshotRef / SchemaVersion("1") / DigestAlgorithmVersion / Digest
//	billingFinalizationFenceId / billingReservationId / billingAccountId / runId
//	finalizationFenceRevision / workGeneration
//	runAdmissionManifest quadruple
//	closureWatermark = {state=none} | {state=applied; closureEventId; envelope digest;
//	                    runExecutionFinalization quadruple + stateVersion; attemptSetManifest quadruple; attemptCount}
//	settlementInputWatermark = {state=none} | {state=advanced; dimensions=[{settlementDimensionId;
//	                    settlementInputStateVersion; settlementInputSnapshot quadruple}] sorted by id}
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
	Closure              *ClosureMark     // nil: none
	Settlement           []SettlementMark // empty: none
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
		"closureWatermark":           s.Closure.toJSON(),
		"settlementInputWatermark":   settlementJSON(s.Settlement),
		"capturedAt":                 strict.FormatTimestamp(s.CapturedAt),
	}
	s.Manifest.Put(out, "runAdmissionManifest")
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
// Its state (waiting, pending, evaluated, committed, superseded) is
// repository state, not content: the Work does not change when it runs.
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
