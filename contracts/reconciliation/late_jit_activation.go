package reconciliation

import (
	"time"

	"github.com/oceanway/core/contracts/schema"
	"github.com/oceanway/core/contracts/strict"
)

// LateJitActivation is LateSettlementCommandJitActivation@1: the actor
// holds the late settlement operator role for this one request, for at
// most MaxJitWindow. Its own role (billing_late_settlement_operator): the
// operator role that may re-evaluate a finalization never funds an
// exposure. The window is in the digest; activatedAt is not.
//
//	lateSettlementCommandJitActivationRef / SchemaVersion("1") / DigestAlgorithmVersion / Digest
//	actorWorkforcePrincipalId
//	role = billing_late_settlement_operator
//	lateSettlementCommandRequest quadruple
//	notBefore < expiresAt ≤ notBefore + 1 h   (in the digest)
//	activatedAt                         excluded from the digest candidate
type LateJitActivation struct {
	Activation                strict.Quadruple
	ActorWorkforcePrincipalID string
	CommandRequest            strict.Quadruple
	NotBefore                 time.Time
	ExpiresAt                 time.Time
	ActivatedAt               time.Time
}

func (*LateJitActivation) Kind() string              { return KindLateJitActivation }
func (j *LateJitActivation) Quad() *strict.Quadruple { return &j.Activation }

// Active reports whether now is inside [notBefore, expiresAt).
func (j *LateJitActivation) Active(now time.Time) bool {
	return !now.Before(j.NotBefore) && now.Before(j.ExpiresAt)
}

// ToJSON returns the full JSON form.
func (j *LateJitActivation) ToJSON() map[string]any {
	m := map[string]any{
		"actorWorkforcePrincipalId": j.ActorWorkforcePrincipalID, "role": RoleLateSettlementOperator,
		"notBefore": strict.FormatTimestamp(j.NotBefore), "expiresAt": strict.FormatTimestamp(j.ExpiresAt),
		"activatedAt": strict.FormatTimestamp(j.ActivatedAt),
	}
	j.CommandRequest.Put(m, PrefixLateCommandRequest)
	j.Activation.Put(m, PrefixLateJitActivation)
	return m
}

// DecodeLateJitActivation strictly decodes an activation, checks its window
// and verifies its digest.
func DecodeLateJitActivation(doc []byte) (*LateJitActivation, error) {
	m, err := decodeMap(KindLateJitActivation, doc)
	if err != nil {
		return nil, err
	}
	return &LateJitActivation{
		Activation: quad(m, PrefixLateJitActivation), ActorWorkforcePrincipalID: str(m, "actorWorkforcePrincipalId"),
		CommandRequest: quad(m, PrefixLateCommandRequest), NotBefore: tm(m, "notBefore"), ExpiresAt: tm(m, "expiresAt"),
		ActivatedAt: tm(m, "activatedAt"),
	}, nil
}

// LateJitActivationDef describes LateSettlementCommandJitActivation@1.
var LateJitActivationDef = &schema.Def{Name: "LateSettlementCommandJitActivationV1",
	Doc: "LateSettlementCommandJitActivation@1: the actor's just-in-time late settlement operator role for one request, at most one hour.",
	Type: schema.Object{Fields: schema.Fields(
		selfQuad(PrefixLateJitActivation, "assigned by the admin command gateway; excluded from the digest candidate"),
		principal("actorWorkforcePrincipalId", "the principal who will execute"),
		schema.F("role", schema.Literal{Value: RoleLateSettlementOperator}, ""),
		schema.Quad(PrefixLateCommandRequest, "the one LateSettlementCommandRequest@1 the role is for"),
		schema.F("notBefore", schema.Timestamp{}, "in the digest"),
		schema.F("expiresAt", schema.Timestamp{}, "in the digest; after notBefore, at most one hour later"),
		schema.F("activatedAt", schema.Timestamp{}, "excluded from the digest candidate"),
	)}}
