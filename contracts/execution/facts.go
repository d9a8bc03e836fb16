package execution

import (
	"sort"
	"time"

	"github.com/oceanway/core/contracts/strict"
)

// AttemptNotDispatchedFact is AttemptNotDispatchedFact@1 — our definition:
// Execution's record that the Gateway proved the attempt's dispatch slot
// terminal_rejected before any binding (GW-1).
//
//	attemptNotDispatchedFactRef / SchemaVersion("1") / DigestAlgorithmVersion / Digest
//	runId / runStepId / executionAttemptId     the attempt
//	attemptExecutionManifest quadruple         the attempt's manifest (part of the slot key)
//	gatewayDeploymentId                        the deployment of the slot (part of the slot key)
//	gatewayPreBindingRejectionFact quadruple   the Gateway's rejection, read back from the Gateway owner
//	rejectionReasonCode                        the Gateway's deterministic reason
//	recordedAt                                 excluded from the digest candidate
type AttemptNotDispatchedFact struct {
	Fact                strict.Quadruple
	RunID               string
	RunStepID           string
	ExecutionAttemptID  string
	AttemptManifest     strict.Quadruple
	GatewayDeploymentID string
	Rejection           strict.Quadruple
	RejectionReasonCode string
	RecordedAt          time.Time
}

func (*AttemptNotDispatchedFact) Kind() string              { return KindAttemptNotDispatchedFact }
func (f *AttemptNotDispatchedFact) Quad() *strict.Quadruple { return &f.Fact }

// ToJSON returns the full JSON form.
func (f *AttemptNotDispatchedFact) ToJSON() map[string]any {
	out := map[string]any{
		"runId": f.RunID, "runStepId": f.RunStepID, "executionAttemptId": f.ExecutionAttemptID,
		"gatewayDeploymentId": f.GatewayDeploymentID, "rejectionReasonCode": f.RejectionReasonCode,
		"recordedAt": strict.FormatTimestamp(f.RecordedAt),
	}
	f.AttemptManifest.Put(out, PrefixAttemptExecutionManifest)
	f.Rejection.Put(out, PrefixGatewayPreBindingRejectionFact)
	f.Fact.Put(out, PrefixAttemptNotDispatchedFact)
	return out
}

// DecodeAttemptNotDispatchedFact strictly decodes the fact and verifies its digest.
func DecodeAttemptNotDispatchedFact(doc []byte) (*AttemptNotDispatchedFact, error) {
	m, err := decodeMap(KindAttemptNotDispatchedFact, doc)
	if err != nil {
		return nil, err
	}
	return &AttemptNotDispatchedFact{
		Fact: quad(m, PrefixAttemptNotDispatchedFact), RunID: str(m, "runId"), RunStepID: str(m, "runStepId"),
		ExecutionAttemptID: str(m, "executionAttemptId"), AttemptManifest: quad(m, PrefixAttemptExecutionManifest),
		GatewayDeploymentID: str(m, "gatewayDeploymentId"), Rejection: quad(m, PrefixGatewayPreBindingRejectionFact),
		RejectionReasonCode: str(m, "rejectionReasonCode"), RecordedAt: timeOf(m, "recordedAt"),
	}, nil
}

// ExecutionEligibilityFact is ExecutionEligibilityFact@1 — our definition:
// the unique eligibility of one attempt (EX-3).
//
//	executionEligibilityFactRef / SchemaVersion("1") / DigestAlgorithmVersion / Digest
//	billingAccountId / billingReservationId     carried by execution.attempt-eligibility.finalized@1
//	runId / runStepId / executionAttemptId      the attempt
//	runAdmissionManifest quadruple              the run's manifest
//	attemptExecutionManifest quadruple          the attempt's manifest
//	disposition = {dispatchDisposition=dispatched}
//	            | {dispatchDisposition=not_dispatched, attemptNotDispatchedFact quadruple}
//	finalizedAt                                 excluded from the digest candidate
type ExecutionEligibilityFact struct {
	Fact                 strict.Quadruple
	BillingAccountID     string
	BillingReservationID string
	RunID                string
	RunStepID            string
	ExecutionAttemptID   string
	RunAdmissionManifest strict.Quadruple
	AttemptManifest      strict.Quadruple
	Disposition          string
	// NotDispatched is set only for not_dispatched.
	NotDispatched strict.Quadruple
	FinalizedAt   time.Time
}

