package receipt

import (
	"fmt"
	"strconv"
	"time"

	"github.com/oceanway/core/contracts/digest"
	"github.com/oceanway/core/contracts/jcs"
	"github.com/oceanway/core/contracts/strict"
)

// SchemaVersion1 is the only schema version of every object in this package.
const SchemaVersion1 = "1"

// Quadruple prefixes of the objects this package defines or references.
const (
	prefixOperationsReceipt       = "operationsProjectionAppliedReceipt"
	prefixMeteringReceipt         = "meteringInputProcessorConsumerReceipt"
	prefixCoordinatorReceipt      = "billingFinalizationCoordinatorConsumerReceipt"
	prefixCatchUpReceipt          = "billingSettlementCatchUpConsumerReceipt"
	prefixWorkFinished            = "meteringInputWorkAttemptFinished"
	prefixWorkBlocked             = "meteringInputWorkAttemptBlocked"
	prefixWork                    = "meteringInputWork"
	prefixProcessing              = "providerCostAvailabilityProcessing"
	prefixEligibilityEvidence     = "eligibilityProcessingConflictEvidence"
	prefixProviderCostEvidence    = "providerCostProcessingConflictEvidence"
	prefixCatchUpBlocked          = "billingSettlementCatchUpWorkAttemptBlocked"
	prefixCatchUpFinished         = "billingSettlementCatchUpWorkAttemptFinished"
	prefixCatchUpWork             = "billingSettlementCatchUpWork"
	prefixAttemptManifest         = "attemptExecutionManifest"
	prefixEligibilityFact         = "executionEligibilityFact"
	prefixCurrentAvailability     = "currentAvailability"
	prefixTriggerSnapshot         = "billingFinalizationTriggerSnapshot"
	prefixFinalizationWork        = "billingFinalizationWork"
	prefixSettlementInputSnapshot = "settlementInputSnapshot"
	fieldCaseRef                  = "reconciliationCaseRef"
)

// Self-addressed definitions: each digest candidate leaves out exactly the
// repository-owned ref, the object's own time field and the digest (CT-3).
var (
	operationsSelf           = strict.SelfAddressed{Prefix: prefixOperationsReceipt, TimeFields: []string{"appliedAt"}}
	meteringSelf             = strict.SelfAddressed{Prefix: prefixMeteringReceipt, TimeFields: []string{"committedAt"}}
	coordinatorSelf          = strict.SelfAddressed{Prefix: prefixCoordinatorReceipt, TimeFields: []string{"committedAt"}}
	catchUpSelf              = strict.SelfAddressed{Prefix: prefixCatchUpReceipt, TimeFields: []string{"committedAt"}}
	workFinishedSelf         = strict.SelfAddressed{Prefix: prefixWorkFinished, TimeFields: []string{"finishedAt"}}
	workBlockedSelf          = strict.SelfAddressed{Prefix: prefixWorkBlocked, TimeFields: []string{"blockedAt"}}
	eligibilityEvidenceSelf  = strict.SelfAddressed{Prefix: prefixEligibilityEvidence, TimeFields: []string{"observedAt"}}
	providerCostEvidenceSelf = strict.SelfAddressed{Prefix: prefixProviderCostEvidence, TimeFields: []string{"detectedAt"}}
	catchUpBlockedSelf       = strict.SelfAddressed{Prefix: prefixCatchUpBlocked, TimeFields: []string{"blockedAt"}}
)

// readSelf reads an object's own quadruple; its schema version must be known.
func readSelf(o *strict.Object, prefix string) strict.Quadruple {
	q := o.Quadruple(prefix)
	if q.SchemaVersion != "" && q.SchemaVersion != SchemaVersion1 {
		o.Fail(strict.Fields(prefix)[1], strict.ErrUnknownSchemaVersion, strconv.Quote(q.SchemaVersion))
	}
	return q
}

// sealSelf fills the default schema/algorithm versions of an object's own
// quadruple and sets its digest to the digest of the candidate of full().
func sealSelf(s strict.SelfAddressed, q *strict.Quadruple, full func() map[string]any) error {
	if q.Ref == "" {
		return &strict.FieldError{Path: "$." + strict.Fields(s.Prefix)[0], Err: strict.ErrMissingField, Detail: "the repository-owned ref is assigned before sealing"}
	}
	if q.SchemaVersion == "" {
		q.SchemaVersion = SchemaVersion1
	}
	if q.DigestAlgorithmVersion == "" {
		q.DigestAlgorithmVersion = digest.JCSSHA256V1
	}
	d, err := s.Compute(q.DigestAlgorithmVersion, full())
	if err != nil {
		return fmt.Errorf("seal %s: %w", s.Prefix, err)
	}
	q.Digest = d.Value
	return nil
}

