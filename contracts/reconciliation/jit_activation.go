package reconciliation

import (
	"fmt"
	"time"

	"github.com/oceanway/core/contracts/schema"
	"github.com/oceanway/core/contracts/strict"
)

// JitActivation is AdminCommandJitActivation@1: the actor holds the
// operator role for this one request, for at most MaxJitWindow. The window
// is part of the digest (it is what the activation grants); only the
// bookkeeping time activatedAt is left out.
//
//	adminCommandJitActivationRef / SchemaVersion("1") / DigestAlgorithmVersion / Digest
//	actorWorkforcePrincipalId
//	role = billing_reconciliation_operator
//	finalizationReconciliationResolutionCommandRequest quadruple
//	notBefore < expiresAt ≤ notBefore + 1 h   (in the digest)
//	activatedAt                         excluded from the digest candidate
type JitActivation struct {
	Activation                strict.Quadruple
	ActorWorkforcePrincipalID string
	CommandRequest            strict.Quadruple
	NotBefore                 time.Time
	ExpiresAt                 time.Time
	ActivatedAt               time.Time
}

func (*JitActivation) Kind() string              { return KindJitActivation }
func (j *JitActivation) Quad() *strict.Quadruple { return &j.Activation }

// Active reports whether now is inside [notBefore, expiresAt).
func (j *JitActivation) Active(now time.Time) bool {
	return !now.Before(j.NotBefore) && now.Before(j.ExpiresAt)
}

// ToJSON returns the full JSON form.
func (j *JitActivation) ToJSON() map[string]any {
	m := map[string]any{
		"actorWorkforcePrincipalId": j.ActorWorkforcePrincipalID, "role": RoleReconciliationOperator,
		"notBefore": strict.FormatTimestamp(j.NotBefore), "expiresAt": strict.FormatTimestamp(j.ExpiresAt),
		"activatedAt": strict.FormatTimestamp(j.ActivatedAt),
	}
	j.CommandRequest.Put(m, PrefixCommandRequest)
	j.Activation.Put(m, PrefixJitActivation)
	return m
}

// DecodeJitActivation strictly decodes an activation, checks its window and
// verifies its digest.
func DecodeJitActivation(doc []byte) (*JitActivation, error) {
	m, err := decodeMap(KindJitActivation, doc)
	if err != nil {
		return nil, err
	}
	return &JitActivation{
		Activation: quad(m, PrefixJitActivation), ActorWorkforcePrincipalID: str(m, "actorWorkforcePrincipalId"),
		CommandRequest: quad(m, PrefixCommandRequest), NotBefore: tm(m, "notBefore"), ExpiresAt: tm(m, "expiresAt"),
		ActivatedAt: tm(m, "activatedAt"),
	}, nil
}

// JitActivationDef describes AdminCommandJitActivation@1.
var JitActivationDef = &schema.Def{Name: "AdminCommandJitActivationV1",
	Doc: "AdminCommandJitActivation@1: the actor's just-in-time operator role for one request, at most one hour.",
	Type: schema.Object{Fields: schema.Fields(
		selfQuad(PrefixJitActivation, "assigned by the admin command gateway; excluded from the digest candidate"),
		principal("actorWorkforcePrincipalId", "the principal who will execute"),
		schema.F("role", schema.Literal{Value: RoleReconciliationOperator}, ""),
		schema.Quad(PrefixCommandRequest, "the one FinalizationReconciliationResolutionCommandRequest@1 the role is for"),
		schema.F("notBefore", schema.Timestamp{}, "in the digest"),
		schema.F("expiresAt", schema.Timestamp{}, "in the digest; after notBefore, at most one hour later"),
		schema.F("activatedAt", schema.Timestamp{}, "excluded from the digest candidate"),
	)}}

// jitRules: a non-empty window of at most MaxJitWindow.
func jitRules(m map[string]any) error {
	nbf, exp := tm(m, "notBefore"), tm(m, "expiresAt")
	if !exp.After(nbf) || exp.Sub(nbf) > MaxJitWindow {
		return fmt.Errorf("%w: [%s, %s)", ErrJitWindow, str(m, "notBefore"), str(m, "expiresAt"))
	}
	return nil
}