func (*ExecutionEligibilityFact) Kind() string              { return KindExecutionEligibilityFact }
func (f *ExecutionEligibilityFact) Quad() *strict.Quadruple { return &f.Fact }

// ToJSON returns the full JSON form.
func (f *ExecutionEligibilityFact) ToJSON() map[string]any {
	disp := map[string]any{"dispatchDisposition": f.Disposition}
	if f.Disposition == DispositionNotDispatched {
		f.NotDispatched.Put(disp, PrefixAttemptNotDispatchedFact)
	}
	out := map[string]any{
		"billingAccountId": f.BillingAccountID, "billingReservationId": f.BillingReservationID,
		"runId": f.RunID, "runStepId": f.RunStepID, "executionAttemptId": f.ExecutionAttemptID,
		"disposition": disp, "finalizedAt": strict.FormatTimestamp(f.FinalizedAt),
	}
	f.RunAdmissionManifest.Put(out, PrefixRunAdmissionManifest)
	f.AttemptManifest.Put(out, PrefixAttemptExecutionManifest)
	f.Fact.Put(out, PrefixExecutionEligibilityFact)
	return out
}

// DecodeExecutionEligibilityFact strictly decodes the fact and verifies its digest.
func DecodeExecutionEligibilityFact(doc []byte) (*ExecutionEligibilityFact, error) {
	m, err := decodeMap(KindExecutionEligibilityFact, doc)
	if err != nil {
		return nil, err
	}
	disp, _ := m["disposition"].(map[string]any)
	f := &ExecutionEligibilityFact{
		Fact: quad(m, PrefixExecutionEligibilityFact), BillingAccountID: str(m, "billingAccountId"),
		BillingReservationID: str(m, "billingReservationId"), RunID: str(m, "runId"), RunStepID: str(m, "runStepId"),
		ExecutionAttemptID: str(m, "executionAttemptId"), RunAdmissionManifest: quad(m, PrefixRunAdmissionManifest),
		AttemptManifest: quad(m, PrefixAttemptExecutionManifest), Disposition: str(disp, "dispatchDisposition"),
		FinalizedAt: timeOf(m, "finalizedAt"),
	}
	if f.Disposition == DispositionNotDispatched {
		f.NotDispatched = quad(disp, PrefixAttemptNotDispatchedFact)
	}
	return f, nil
}

// AttemptSetItem is one attempt of a closed set.
type AttemptSetItem struct {
	RunStepID           string
	ExecutionAttemptID  string
	AttemptManifest     strict.Quadruple
	EligibilityFact     strict.Quadruple
	DispatchDisposition string
}

func (i AttemptSetItem) toJSON() map[string]any {
	out := map[string]any{"runStepId": i.RunStepID, "executionAttemptId": i.ExecutionAttemptID, "dispatchDisposition": i.DispatchDisposition}
	i.AttemptManifest.Put(out, PrefixAttemptExecutionManifest)
	i.EligibilityFact.Put(out, PrefixExecutionEligibilityFact)
	return out
}

// SortAttempts sorts items by (runStepId, executionAttemptId), the one
// order of an attempt set.
func SortAttempts(items []AttemptSetItem) {
	sort.Slice(items, func(a, b int) bool {
		return compareKey(items[a].RunStepID, items[a].ExecutionAttemptID, items[b].RunStepID, items[b].ExecutionAttemptID) < 0
	})
}

func itemsJSON(items []AttemptSetItem) []any {
	out := make([]any, 0, len(items))
	for _, i := range items {
		out = append(out, i.toJSON())
	}
	return out
}

func readItems(m map[string]any) []AttemptSetItem {
	raw, _ := m["attempts"].([]any)
	out := make([]AttemptSetItem, 0, len(raw))
	for _, r := range raw {
		x, _ := r.(map[string]any)
		out = append(out, AttemptSetItem{
			RunStepID: str(x, "runStepId"), ExecutionAttemptID: str(x, "executionAttemptId"),
			AttemptManifest: quad(x, PrefixAttemptExecutionManifest), EligibilityFact: quad(x, PrefixExecutionEligibilityFact),
			DispatchDisposition: str(x, "dispatchDisposition"),
		})
	}
	return out
}