// selfAddressedObject is a content-addressed object of this package: its
// self-addressing definition and its own quadruple, its full JSON form and its
// refinement rules.
type selfAddressedObject interface {
	selfAddress() (strict.SelfAddressed, *strict.Quadruple)
	ToJSON() map[string]any
	Validate() error
}

// sealObject fills the default schema/algorithm versions of x's own
// quadruple, sets the digest of the candidate and validates the result. The
// ref must already be assigned.
func sealObject(x selfAddressedObject) error {
	s, q := x.selfAddress()
	if err := sealSelf(s, q, x.ToJSON); err != nil {
		return err
	}
	return x.Validate()
}

// candidateOf digests the candidate of x with its algorithm (jcs-sha256-v1
// when x does not carry one yet).
func candidateOf(x selfAddressedObject) (digest.Digest, error) {
	s, q := x.selfAddress()
	alg := q.DigestAlgorithmVersion
	if alg == "" {
		alg = digest.JCSSHA256V1
	}
	return s.Compute(alg, x.ToJSON())
}

// verifyObject recomputes the digest of x's candidate and compares it with the carried one.
func verifyObject(x selfAddressedObject) error {
	s, _ := x.selfAddress()
	if err := s.Verify(x.ToJSON()); err != nil {
		return &strict.FieldError{Path: "$", Err: err}
	}
	return nil
}

// checkTime records a zero timestamp.
func checkTime(v *strict.Reader, path string, t time.Time) {
	if t.IsZero() {
		v.Fail(path, strict.ErrInvalidTimestamp, "zero time")
	}
}

func putDigest(m map[string]any, algField, valueField string, d digest.Digest) {
	m[algField] = string(d.Algorithm)
	m[valueField] = d.Value
}

// Tenant is the tenant group tenantKind / tenantId / workspaceId / projectId?.
type Tenant struct {
	Kind        string
	ID          string
	WorkspaceID string
	ProjectID   string // optional; "" when absent
}

// Tenant kinds: the same closed set as CanonicalEventEnvelope@1 (contracts/envelope).
const (
	TenantOrganization = "organization"
	TenantPersonal     = "personal"
)

func readTenant(o *strict.Object) Tenant {
	t := Tenant{Kind: o.Enum("tenantKind", TenantOrganization, TenantPersonal), ID: o.UUID("tenantId"), WorkspaceID: o.UUID("workspaceId")}
	t.ProjectID, _ = o.OptUUID("projectId")
	return t
}

func (t Tenant) put(m map[string]any) {
	m["tenantKind"] = t.Kind
	m["tenantId"] = t.ID
	m["workspaceId"] = t.WorkspaceID
	if t.ProjectID != "" {
		m["projectId"] = t.ProjectID
	}
}

func (t Tenant) identity(s *identitySet) {
	s.req("tenantKind", t.Kind)
	s.req("tenantId", t.ID)
	s.req("workspaceId", t.WorkspaceID)
	s.sym("projectId", t.ProjectID)
}

// WorkBinding binds one metering input work: its generation, deterministic
// operation and full MeteringInputWork@1 quadruple.
type WorkBinding struct {
	Generation  int64
	OperationID string
	Work        strict.Quadruple
}

// readWork reads generationField / meteringInputWorkOperationId / meteringInputWork quadruple.
func readWork(o *strict.Object, generationField string) WorkBinding {
	return WorkBinding{
		Generation:  o.IntMin(generationField, 1),
		OperationID: o.String("meteringInputWorkOperationId"),
		Work:        o.Quadruple(prefixWork),
	}
}

func (w WorkBinding) put(m map[string]any, generationField string) {
	m[generationField] = w.Generation
	m["meteringInputWorkOperationId"] = w.OperationID
	w.Work.Put(m, prefixWork)
}

// SettlementSnapshot is one item of settlementInputSnapshots[]:
// runStepId / executionAttemptId / chargeDimensionKey and the snapshot's
// ref / schemaVersion / digestAlgorithmVersion / digest / stateVersion.
type SettlementSnapshot struct {
	RunStepID          string
	ExecutionAttemptID string
	ChargeDimensionKey string
	Snapshot           strict.Quadruple // unprefixed: ref, schemaVersion, digestAlgorithmVersion, digest
	StateVersion       int64
}

