package catchup

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	billingc "github.com/oceanway/core/contracts/billing"
	"github.com/oceanway/core/contracts/digest"
	"github.com/oceanway/core/contracts/envelope"
	"github.com/oceanway/core/contracts/strict"
	admissionschema "github.com/oceanway/core/internal/admission/schema"
	billingschema "github.com/oceanway/core/internal/billing/schema"
	"github.com/oceanway/core/internal/boundary"
	"github.com/oceanway/core/internal/db"
	"github.com/oceanway/core/internal/dbtest"
	"github.com/oceanway/core/internal/migrate"
	outboxschema "github.com/oceanway/core/internal/outbox/schema"
	"github.com/oceanway/core/internal/work"
)

// OB-CLAIM-2 for catch-up Work: a parked claim ('infinity': its fence
// caught up in the attempt's own commit) has no live attempt, so a renewal
// still running for that attempt matches nothing (work.ErrLeaseLost) and
// leaves the claim parked. Matched on generation and attempt number alone,
// the renewal moved the row back to a finite lease, making a caught-up
// fence claimable again (and, since 00042, failed with BC012).
func TestCatchUpRenewalNeverUnparksAClaim(t *testing.T) {
	t.Parallel()
	pool := dbtest.New(t, dbtest.Opts{Boundaries: []boundary.Boundary{boundary.Core},
		Lines: []migrate.Line{outboxschema.Line(), admissionschema.Line(), billingschema.Line()}, MaxConns: 4}).Core()
	ctx := t.Context()
	q := strict.Quadruple{Ref: "bfc-renew", SchemaVersion: "1", DigestAlgorithmVersion: digest.JCSSHA256V1, Digest: strings.Repeat("ab", 32)}
	now := time.Now().UTC()
	d := billingc.SettlementDimension{BillingReservationID: uuid.NewString(), BillingAccountID: uuid.NewString(), RunID: uuid.NewString(),
		RunStepID: uuid.NewString(), ExecutionAttemptID: uuid.NewString(), ChargeDimensionKey: "tokens.input",
		EconomicIdentity: envelope.SettlementEconomicIdentityV1{Kind: "credits"}}
	si := q
	si.Ref = "sis-renew"
	p := OpenParams{Tenant: Tenant{Kind: "organization", ID: uuid.NewString(), WorkspaceID: uuid.NewString()},
		CorrelationID: uuid.NewString(), FinalizationCommitted: q, FinalizationEventID: uuid.NewString(), Now: now,
		Dimensions: []OpenDimension{{Dimension: d, SettledInput: billingc.SettlementInput{Snapshot: si, StateVersion: 1}, SettledAmount: "1"}}}
	require.NoError(t, db.WithTx(ctx, pool, func(ctx context.Context, tx pgx.Tx) error { return OpenFencesTx(ctx, tx, p) }))

	store, _ := catchUpStores(pool, func() time.Time { return now })
	attempts, err := db.WithTxV(ctx, pool, func(ctx context.Context, tx pgx.Tx) ([]catchUpAttempt, error) {
		rows, err := tx.Query(ctx, store.ClaimSQL(), pgx.NamedArgs{"now": now, "lease_seconds": time.Minute.Seconds(), "limit": 1})
		if err != nil {
			return nil, err
		}
		return pgx.CollectRows(rows, pgx.RowToStructByName[catchUpAttempt])
	})
	require.NoError(t, err)
	require.Len(t, attempts, 1)
	// The attempt's commit parks the claim (the fence trigger does it on
	// caught_up); the fixture parks it directly, as the owner, with the claim
	// guard off for that one statement (the fence is not caught up here).
	require.NoError(t, db.WithTx(ctx, pool, func(ctx context.Context, tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `ALTER TABLE billing.settlement_catch_up_claims DISABLE TRIGGER settlement_catch_up_claims_guard;
			UPDATE billing.settlement_catch_up_claims SET available_at = 'infinity';
			ALTER TABLE billing.settlement_catch_up_claims ENABLE TRIGGER settlement_catch_up_claims_guard`)
		return err
	}))

	require.ErrorIs(t, store.Renew(ctx, attempts[0].args(), time.Minute), work.ErrLeaseLost)
	var parked bool
	require.NoError(t, pool.QueryRow(ctx, `SELECT available_at = 'infinity' FROM billing.settlement_catch_up_claims
		WHERE settlement_dimension_id = $1`, attempts[0].DimensionID).Scan(&parked))
	require.True(t, parked, "the renewal left the claim parked")
}