// RunClosure is the run identity of a closure.
type RunClosure struct {
	Tenant               Tenant
	BillingAccountID     string
	BillingReservationID string
	RunID                string
	RunAdmissionManifest strict.Quadruple
}

func (c RunClosure) put(m map[string]any) {
	c.Tenant.put(m)
	m["billingAccountId"] = c.BillingAccountID
	m["billingReservationId"] = c.BillingReservationID
	m["runId"] = c.RunID
	c.RunAdmissionManifest.Put(m, PrefixRunAdmissionManifest)
}

func readClosure(m map[string]any) RunClosure {
	return RunClosure{Tenant: readTenant(m), BillingAccountID: str(m, "billingAccountId"), BillingReservationID: str(m, "billingReservationId"),
		RunID: str(m, "runId"), RunAdmissionManifest: quad(m, PrefixRunAdmissionManifest)}
}

// RunAttemptSetManifest is RunAttemptSetManifest@1 — our definition of the
// closed attempt set (ADR-031: the complete attempt manifests and
// eligibility facts by (runStepId, executionAttemptId); an empty set is
// attemptCount 0 and an empty array).
//
//	attemptSetManifestRef / SchemaVersion("1") / DigestAlgorithmVersion / Digest
//	tenant, billingAccountId, billingReservationId, runId, runAdmissionManifest quadruple
//	attemptCount, attempts[] {runStepId, executionAttemptId, attemptExecutionManifest quadruple,
//	                          executionEligibilityFact quadruple, dispatchDisposition}
//	closedAt                    excluded from the digest candidate
type RunAttemptSetManifest struct {
	Manifest strict.Quadruple
	RunClosure
	Attempts []AttemptSetItem
	ClosedAt time.Time
}

func (*RunAttemptSetManifest) Kind() string              { return KindRunAttemptSetManifest }
func (s *RunAttemptSetManifest) Quad() *strict.Quadruple { return &s.Manifest }

// ToJSON returns the full JSON form.
func (s *RunAttemptSetManifest) ToJSON() map[string]any {
	out := map[string]any{"attemptCount": int64(len(s.Attempts)), "attempts": itemsJSON(s.Attempts), "closedAt": strict.FormatTimestamp(s.ClosedAt)}
	s.RunClosure.put(out)
	s.Manifest.Put(out, PrefixRunAttemptSetManifest)
	return out
}

// DecodeRunAttemptSetManifest strictly decodes the set and verifies its digest.
func DecodeRunAttemptSetManifest(doc []byte) (*RunAttemptSetManifest, error) {
	m, err := decodeMap(KindRunAttemptSetManifest, doc)
	if err != nil {
		return nil, err
	}
	return &RunAttemptSetManifest{Manifest: quad(m, PrefixRunAttemptSetManifest), RunClosure: readClosure(m), Attempts: readItems(m), ClosedAt: timeOf(m, "closedAt")}, nil
}

// RunExecutionFinalizationFact is RunExecutionFinalizationFact@1 — our
// definition of the closure fact; its attempts equal the attempt set's item
// by item, in order (ADR-031).
//
//	runExecutionFinalizationRef / SchemaVersion("1") / DigestAlgorithmVersion / Digest
//	tenant, billingAccountId, billingReservationId, runId, runAdmissionManifest quadruple
//	runExecutionToken quadruple           the token the run was opened with
//	closureOperationId                    the closure operation (event operation id)
//	runExecutionFinalizationStateVersion  = 2 (the state version after the CAS)
//	attemptSetManifest quadruple, attemptCount, attempts[]
//	closedAt                              excluded from the digest candidate
type RunExecutionFinalizationFact struct {
	Fact strict.Quadruple
	RunClosure
	Token              strict.Quadruple
	ClosureOperationID string
	StateVersion       int64
	AttemptSet         strict.Quadruple
	Attempts           []AttemptSetItem
	ClosedAt           time.Time
}

