package reconciliation

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	"github.com/oceanway/core/contracts/envelope"
	"github.com/oceanway/core/contracts/schema"
	"github.com/oceanway/core/contracts/strict"
)

// Derivation names (envelope.DeriveID). Each is versioned: changing the
// inputs of a derivation is a new name.
const (
	DerivationCaseRef                  = "billing_finalization_reconciliation_case_ref@1"
	DerivationCaseRequestOperation     = "billing_finalization_reconciliation_case_request_operation@1"
	DerivationResolutionOperation      = "billing_finalization_reconciliation_resolution_operation@1"
	DerivationGrantExchangeOperation   = "command_grant_exchange_operation@1"
	caseRefPrefix                      = "fcase-"
	fieldReconciliationGeneration      = "reconciliationGeneration"
	fieldBillingFinalizationFenceID    = "billingFinalizationFenceId"
	fieldActorAssertionIssuer          = "actorAssertionIssuer"
	fieldActorAssertionJTI             = "actorAssertionJti"
	fieldResolutionOperationID         = "resolutionOperationId"
	fieldCommandGrantExchangeOperation = "commandGrantExchangeOperationId"
)

// ReconciliationCaseRef is the case ref of one fence generation: Billing
// and Operations compute the same ref, so a reservation whose response was
// lost is found again, and a generation superseded before it committed
// reuses its identity instead of opening a second case.
func ReconciliationCaseRef(billingFinalizationFenceID string, reconciliationGeneration int64) string {
	return caseRefPrefix + envelope.DeriveID(DerivationCaseRef, fenceGeneration(billingFinalizationFenceID, reconciliationGeneration))
}

// CaseRequestOperationID is the operation under which Billing reserves and
// reads the case identity of one fence generation.
func CaseRequestOperationID(billingFinalizationFenceID string, reconciliationGeneration int64) string {
	return envelope.DeriveID(DerivationCaseRequestOperation, fenceGeneration(billingFinalizationFenceID, reconciliationGeneration))
}

func fenceGeneration(fenceID string, generation int64) map[string]any {
	return map[string]any{fieldBillingFinalizationFenceID: fenceID, fieldReconciliationGeneration: generation}
}

// ResolutionOperationID is the operation of the resolution a decision
// authorizes, derived from the decision's full quadruple only. The
// decision therefore never contains it and the digest chain stays acyclic;
// a replayed command finds the committed Applied fact by this operation.
func ResolutionOperationID(decision strict.Quadruple) string {
	m := map[string]any{}
	decision.Put(m, PrefixDecision)
	return envelope.DeriveID(DerivationResolutionOperation, m)
}

// CommandGrantExchangeOperationID is the operation of one grant exchange,
// derived only from the actor assertion JWT's iss and jti, byte for byte
// (no trimming or case folding): the same assertion always finds the first
// exchange's result. Both must be principal text (printable ASCII), as the
// result stores them.
func CommandGrantExchangeOperationID(actorAssertionIssuer, actorAssertionJTI string) (string, error) {
	if err := schema.PrincipalText.Check(actorAssertionIssuer); err != nil {
		return "", fmt.Errorf("%s: %w", fieldActorAssertionIssuer, err)
	}
	if err := schema.PrincipalText.Check(actorAssertionJTI); err != nil {
		return "", fmt.Errorf("%s: %w", fieldActorAssertionJTI, err)
	}
	return envelope.DeriveID(DerivationGrantExchangeOperation, map[string]any{
		fieldActorAssertionIssuer: actorAssertionIssuer, fieldActorAssertionJTI: actorAssertionJTI,
	}), nil
}

// GrantSHA256 is the grant's identity: the lowercase hex SHA-256 of the
// compact JWS exactly as issued.
func GrantSHA256(compactJWS string) string {
	sum := sha256.Sum256([]byte(compactJWS))
	return hex.EncodeToString(sum[:])
}

// checkResolutionOperation: m's resolutionOperationId derives from its
// decision quadruple.
func checkResolutionOperation(m map[string]any) error {
	if want := ResolutionOperationID(quad(m, PrefixDecision)); str(m, fieldResolutionOperationID) != want {
		return fmt.Errorf("%w: %s %s (want %s)", ErrDerivedID, fieldResolutionOperationID, str(m, fieldResolutionOperationID), want)
	}
	return nil
}
