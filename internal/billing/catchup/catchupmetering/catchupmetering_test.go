package catchupmetering_test

import (
	"crypto/sha256"
	"encoding/hex"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	billingc "github.com/oceanway/core/contracts/billing"
	"github.com/oceanway/core/contracts/digest"
	"github.com/oceanway/core/contracts/strict"
	"github.com/oceanway/core/internal/billing/catchup"
	"github.com/oceanway/core/internal/billing/catchup/catchupmetering"
	"github.com/oceanway/core/internal/boundary"
	"github.com/oceanway/core/internal/dbtest"
	"github.com/oceanway/core/internal/metering"
	meteringschema "github.com/oceanway/core/internal/metering/schema"
	"github.com/oceanway/core/internal/migrate"
	outboxschema "github.com/oceanway/core/internal/outbox/schema"
)

func TestMain(m *testing.M) { dbtest.Main(m) }

// The adapter hands Metering's typed refusals through unchanged and writes
// nothing: an input that is not in its dimension's chain, and a purpose
// that does not exist (the catch-up only asks billing_catch_up_fence and
// post_finalization_transition).
func TestCatchUpReadsRefusalsAreTyped(t *testing.T) {
	t.Parallel()
	pool := dbtest.New(t, dbtest.Opts{Boundaries: []boundary.Boundary{boundary.Metering},
		Lines: []migrate.Line{outboxschema.Line(), meteringschema.Line()}, MaxConns: 4}).Metering()
	h := sha256.Sum256([]byte("sis-unknown"))
	in := billingc.SettlementInput{Snapshot: strict.Quadruple{Ref: "sis-unknown", SchemaVersion: "1",
		DigestAlgorithmVersion: digest.JCSSHA256V1, Digest: hex.EncodeToString(h[:])}, StateVersion: 1}
	basis := digest.Digest{Algorithm: digest.JCSSHA256V1, Value: hex.EncodeToString(h[:])}
	r := catchupmetering.Reads{Metering: metering.Reads{DB: pool}}
	dim := uuid.NewString()

	_, err := r.ValidateSettlementInputCurrent(t.Context(), catchup.ValidationRequest{Purpose: catchup.PurposeBillingCatchUpFence,
		OperationID: uuid.NewString(), SettlementDimensionID: dim, Input: in, BasisDigest: basis})
	require.ErrorIs(t, err, metering.ErrSettlementInputUnknown)
	_, err = r.ValidateSettlementInputCurrent(t.Context(), catchup.ValidationRequest{Purpose: "billing_catch_up_everything",
		OperationID: uuid.NewString(), SettlementDimensionID: dim, Input: in, BasisDigest: basis})
	require.ErrorIs(t, err, metering.ErrValidationRequestInvalid)
	_, err = r.SettlementInputTarget(t.Context(), dim, in)
	require.ErrorIs(t, err, metering.ErrNoSettlementInput)
	var receipts int
	require.NoError(t, pool.QueryRow(t.Context(), `SELECT count(*) FROM metering.settlement_validation_receipts`).Scan(&receipts))
	require.Zero(t, receipts)
}
