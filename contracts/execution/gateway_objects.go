package execution

import (
	"errors"
	"fmt"
	"time"

	"github.com/oceanway/core/contracts/strict"
)

// ErrAvailabilityRule marks a snapshot whose predecessor, state version or
// evidence do not follow the chain rules.
var ErrAvailabilityRule = errors.New("execution: availability snapshot breaks the chain rules")

// SlotKey is the dispatch slot key: attempt + gateway deployment + attempt
// manifest quadruple.
type SlotKey struct {
	ExecutionAttemptID  string
	GatewayDeploymentID string
	AttemptManifest     strict.Quadruple
}

func (k SlotKey) put(m map[string]any) {
	m["executionAttemptId"] = k.ExecutionAttemptID
	m["gatewayDeploymentId"] = k.GatewayDeploymentID
	k.AttemptManifest.Put(m, PrefixAttemptExecutionManifest)
}

func readSlotKey(m map[string]any) SlotKey {
	return SlotKey{ExecutionAttemptID: str(m, "executionAttemptId"), GatewayDeploymentID: str(m, "gatewayDeploymentId"),
		AttemptManifest: quad(m, PrefixAttemptExecutionManifest)}
}

// Route is what a binding fixes for the whole attempt.
type Route struct {
	ChannelID         string
	SupplyID          string
	CredentialVersion int64
	ProviderModel     string
	AdapterID         string
}

func (r Route) put(m map[string]any) {
	m["channelId"], m["supplyId"], m["credentialVersion"] = r.ChannelID, r.SupplyID, r.CredentialVersion
	m["providerModel"], m["adapterId"] = r.ProviderModel, r.AdapterID
}

func readRoute(m map[string]any) Route {
	return Route{ChannelID: str(m, "channelId"), SupplyID: str(m, "supplyId"), CredentialVersion: i64(m, "credentialVersion"),
		ProviderModel: str(m, "providerModel"), AdapterID: str(m, "adapterId")}
}

// GatewayRouteSnapshot is GatewayRouteSnapshot@1 — our definition: the slot
// key, the routing policy revision and the route, captured at binding.
type GatewayRouteSnapshot struct {
	Snapshot strict.Quadruple
	SlotKey
	RoutingPolicyRevision int64
	Route
	CapturedAt time.Time
}

func (*GatewayRouteSnapshot) Kind() string              { return KindGatewayRouteSnapshot }
func (s *GatewayRouteSnapshot) Quad() *strict.Quadruple { return &s.Snapshot }

// ToJSON returns the full JSON form.
func (s *GatewayRouteSnapshot) ToJSON() map[string]any {
	out := map[string]any{"routingPolicyRevision": s.RoutingPolicyRevision, "capturedAt": strict.FormatTimestamp(s.CapturedAt)}
	s.SlotKey.put(out)
	s.Route.put(out)
	s.Snapshot.Put(out, PrefixGatewayRouteSnapshot)
	return out
}

// DecodeGatewayRouteSnapshot strictly decodes a snapshot and verifies its digest.
func DecodeGatewayRouteSnapshot(doc []byte) (*GatewayRouteSnapshot, error) {
	m, err := decodeMap(KindGatewayRouteSnapshot, doc)
	if err != nil {
		return nil, err
	}
	return &GatewayRouteSnapshot{Snapshot: quad(m, PrefixGatewayRouteSnapshot), SlotKey: readSlotKey(m),
		RoutingPolicyRevision: i64(m, "routingPolicyRevision"), Route: readRoute(m), CapturedAt: timeOf(m, "capturedAt")}, nil
}

// AttemptRouteBinding is AttemptRouteBinding@1 — our definition: the unique
// binding of a slot to its route snapshot and route.
type AttemptRouteBinding struct {
	Binding strict.Quadruple
	SlotKey
	RouteSnapshot strict.Quadruple
	Route
	BoundAt time.Time
}

func (*AttemptRouteBinding) Kind() string              { return KindAttemptRouteBinding }
func (b *AttemptRouteBinding) Quad() *strict.Quadruple { return &b.Binding }

