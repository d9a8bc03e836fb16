package reconciliation

import (
	"fmt"
	"time"

	"github.com/oceanway/core/contracts/jcs"
	"github.com/oceanway/core/contracts/schema"
	"github.com/oceanway/core/contracts/strict"
)

// LateGrantClaims are the claims of SignedWorkforceCommandExecutionGrant@1
// when Core signs it for a late settlement command (audience
// billing_late_settlement_command). A claims kind of its own: the
// finalization resolution audience's claims (GrantClaims) and these never
// decode as each other, so a grant for a re-evaluation cannot fund an
// exposure. Same lifetime rules as GrantClaims; the jti is consumed once,
// in Billing's late command transaction, beside (never equal to) the
// funding decision's jti.
//
//	iss, sub (= candidate and decision actor), aud = billing_late_settlement_command
//	jti                    uuid, single use
//	iat ≤ nbf < exp ≤ nbf + MaxGrantLifetime   (JWT NumericDate seconds)
//	grantSchemaVersion = "1", boundWorkload, action = fund_late_settlement_exposure
//	lateSettlementCommandRequest, lateSettlementCommandCandidate, lateSettlementCommandDecision quadruples
//	lateSettlementCommandOperationId = LateSettlementCommandOperationID(decision quadruple)
//	late case (ref, generation, identity reservation, dimension in full), exposure (id, revision, quadruple)
//	investigationEvidenceReferences
type LateGrantClaims struct {
	Issuer             string
	Subject            string
	JTI                string
	IssuedAt           time.Time // whole seconds, UTC
	NotBefore          time.Time
	ExpiresAt          time.Time
	BoundWorkload      string
	CommandRequest     strict.Quadruple
	Candidate          strict.Quadruple
	Decision           strict.Quadruple
	CommandOperationID string
	Case               LateCase
	Exposure           LateExposureRef
	Evidence           []EvidenceReference
}

// ToJSON returns the claims as JSON values (numeric dates as integers).
func (c *LateGrantClaims) ToJSON() map[string]any {
	m := map[string]any{
		"iss": c.Issuer, "sub": c.Subject, "aud": AudienceLateSettlementCommand, "jti": c.JTI,
		"iat": c.IssuedAt.Unix(), "nbf": c.NotBefore.Unix(), "exp": c.ExpiresAt.Unix(),
		"grantSchemaVersion": GrantSchemaVersion1, "boundWorkload": c.BoundWorkload, "action": ActionFundLateSettlementExposure,
		fieldLateCommandOperationID: c.CommandOperationID, fieldEvidence: evidenceJSON(c.Evidence),
	}
	c.CommandRequest.Put(m, PrefixLateCommandRequest)
	c.Candidate.Put(m, PrefixLateCandidate)
	c.Decision.Put(m, PrefixLateDecision)
	c.Case.put(m)
	c.Exposure.put(m)
	return m
}

// Marshal returns the canonical (JCS) claims, checked against the
// description and the rules: the bytes Core signs.
func (c *LateGrantClaims) Marshal() ([]byte, error) {
	body, err := jcs.Marshal(c.ToJSON())
	if err != nil {
		return nil, fmt.Errorf("marshal %s: %w", KindLateGrantClaims, err)
	}
	if _, err := DecodeLateGrantClaims(body); err != nil {
		return nil, fmt.Errorf("marshal %s: %w: %w", KindLateGrantClaims, ErrInvalidObject, err)
	}
	return body, nil
}

// DecodeLateGrantClaims strictly decodes the claims JSON (a JWS payload):
// any claim it does not list, a wrong audience, a lifetime out of order or
// too long, and a command operation, case ref or exposure id that does not
// derive are refused.
func DecodeLateGrantClaims(doc []byte) (*LateGrantClaims, error) {
	m, err := schema.DecodeDocument(doc, schema.Ref{Def: LateGrantClaimsDef})
	if err == nil {
		err = lateGrantRules(m)
	}
	if err != nil {
		return nil, fmt.Errorf("decode %s: %w", KindLateGrantClaims, err)
	}
	return &LateGrantClaims{
		Issuer: str(m, "iss"), Subject: str(m, "sub"), JTI: str(m, "jti"),
		IssuedAt: unix(m, "iat"), NotBefore: unix(m, "nbf"), ExpiresAt: unix(m, "exp"),
		BoundWorkload: str(m, "boundWorkload"), CommandRequest: quad(m, PrefixLateCommandRequest), Candidate: quad(m, PrefixLateCandidate),
		Decision: quad(m, PrefixLateDecision), CommandOperationID: str(m, fieldLateCommandOperationID), Case: lateCaseOf(m),
		Exposure: exposureRefOf(m), Evidence: evidenceOf(m),
	}, nil
}

// LateGrantClaimsDef describes the claims of a late settlement command grant.
var LateGrantClaimsDef = &schema.Def{Name: "LateSettlementCommandGrantClaimsV1",
	Doc: "The claims of SignedWorkforceCommandExecutionGrant@1 for audience billing_late_settlement_command: a single-use grant Core signs for one decided late settlement command; no other claim is accepted.",
	Type: schema.Object{Fields: schema.Fields(
		principal("iss", "Core's grant issuer"),
		principal("sub", "the actor workforce principal"),
		schema.F("aud", schema.Literal{Value: AudienceLateSettlementCommand}, "exactly one audience"),
		schema.F("jti", uuid, "single use; consumed in Billing's late command transaction, never equal to the funding decision's jti"),
		schema.F("iat", schema.Int{Min: 1}, "NumericDate"),
		schema.F("nbf", schema.Int{Min: 1}, "NumericDate, ≥ iat"),
		schema.F("exp", schema.Int{Min: 1}, "NumericDate, after nbf, within MaxGrantLifetime"),
		schema.F("grantSchemaVersion", schema.Literal{Value: GrantSchemaVersion1}, ""),
		schema.F("boundWorkload", WorkloadText, "the admin command gateway workload that presents the grant"),
		lateActionField(),
		schema.Quad(PrefixLateCommandRequest, "LateSettlementCommandRequest@1"),
		schema.Quad(PrefixLateCandidate, "LateSettlementCommandCandidate@1"),
		schema.Quad(PrefixLateDecision, "LateSettlementCommandDecision@1"),
		schema.F(fieldLateCommandOperationID, uuid, "LateSettlementCommandOperationID(decision quadruple)"),
		lateCaseFields(),
		exposureRefFields(),
		evidenceField(),
	)}}

// lateGrantRules: the lifetime rules of GrantClaims, the derived command
// operation, case ref and exposure id, a sorted evidence set.
func lateGrantRules(m map[string]any) error {
	iat, nbf, exp := i64(m, "iat"), i64(m, "nbf"), i64(m, "exp")
	if iat > nbf || nbf >= exp || exp-nbf > int64(MaxGrantLifetime/time.Second) {
		return fmt.Errorf("%w: iat %d, nbf %d, exp %d", ErrGrantLifetime, iat, nbf, exp)
	}
	if err := checkLateCommandOperation(m); err != nil {
		return err
	}
	return lateEvidenceRules(m)
}