func (*RunExecutionFinalizationFact) Kind() string              { return KindRunExecutionFinalizationFact }
func (f *RunExecutionFinalizationFact) Quad() *strict.Quadruple { return &f.Fact }

// ToJSON returns the full JSON form.
func (f *RunExecutionFinalizationFact) ToJSON() map[string]any {
	out := map[string]any{
		"closureOperationId": f.ClosureOperationID, "runExecutionFinalizationStateVersion": f.StateVersion,
		"attemptCount": int64(len(f.Attempts)), "attempts": itemsJSON(f.Attempts), "closedAt": strict.FormatTimestamp(f.ClosedAt),
	}
	f.RunClosure.put(out)
	f.Token.Put(out, PrefixRunExecutionToken)
	f.AttemptSet.Put(out, PrefixRunAttemptSetManifest)
	f.Fact.Put(out, PrefixRunExecutionFinalization)
	return out
}

// DecodeRunExecutionFinalizationFact strictly decodes the fact and verifies its digest.
func DecodeRunExecutionFinalizationFact(doc []byte) (*RunExecutionFinalizationFact, error) {
	m, err := decodeMap(KindRunExecutionFinalizationFact, doc)
	if err != nil {
		return nil, err
	}
	return &RunExecutionFinalizationFact{
		Fact: quad(m, PrefixRunExecutionFinalization), RunClosure: readClosure(m), Token: quad(m, PrefixRunExecutionToken),
		ClosureOperationID: str(m, "closureOperationId"), StateVersion: i64(m, "runExecutionFinalizationStateVersion"),
		AttemptSet: quad(m, PrefixRunAttemptSetManifest), Attempts: readItems(m), ClosedAt: timeOf(m, "closedAt"),
	}, nil
}

// RunExecutionFinalizationConflictFact is
// RunExecutionFinalizationConflictFact@1 — our definition: what
// readRunFinalizationPrecondition answers with when the stored closure
// conflicts with the request or does not recompute.
//
//	runExecutionFinalizationConflictRef / SchemaVersion("1") / DigestAlgorithmVersion / Digest
//	runId
//	requestedRunExecutionFinalization quadruple   what the reader asked about
//	storedRunExecutionFinalizationRef?            the stored closure, when one exists
//	reasonCode
//	detectedAt                                    excluded from the digest candidate
type RunExecutionFinalizationConflictFact struct {
	Fact       strict.Quadruple
	RunID      string
	Requested  strict.Quadruple
	StoredRef  string
	ReasonCode string
	DetectedAt time.Time
}

func (*RunExecutionFinalizationConflictFact) Kind() string {
	return KindRunExecutionFinalizationConflictFact
}
func (f *RunExecutionFinalizationConflictFact) Quad() *strict.Quadruple {
	return &f.Fact
}

// ToJSON returns the full JSON form.
func (f *RunExecutionFinalizationConflictFact) ToJSON() map[string]any {
	out := map[string]any{"runId": f.RunID, "reasonCode": f.ReasonCode, "detectedAt": strict.FormatTimestamp(f.DetectedAt)}
	if f.StoredRef != "" {
		out["storedRunExecutionFinalizationRef"] = f.StoredRef
	}
	f.Requested.Put(out, "requestedRunExecutionFinalization")
	f.Fact.Put(out, conflictSelf.Prefix)
	return out
}

// DecodeRunExecutionFinalizationConflictFact strictly decodes the fact and verifies its digest.
func DecodeRunExecutionFinalizationConflictFact(doc []byte) (*RunExecutionFinalizationConflictFact, error) {
	m, err := decodeMap(KindRunExecutionFinalizationConflictFact, doc)
	if err != nil {
		return nil, err
	}
	return &RunExecutionFinalizationConflictFact{
		Fact: quad(m, conflictSelf.Prefix), RunID: str(m, "runId"), Requested: quad(m, "requestedRunExecutionFinalization"),
		StoredRef: str(m, "storedRunExecutionFinalizationRef"), ReasonCode: str(m, "reasonCode"), DetectedAt: timeOf(m, "detectedAt"),
	}, nil
}
