package reconciliation

import (
	"fmt"
	"time"

	"github.com/oceanway/core/contracts/schema"
	"github.com/oceanway/core/contracts/strict"
)

// CaseResolutionApplied is BillingCaseResolutionApplied@1, Billing-owned:
// the one resolution of one LateSettlementExposure@1, appended with
// billing.case-resolution.applied@1; Operations consumes it and closes the
// case by case generation and exposure revision. Its source is a strict
// union: the late settlement command (the result it resolved through, the
// command operation and the actor) or the settlement transition that made
// the exposure moot (a later correction: the transition and its to
// revision). resolutionOperationId derives from (exposure id, case
// generation) only, so two resolutions of one exposure share an operation
// and the second is an insert-or-compare conflict. It carries no amount of
// its own (the result or transition has it) and the dimension in full, as
// the event's payload does.
//
//	billingCaseResolutionAppliedRef / SchemaVersion("1") / DigestAlgorithmVersion / Digest
//	lateSettlementExposureId, exposureSettlementStateRevision, lateSettlementExposure quadruple
//	late case (ref, generation, identity reservation, dimension in full)
//	resolutionOperationId = CaseResolutionOperationID(exposure id, case generation)
//	exposureStateAfter = resolved
//	resolution = {resolutionSource=late_settlement_command; lateSettlementCommandResult quadruple,
//	              lateSettlementCommandOperationId, actorWorkforcePrincipalId}
//	           | {resolutionSource=settlement_transition; billingSettlementTransition quadruple,
//	              toSettlementStateRevision (> exposure revision)}
//	appliedAt                     excluded from the digest candidate
type CaseResolutionApplied struct {
	Applied               strict.Quadruple
	Exposure              LateExposureRef
	Case                  LateCase
	ResolutionOperationID string
	// ResolutionSource is ResolutionSourceLateCommand or ResolutionSourceTransition.
	ResolutionSource string
	// Source is the LateSettlementCommandResult@1 (late_settlement_command)
	// or the BillingSettlementTransition@1 (settlement_transition).
	Source strict.Quadruple
	// CommandOperationID and ActorWorkforcePrincipalID: late_settlement_command only.
	CommandOperationID        string
	ActorWorkforcePrincipalID string
	// ToSettlementStateRevision: settlement_transition only.
	ToSettlementStateRevision int64
	AppliedAt                 time.Time
}

func (*CaseResolutionApplied) Kind() string              { return KindCaseResolutionApplied }
func (a *CaseResolutionApplied) Quad() *strict.Quadruple { return &a.Applied }

// ToJSON returns the full JSON form.
func (a *CaseResolutionApplied) ToJSON() map[string]any {
	res := map[string]any{"resolutionSource": a.ResolutionSource}
	switch a.ResolutionSource {
	case ResolutionSourceLateCommand:
		a.Source.Put(res, PrefixLateResult)
		res[fieldLateCommandOperationID], res["actorWorkforcePrincipalId"] = a.CommandOperationID, a.ActorWorkforcePrincipalID
	case ResolutionSourceTransition:
		a.Source.Put(res, PrefixSettlementTransition)
		res["toSettlementStateRevision"] = a.ToSettlementStateRevision
	}
	m := map[string]any{
		fieldResolutionOperationID: a.ResolutionOperationID, "exposureStateAfter": ExposureStateResolved, "resolution": res,
		"appliedAt": strict.FormatTimestamp(a.AppliedAt),
	}
	a.Exposure.put(m)
	a.Case.put(m)
	a.Applied.Put(m, PrefixCaseResolutionApplied)
	return m
}

// DecodeCaseResolutionApplied strictly decodes an applied fact, checks its
// rules and verifies its digest.
func DecodeCaseResolutionApplied(doc []byte) (*CaseResolutionApplied, error) {
	m, err := decodeMap(KindCaseResolutionApplied, doc)
	if err != nil {
		return nil, err
	}
	res := obj(m, "resolution")
	a := &CaseResolutionApplied{
		Applied: quad(m, PrefixCaseResolutionApplied), Exposure: exposureRefOf(m), Case: lateCaseOf(m),
		ResolutionOperationID: str(m, fieldResolutionOperationID), ResolutionSource: str(res, "resolutionSource"),
		AppliedAt: tm(m, "appliedAt"),
	}
	if a.ResolutionSource == ResolutionSourceLateCommand {
		a.Source, a.CommandOperationID = quad(res, PrefixLateResult), str(res, fieldLateCommandOperationID)
		a.ActorWorkforcePrincipalID = str(res, "actorWorkforcePrincipalId")
	} else {
		a.Source, a.ToSettlementStateRevision = quad(res, PrefixSettlementTransition), i64(res, "toSettlementStateRevision")
	}
	return a, nil
}

var caseResolutionDef = &schema.Def{Name: "BillingCaseResolutionSourceV1",
	Doc: "What resolved the exposure: the late settlement command's result, or the settlement transition that made it moot.",
	Type: schema.Union{Discriminator: "resolutionSource", Branches: []schema.Branch{
		{Value: ResolutionSourceLateCommand, Fields: schema.Fields(
			schema.Quad(PrefixLateResult, "LateSettlementCommandResult@1"),
			schema.F(fieldLateCommandOperationID, uuid, "the result's command operation"),
			principal("actorWorkforcePrincipalId", "the result's actor; the event envelope actor"),
		)},
		{Value: ResolutionSourceTransition, Fields: schema.Fields(
			schema.Quad(PrefixSettlementTransition, "the BillingSettlementTransition@1 that made the exposure moot"),
			schema.F("toSettlementStateRevision", schema.Int{Min: 3}, "the transition's to revision; after the exposure's revision"),
		)},
	}}}

// CaseResolutionAppliedDef describes BillingCaseResolutionApplied@1.
var CaseResolutionAppliedDef = &schema.Def{Name: "BillingCaseResolutionAppliedV1",
	Doc: "BillingCaseResolutionApplied@1: Billing's one resolution of one late settlement exposure, by the late settlement command or by a later settlement transition; Operations closes the case on it.",
	Type: schema.Object{Fields: schema.Fields(
		selfQuad(PrefixCaseResolutionApplied, "assigned by Billing; excluded from the digest candidate"),
		exposureRefFields(),
		lateCaseFields(),
		schema.F(fieldResolutionOperationID, uuid, "CaseResolutionOperationID(lateSettlementExposureId, caseGeneration)"),
		schema.F("exposureStateAfter", schema.Literal{Value: ExposureStateResolved}, ""),
		schema.F("resolution", schema.Ref{Def: caseResolutionDef}, ""),
		schema.F("appliedAt", schema.Timestamp{}, "excluded from the digest candidate"),
	)}}

// caseResolutionRules: derived identifiers; a mooting transition comes
// after the exposure.
func caseResolutionRules(m map[string]any) error {
	if err := lateCaseRules(m); err != nil {
		return err
	}
	if want := CaseResolutionOperationID(str(m, fieldExposureID), i64(m, fieldCaseGeneration)); str(m, fieldResolutionOperationID) != want {
		return fmt.Errorf("%w: %s %s (want %s)", ErrDerivedID, fieldResolutionOperationID, str(m, fieldResolutionOperationID), want)
	}
	res := obj(m, "resolution")
	if str(res, "resolutionSource") == ResolutionSourceTransition && i64(res, "toSettlementStateRevision") <= i64(m, fieldExposureRevision) {
		return fmt.Errorf("%w: transition to revision %d is not after the exposure's revision %d", ErrLateResultRule,
			i64(res, "toSettlementStateRevision"), i64(m, fieldExposureRevision))
	}
	return nil
}