// SnapshotSet is a sorted settlement snapshot set with its count.
type SnapshotSet struct {
	Count     int64
	Snapshots []SettlementSnapshot
}

func readSnapshotSet(o *strict.Object) SnapshotSet {
	s := SnapshotSet{Count: o.IntMin("settlementInputSnapshotCount", 0)}
	for _, item := range o.Objects("settlementInputSnapshots") {
		s.Snapshots = append(s.Snapshots, SettlementSnapshot{
			RunStepID:          item.String("runStepId"),
			ExecutionAttemptID: item.String("executionAttemptId"),
			ChargeDimensionKey: item.String("chargeDimensionKey"),
			Snapshot:           item.Quadruple(""),
			StateVersion:       item.IntMin("stateVersion", 1),
		})
		item.Close()
	}
	return s
}

func (s SnapshotSet) put(m map[string]any) {
	m["settlementInputSnapshotCount"] = s.Count
	items := make([]any, len(s.Snapshots))
	for i, sn := range s.Snapshots {
		im := map[string]any{
			"runStepId":          sn.RunStepID,
			"executionAttemptId": sn.ExecutionAttemptID,
			"chargeDimensionKey": sn.ChargeDimensionKey,
			"stateVersion":       sn.StateVersion,
		}
		sn.Snapshot.Put(im, "")
		items[i] = im
	}
	m["settlementInputSnapshots"] = items
}

// validate checks the items, the count (= length) and the strict ascending
// order by (runStepId, executionAttemptId, chargeDimensionKey), compared by
// UTF-16 code units like every sorted contract array. attemptID (and runStepID
// when known) bind every snapshot to the one attempt of the lane.
func (s SnapshotSet) validate(v *strict.Reader, path, runStepID, attemptID string) {
	if s.Count != int64(len(s.Snapshots)) {
		v.Fail(path+".settlementInputSnapshotCount", ErrSnapshotCount, fmt.Sprintf("count %d, %d snapshots", s.Count, len(s.Snapshots)))
	}
	for i := 1; i < len(s.Snapshots); i++ {
		if compareSnapshotKey(s.Snapshots[i-1], s.Snapshots[i]) >= 0 {
			v.Fail(fmt.Sprintf("%s.settlementInputSnapshots[%d]", path, i), ErrSnapshotsNotSorted, "")
			break
		}
	}
	for i, sn := range s.Snapshots {
		if (attemptID != "" && sn.ExecutionAttemptID != attemptID) || (runStepID != "" && sn.RunStepID != runStepID) {
			v.Fail(fmt.Sprintf("%s.settlementInputSnapshots[%d]", path, i), ErrSnapshotAttempt,
				fmt.Sprintf("snapshot %s/%s, lane %s/%s", sn.RunStepID, sn.ExecutionAttemptID, runStepID, attemptID))
			break
		}
	}
}

func compareSnapshotKey(a, b SettlementSnapshot) int {
	if c := jcs.CompareUTF16(a.RunStepID, b.RunStepID); c != 0 {
		return c
	}
	if c := jcs.CompareUTF16(a.ExecutionAttemptID, b.ExecutionAttemptID); c != 0 {
		return c
	}
	return jcs.CompareUTF16(a.ChargeDimensionKey, b.ChargeDimensionKey)
}

// SortSnapshots sorts snapshots into the canonical order and returns the set
// with its count; consumers use it to build applied states and finishes.
func SortSnapshots(snapshots []SettlementSnapshot) SnapshotSet {
	out := append([]SettlementSnapshot(nil), snapshots...)
	for i := 1; i < len(out); i++ { // insertion sort: sets are small and this keeps the comparator single-sourced
		for j := i; j > 0 && compareSnapshotKey(out[j-1], out[j]) > 0; j-- {
			out[j-1], out[j] = out[j], out[j-1]
		}
	}
	return SnapshotSet{Count: int64(len(out)), Snapshots: out}
}

// quadFields lists the four field names of each prefix.
func quadFields(prefixes ...string) []string {
	var out []string
	for _, p := range prefixes {
		f := strict.Fields(p)
		out = append(out, f[:]...)
	}
	return out
}

func newReader() *strict.Reader { return &strict.Reader{} }

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