// ToJSON returns the full JSON form.
func (b *AttemptRouteBinding) ToJSON() map[string]any {
	out := map[string]any{"boundAt": strict.FormatTimestamp(b.BoundAt)}
	b.SlotKey.put(out)
	b.Route.put(out)
	b.RouteSnapshot.Put(out, PrefixGatewayRouteSnapshot)
	b.Binding.Put(out, PrefixAttemptRouteBinding)
	return out
}

// DecodeAttemptRouteBinding strictly decodes a binding and verifies its digest.
func DecodeAttemptRouteBinding(doc []byte) (*AttemptRouteBinding, error) {
	m, err := decodeMap(KindAttemptRouteBinding, doc)
	if err != nil {
		return nil, err
	}
	return &AttemptRouteBinding{Binding: quad(m, PrefixAttemptRouteBinding), SlotKey: readSlotKey(m),
		RouteSnapshot: quad(m, PrefixGatewayRouteSnapshot), Route: readRoute(m), BoundAt: timeOf(m, "boundAt")}, nil
}

// GatewayPreBindingRejectionFact is GatewayPreBindingRejectionFact@1 — our
// definition: the slot key and the deterministic reason.
type GatewayPreBindingRejectionFact struct {
	Fact strict.Quadruple
	SlotKey
	ReasonCode string
	RejectedAt time.Time
}

func (*GatewayPreBindingRejectionFact) Kind() string              { return KindGatewayPreBindingRejectionFact }
func (f *GatewayPreBindingRejectionFact) Quad() *strict.Quadruple { return &f.Fact }

// ToJSON returns the full JSON form.
func (f *GatewayPreBindingRejectionFact) ToJSON() map[string]any {
	out := map[string]any{"rejectionReasonCode": f.ReasonCode, "rejectedAt": strict.FormatTimestamp(f.RejectedAt)}
	f.SlotKey.put(out)
	f.Fact.Put(out, PrefixGatewayPreBindingRejectionFact)
	return out
}

// DecodeGatewayPreBindingRejectionFact strictly decodes a rejection and verifies its digest.
func DecodeGatewayPreBindingRejectionFact(doc []byte) (*GatewayPreBindingRejectionFact, error) {
	m, err := decodeMap(KindGatewayPreBindingRejectionFact, doc)
	if err != nil {
		return nil, err
	}
	return &GatewayPreBindingRejectionFact{Fact: quad(m, PrefixGatewayPreBindingRejectionFact), SlotKey: readSlotKey(m),
		ReasonCode: str(m, "rejectionReasonCode"), RejectedAt: timeOf(m, "rejectedAt")}, nil
}

// ProviderEvidence is GatewayProviderEvidence@1 — our definition of the
// immutable usage/cost evidence a provider reported for a bound attempt.
type ProviderEvidence struct {
	Evidence            strict.Quadruple
	ExecutionAttemptID  string
	GatewayDeploymentID string
	Binding             strict.Quadruple
	EvidenceKind        string
	DimensionKey        string
	Quantity            string
	ProviderReportID    string
	ObservedAt          time.Time
}

func (*ProviderEvidence) Kind() string              { return KindProviderEvidence }
func (e *ProviderEvidence) Quad() *strict.Quadruple { return &e.Evidence }

// ToJSON returns the full JSON form.
func (e *ProviderEvidence) ToJSON() map[string]any {
	out := map[string]any{"executionAttemptId": e.ExecutionAttemptID, "gatewayDeploymentId": e.GatewayDeploymentID,
		"providerEvidenceKind": e.EvidenceKind, "evidenceDimensionKey": e.DimensionKey, "quantity": e.Quantity,
		"providerReportId": e.ProviderReportID, "observedAt": strict.FormatTimestamp(e.ObservedAt)}
	e.Binding.Put(out, PrefixAttemptRouteBinding)
	e.Evidence.Put(out, PrefixProviderEvidence)
	return out
}

