package reconciliation

import (
	"fmt"
	"time"

	"github.com/oceanway/core/contracts/jcs"
	"github.com/oceanway/core/contracts/schema"
	"github.com/oceanway/core/contracts/strict"
)

// GrantClaims are the JSON claims of SignedWorkforceCommandExecutionGrant@1,
// the single-use compact JWS Core signs after Operations' decision. Signing
// and verifying the JWS belong to Core and Billing; this is the claims'
// strict shape. The grant has no quadruple: it is named by the SHA-256 of
// the compact JWS (GrantSHA256), and its jti is consumed once, in Billing's
// apply transaction.
//
//	iss                    Core's grant issuer
//	sub                    the actor (= candidate and decision actor)
//	aud = billing_finalization_reconciliation_resolution_command
//	jti                    uuid, single use
//	iat ≤ nbf < exp ≤ nbf + MaxGrantLifetime   (JWT NumericDate seconds)
//	grantSchemaVersion = "1", boundWorkload, action
//	finalizationReconciliationResolutionCommandRequest, adminCommandCandidate,
//	finalizationReconciliationResolutionDecision quadruples
//	resolutionOperationId  = ResolutionOperationID(decision quadruple)
//	case identity, investigationEvidenceReferences
type GrantClaims struct {
	Issuer                string
	Subject               string
	JTI                   string
	IssuedAt              time.Time // whole seconds, UTC
	NotBefore             time.Time
	ExpiresAt             time.Time
	BoundWorkload         string
	CommandRequest        strict.Quadruple
	Candidate             strict.Quadruple
	Decision              strict.Quadruple
	ResolutionOperationID string
	Case                  Case
	Evidence              []EvidenceReference
}

// ToJSON returns the claims as JSON values (numeric dates as integers).
func (c *GrantClaims) ToJSON() map[string]any {
	m := map[string]any{
		"iss": c.Issuer, "sub": c.Subject, "aud": AudienceResolutionCommand, "jti": c.JTI,
		"iat": c.IssuedAt.Unix(), "nbf": c.NotBefore.Unix(), "exp": c.ExpiresAt.Unix(),
		"grantSchemaVersion": GrantSchemaVersion1, "boundWorkload": c.BoundWorkload, "action": ActionReevaluateCurrentOwnerState,
		fieldResolutionOperationID: c.ResolutionOperationID, fieldEvidence: evidenceJSON(c.Evidence),
	}
	c.CommandRequest.Put(m, PrefixCommandRequest)
	c.Candidate.Put(m, PrefixCandidate)
	c.Decision.Put(m, PrefixDecision)
	c.Case.put(m)
	return m
}

// Marshal returns the canonical (JCS) claims, checked against the
// description and the rules: the bytes Core signs.
func (c *GrantClaims) Marshal() ([]byte, error) {
	body, err := jcs.Marshal(c.ToJSON())
	if err != nil {
		return nil, fmt.Errorf("marshal %s: %w", KindGrantClaims, err)
	}
	if _, err := DecodeGrantClaims(body); err != nil {
		return nil, fmt.Errorf("marshal %s: %w: %w", KindGrantClaims, ErrInvalidObject, err)
	}
	return body, nil
}

// DecodeGrantClaims strictly decodes the claims JSON (a JWS payload): any
// claim it does not list, a wrong audience, a lifetime out of order or too
// long and a resolution operation that does not derive are refused.
func DecodeGrantClaims(doc []byte) (*GrantClaims, error) {
	m, err := schema.DecodeDocument(doc, schema.Ref{Def: GrantClaimsDef})
	if err == nil {
		err = grantRules(m)
	}
	if err != nil {
		return nil, fmt.Errorf("decode %s: %w", KindGrantClaims, err)
	}
	return &GrantClaims{
		Issuer: str(m, "iss"), Subject: str(m, "sub"), JTI: str(m, "jti"),
		IssuedAt: unix(m, "iat"), NotBefore: unix(m, "nbf"), ExpiresAt: unix(m, "exp"),
		BoundWorkload: str(m, "boundWorkload"), CommandRequest: quad(m, PrefixCommandRequest), Candidate: quad(m, PrefixCandidate),
		Decision: quad(m, PrefixDecision), ResolutionOperationID: str(m, fieldResolutionOperationID), Case: caseOf(m),
		Evidence: evidenceOf(m),
	}, nil
}

func unix(m map[string]any, k string) time.Time { return time.Unix(i64(m, k), 0).UTC() }

// GrantClaimsDef describes the claims of SignedWorkforceCommandExecutionGrant@1.
var GrantClaimsDef = &schema.Def{Name: "SignedWorkforceCommandExecutionGrantClaimsV1",
	Doc: "The claims of SignedWorkforceCommandExecutionGrant@1: a single-use grant Core signs for one decided resolution command; no other claim is accepted.",
	Type: schema.Object{Fields: schema.Fields(
		principal("iss", "Core's grant issuer"),
		principal("sub", "the actor workforce principal"),
		schema.F("aud", schema.Literal{Value: AudienceResolutionCommand}, "exactly one audience"),
		schema.F("jti", uuid, "single use; consumed in Billing's apply transaction"),
		schema.F("iat", schema.Int{Min: 1}, "NumericDate"),
		schema.F("nbf", schema.Int{Min: 1}, "NumericDate, ≥ iat"),
		schema.F("exp", schema.Int{Min: 1}, "NumericDate, after nbf, within MaxGrantLifetime"),
		schema.F("grantSchemaVersion", schema.Literal{Value: GrantSchemaVersion1}, ""),
		schema.F("boundWorkload", WorkloadText, "the admin command gateway workload that presents the grant"),
		actionField(),
		schema.Quad(PrefixCommandRequest, "FinalizationReconciliationResolutionCommandRequest@1"),
		schema.Quad(PrefixCandidate, "AdminCommandCandidate@1"),
		schema.Quad(PrefixDecision, "FinalizationReconciliationResolutionDecision@1"),
		schema.F(fieldResolutionOperationID, uuid, "ResolutionOperationID(decision quadruple)"),
		caseFields(),
		evidenceField(),
	)}}

// grantRules: iat ≤ nbf < exp ≤ nbf + MaxGrantLifetime, and the
// resolution operation derives from the decision.
func grantRules(m map[string]any) error {
	iat, nbf, exp := i64(m, "iat"), i64(m, "nbf"), i64(m, "exp")
	if iat > nbf || nbf >= exp || exp-nbf > int64(MaxGrantLifetime/time.Second) {
		return fmt.Errorf("%w: iat %d, nbf %d, exp %d", ErrGrantLifetime, iat, nbf, exp)
	}
	if err := checkResolutionOperation(m); err != nil {
		return err
	}
	return evidenceRules(m)
}
