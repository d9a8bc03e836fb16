package catchupmetering_test

import (
	"context"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	billingc "github.com/oceanway/core/contracts/billing"
	"github.com/oceanway/core/contracts/digest"
	"github.com/oceanway/core/contracts/meterfacts"
	"github.com/oceanway/core/contracts/strict"
	"github.com/oceanway/core/internal/billing/catchup"
	"github.com/oceanway/core/internal/billing/catchup/catchupmetering"
	"github.com/oceanway/core/internal/ownerread/meteringread"
)

// conflicting answers every validation with Metering's conflict fact.
type conflicting struct {
	meteringread.Reader
	fact *meterfacts.SettlementInputConflictFact
}

func (c conflicting) ValidateSettlementInputCurrent(context.Context, meteringread.SettlementValidationRequest) (meteringread.SettlementValidation, error) {
	return meteringread.SettlementValidation{Conflict: c.fact}, nil
}

// Issue 32 / BI-3: Metering's conflicting answer (its stored
// SettlementInputConflictFact@1) reaches the catch-up worker as a
// *catchup.SettlementInputOwnerConflictError carrying exactly that fact's
// quadruple, which is what blocks the Work (Blocked@1, fence
// blocked_on_owner_conflict); the real Metering side is
// TestMETSettlementInputConflictFactWhileOwnerBlocked.
func TestCatchUpReadsOwnerConflictIsTheFact(t *testing.T) {
	t.Parallel()
	h := "5d5d5d5d5d5d5d5d5d5d5d5d5d5d5d5d5d5d5d5d5d5d5d5d5d5d5d5d5d5d5d5d"
	fact := &meterfacts.SettlementInputConflictFact{Fact: strict.Quadruple{Ref: "sicf-1", SchemaVersion: "1", DigestAlgorithmVersion: digest.JCSSHA256V1, Digest: h},
		ReasonCode: meterfacts.ConflictSourceOwnerConflict, BlockingCauseKind: "gateway_usage_owner_conflict"}
	r := catchupmetering.Reads{Metering: conflicting{fact: fact}}
	in := billingc.SettlementInput{Snapshot: strict.Quadruple{Ref: "sis-1", SchemaVersion: "1", DigestAlgorithmVersion: digest.JCSSHA256V1, Digest: h}, StateVersion: 1}
	_, err := r.ValidateSettlementInputCurrent(t.Context(), catchup.ValidationRequest{Purpose: catchup.PurposeBillingCatchUpFence,
		OperationID: uuid.NewString(), SettlementDimensionID: uuid.NewString(), Input: in, BasisDigest: digest.Digest{Algorithm: digest.JCSSHA256V1, Value: h}})
	var oc *catchup.SettlementInputOwnerConflictError
	require.ErrorAs(t, err, &oc)
	require.Equal(t, fact.Fact, oc.Fact)
	require.ErrorIs(t, err, catchup.ErrSettlementInputOwnerConflict)
}