// DecodeProviderEvidence strictly decodes evidence and verifies its digest.
func DecodeProviderEvidence(doc []byte) (*ProviderEvidence, error) {
	m, err := decodeMap(KindProviderEvidence, doc)
	if err != nil {
		return nil, err
	}
	return &ProviderEvidence{Evidence: quad(m, PrefixProviderEvidence), ExecutionAttemptID: str(m, "executionAttemptId"),
		GatewayDeploymentID: str(m, "gatewayDeploymentId"), Binding: quad(m, PrefixAttemptRouteBinding),
		EvidenceKind: str(m, "providerEvidenceKind"), DimensionKey: str(m, "evidenceDimensionKey"), Quantity: str(m, "quantity"),
		ProviderReportID: str(m, "providerReportId"), ObservedAt: timeOf(m, "observedAt")}, nil
}

// AvailabilitySnapshot is GatewayEvidenceAvailabilitySnapshot@1 — our
// definition of one state of an attempt-bound availability chain.
type AvailabilitySnapshot struct {
	Snapshot strict.Quadruple
	SlotKey
	Binding       strict.Quadruple
	RouteSnapshot strict.Quadruple
	EvidenceKind  string
	DimensionKey  string
	State         string
	ReasonCode    string
	StateVersion  int64
	// Predecessor is zero for state version 1.
	Predecessor             strict.Quadruple
	PredecessorStateVersion int64
	// Evidence is set exactly when State is available.
	Evidence   strict.Quadruple
	RecordedAt time.Time
}

func (*AvailabilitySnapshot) Kind() string              { return KindAvailabilitySnapshot }
func (a *AvailabilitySnapshot) Quad() *strict.Quadruple { return &a.Snapshot }

// ToJSON returns the full JSON form.
func (a *AvailabilitySnapshot) ToJSON() map[string]any {
	pred := map[string]any{"state": "none"}
	if a.Predecessor.Ref != "" {
		pred = map[string]any{"state": "present", "predecessorStateVersion": a.PredecessorStateVersion}
		a.Predecessor.Put(pred, PrefixPredecessor)
	}
	ev := map[string]any{"state": "none"}
	if a.Evidence.Ref != "" {
		ev = map[string]any{"state": "present"}
		a.Evidence.Put(ev, PrefixProviderEvidence)
	}
	out := map[string]any{"providerEvidenceKind": a.EvidenceKind, "evidenceDimensionKey": a.DimensionKey,
		"availabilityState": a.State, "stateReasonCode": a.ReasonCode, "stateVersion": a.StateVersion,
		"predecessor": pred, "availableEvidence": ev, "recordedAt": strict.FormatTimestamp(a.RecordedAt)}
	a.SlotKey.put(out)
	a.Binding.Put(out, PrefixAttemptRouteBinding)
	a.RouteSnapshot.Put(out, PrefixGatewayRouteSnapshot)
	a.Snapshot.Put(out, PrefixCurrentAvailability)
	return out
}

// DecodeAvailabilitySnapshot strictly decodes a snapshot and verifies its digest.
func DecodeAvailabilitySnapshot(doc []byte) (*AvailabilitySnapshot, error) {
	m, err := decodeMap(KindAvailabilitySnapshot, doc)
	if err != nil {
		return nil, err
	}
	pred, _ := m["predecessor"].(map[string]any)
	ev, _ := m["availableEvidence"].(map[string]any)
	a := &AvailabilitySnapshot{Snapshot: quad(m, PrefixCurrentAvailability), SlotKey: readSlotKey(m),
		Binding: quad(m, PrefixAttemptRouteBinding), RouteSnapshot: quad(m, PrefixGatewayRouteSnapshot),
		EvidenceKind: str(m, "providerEvidenceKind"), DimensionKey: str(m, "evidenceDimensionKey"),
		State: str(m, "availabilityState"), ReasonCode: str(m, "stateReasonCode"), StateVersion: i64(m, "stateVersion"),
		RecordedAt: timeOf(m, "recordedAt")}
	if str(pred, "state") == "present" {
		a.Predecessor, a.PredecessorStateVersion = quad(pred, PrefixPredecessor), i64(pred, "predecessorStateVersion")
	}
	if str(ev, "state") == "present" {
		a.Evidence = quad(ev, PrefixProviderEvidence)
	}
	return a, nil
}

