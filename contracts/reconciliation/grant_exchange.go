package reconciliation

import (
	"fmt"
	"time"

	"github.com/oceanway/core/contracts/schema"
	"github.com/oceanway/core/contracts/strict"
)

// GrantExchangeResult is CommandGrantExchangeResult@1, Core-owned: the
// stable result of exchanging an actor assertion for a grant. Its operation
// derives only from the assertion's iss and jti, so a retry with the same
// assertion finds this result (and the first grant) before any time or JTI
// check; the rest of the body is compared insert-or-compare, and a
// different body under the same operation is a conflict.
//
//	commandGrantExchangeResultRef / SchemaVersion("1") / DigestAlgorithmVersion / Digest
//	commandGrantExchangeOperationId = CommandGrantExchangeOperationID(actorAssertionIssuer, actorAssertionJti)
//	actorAssertionIssuer, actorAssertionJti, actorWorkforcePrincipalId
//	adminCommandCandidate, finalizationReconciliationResolutionCommandRequest,
//	finalizationReconciliationResolutionDecision quadruples
//	boundWorkload, grantJti, grantSha256 (of the compact JWS)
//	grantExpiresAt                      in the digest (the grant's exp)
//	exchangedAt                         excluded from the digest candidate
type GrantExchangeResult struct {
	Result                    strict.Quadruple
	OperationID               string
	ActorAssertionIssuer      string
	ActorAssertionJTI         string
	ActorWorkforcePrincipalID string
	Candidate                 strict.Quadruple
	CommandRequest            strict.Quadruple
	Decision                  strict.Quadruple
	BoundWorkload             string
	GrantJTI                  string
	GrantSHA256               string
	GrantExpiresAt            time.Time
	ExchangedAt               time.Time
}

func (*GrantExchangeResult) Kind() string              { return KindGrantExchangeResult }
func (r *GrantExchangeResult) Quad() *strict.Quadruple { return &r.Result }

// ToJSON returns the full JSON form.
func (r *GrantExchangeResult) ToJSON() map[string]any {
	m := map[string]any{
		fieldCommandGrantExchangeOperation: r.OperationID, fieldActorAssertionIssuer: r.ActorAssertionIssuer,
		fieldActorAssertionJTI: r.ActorAssertionJTI, "actorWorkforcePrincipalId": r.ActorWorkforcePrincipalID,
		"boundWorkload": r.BoundWorkload, "grantJti": r.GrantJTI, "grantSha256": r.GrantSHA256,
		"grantExpiresAt": strict.FormatTimestamp(r.GrantExpiresAt), "exchangedAt": strict.FormatTimestamp(r.ExchangedAt),
	}
	r.Candidate.Put(m, PrefixCandidate)
	r.CommandRequest.Put(m, PrefixCommandRequest)
	r.Decision.Put(m, PrefixDecision)
	r.Result.Put(m, PrefixExchangeResult)
	return m
}

// DecodeGrantExchangeResult strictly decodes a result, checks its derived
// operation and verifies its digest.
func DecodeGrantExchangeResult(doc []byte) (*GrantExchangeResult, error) {
	m, err := decodeMap(KindGrantExchangeResult, doc)
	if err != nil {
		return nil, err
	}
	return &GrantExchangeResult{
		Result: quad(m, PrefixExchangeResult), OperationID: str(m, fieldCommandGrantExchangeOperation),
		ActorAssertionIssuer: str(m, fieldActorAssertionIssuer), ActorAssertionJTI: str(m, fieldActorAssertionJTI),
		ActorWorkforcePrincipalID: str(m, "actorWorkforcePrincipalId"), Candidate: quad(m, PrefixCandidate),
		CommandRequest: quad(m, PrefixCommandRequest), Decision: quad(m, PrefixDecision), BoundWorkload: str(m, "boundWorkload"),
		GrantJTI: str(m, "grantJti"), GrantSHA256: str(m, "grantSha256"), GrantExpiresAt: tm(m, "grantExpiresAt"),
		ExchangedAt: tm(m, "exchangedAt"),
	}, nil
}

// GrantExchangeResultDef describes CommandGrantExchangeResult@1.
var GrantExchangeResultDef = &schema.Def{Name: "CommandGrantExchangeResultV1",
	Doc: "CommandGrantExchangeResult@1: Core's stable result of exchanging one actor assertion for one grant; its operation derives from the assertion's iss and jti only.",
	Type: schema.Object{Fields: schema.Fields(
		selfQuad(PrefixExchangeResult, "assigned by Core; excluded from the digest candidate"),
		schema.F(fieldCommandGrantExchangeOperation, uuid, "CommandGrantExchangeOperationID(actorAssertionIssuer, actorAssertionJti)"),
		principal(fieldActorAssertionIssuer, "the actor assertion JWT's iss, byte for byte"),
		principal(fieldActorAssertionJTI, "the actor assertion JWT's jti, byte for byte"),
		principal("actorWorkforcePrincipalId", "the assertion's subject; the grant's sub"),
		schema.Quad(PrefixCandidate, "AdminCommandCandidate@1"),
		schema.Quad(PrefixCommandRequest, "FinalizationReconciliationResolutionCommandRequest@1"),
		schema.Quad(PrefixDecision, "FinalizationReconciliationResolutionDecision@1"),
		schema.F("boundWorkload", WorkloadText, "the admin command gateway workload (= caller JWT sub)"),
		schema.F("grantJti", uuid, "the issued grant's jti"),
		schema.F("grantSha256", SHA256Text, "SHA-256 of the issued compact JWS"),
		schema.F("grantExpiresAt", schema.Timestamp{}, "the grant's exp; in the digest"),
		schema.F("exchangedAt", schema.Timestamp{}, "excluded from the digest candidate"),
	)}}

// exchangeRules: the operation derives from the assertion's iss and jti.
func exchangeRules(m map[string]any) error {
	want, err := CommandGrantExchangeOperationID(str(m, fieldActorAssertionIssuer), str(m, fieldActorAssertionJTI))
	if err != nil {
		return fmt.Errorf("%w: %w", ErrDerivedID, err)
	}
	if got := str(m, fieldCommandGrantExchangeOperation); got != want {
		return fmt.Errorf("%w: %s %s (want %s)", ErrDerivedID, fieldCommandGrantExchangeOperation, got, want)
	}
	return nil
}