// availabilityRules: version 1 has no predecessor, a later version names
// its direct predecessor; evidence is present exactly when available.
func availabilityRules(m map[string]any) error {
	v := i64(m, "stateVersion")
	pred, _ := m["predecessor"].(map[string]any)
	ev, _ := m["availableEvidence"].(map[string]any)
	switch {
	case v == 1 && str(pred, "state") != "none":
		return fmt.Errorf("%w: state version 1 has no predecessor", ErrAvailabilityRule)
	case v > 1 && (str(pred, "state") != "present" || i64(pred, "predecessorStateVersion") != v-1):
		return fmt.Errorf("%w: state version %d names its direct predecessor %d", ErrAvailabilityRule, v, v-1)
	case (str(m, "availabilityState") == AvailabilityAvailable) != (str(ev, "state") == "present"):
		return fmt.Errorf("%w: evidence is present exactly when available", ErrAvailabilityRule)
	}
	return nil
}

// GatewayEvidenceConflictFact is GatewayEvidenceConflictFact@1: the Gateway
// owner's durable conflict about one provider evidence.
type GatewayEvidenceConflictFact struct {
	Fact                strict.Quadruple
	ExecutionAttemptID  string
	GatewayDeploymentID string
	Binding             strict.Quadruple
	EvidenceKind        string
	DimensionKey        string
	Evidence            strict.Quadruple
	ProviderReportID    string
	ConflictingQuantity string
	ReasonCode          string
	DetectedAt          time.Time
}

func (*GatewayEvidenceConflictFact) Kind() string              { return KindGatewayEvidenceConflictFact }
func (f *GatewayEvidenceConflictFact) Quad() *strict.Quadruple { return &f.Fact }

// ToJSON returns the full JSON form.
func (f *GatewayEvidenceConflictFact) ToJSON() map[string]any {
	out := map[string]any{"executionAttemptId": f.ExecutionAttemptID, "gatewayDeploymentId": f.GatewayDeploymentID,
		"providerEvidenceKind": f.EvidenceKind, "evidenceDimensionKey": f.DimensionKey, "providerReportId": f.ProviderReportID,
		"conflictingQuantity": f.ConflictingQuantity, "reasonCode": f.ReasonCode, "detectedAt": strict.FormatTimestamp(f.DetectedAt)}
	f.Binding.Put(out, PrefixAttemptRouteBinding)
	f.Evidence.Put(out, PrefixProviderEvidence)
	f.Fact.Put(out, PrefixGatewayEvidenceConflictFact)
	return out
}

// DecodeGatewayEvidenceConflictFact strictly decodes the fact and verifies its digest.
func DecodeGatewayEvidenceConflictFact(doc []byte) (*GatewayEvidenceConflictFact, error) {
	m, err := decodeMap(KindGatewayEvidenceConflictFact, doc)
	if err != nil {
		return nil, err
	}
	return &GatewayEvidenceConflictFact{Fact: quad(m, PrefixGatewayEvidenceConflictFact), ExecutionAttemptID: str(m, "executionAttemptId"),
		GatewayDeploymentID: str(m, "gatewayDeploymentId"), Binding: quad(m, PrefixAttemptRouteBinding),
		EvidenceKind: str(m, "providerEvidenceKind"), DimensionKey: str(m, "evidenceDimensionKey"), Evidence: quad(m, PrefixProviderEvidence),
		ProviderReportID: str(m, "providerReportId"), ConflictingQuantity: str(m, "conflictingQuantity"), ReasonCode: str(m, "reasonCode"),
		DetectedAt: timeOf(m, "detectedAt")}, nil
}
