package catchup

import (
	"context"
	"fmt"
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
)

// The worker's claim is a hot statement (issue 16 slice "claim SKIP LOCKED,
// lease-aware index"): it must read only the claimable rows (the partial
// index settlement_catch_up_claims_available), never the caught-up history,
// however long it grows; a row under a live lease is not claimed again.
func TestCatchUpClaimReadsOnlyClaimableWork(t *testing.T) {
	t.Parallel()
	pool := dbtest.New(t, dbtest.Opts{Boundaries: []boundary.Boundary{boundary.Core},
		Lines: []migrate.Line{outboxschema.Line(), admissionschema.Line(), billingschema.Line()}, MaxConns: 4}).Core()
	ctx := t.Context()
	const history = 400
	hex := strings.Repeat("ab", 32)
	q := func(ref string) strict.Quadruple {
		return strict.Quadruple{Ref: ref, SchemaVersion: "1", DigestAlgorithmVersion: digest.JCSSHA256V1, Digest: hex}
	}
	now := time.Now().UTC()
	p := OpenParams{Tenant: Tenant{Kind: "organization", ID: uuid.NewString(), WorkspaceID: uuid.NewString()},
		CorrelationID: uuid.NewString(), FinalizationCommitted: q("bfc-plan"), FinalizationEventID: uuid.NewString(), Now: now}
	for i := range history + 1 {
		d := billingc.SettlementDimension{BillingReservationID: uuid.NewString(), BillingAccountID: uuid.NewString(), RunID: uuid.NewString(),
			RunStepID: uuid.NewString(), ExecutionAttemptID: uuid.NewString(), ChargeDimensionKey: fmt.Sprintf("tokens.d%d", i),
			EconomicIdentity: envelope.SettlementEconomicIdentityV1{Kind: "credits"}}
		p.Dimensions = append(p.Dimensions, OpenDimension{Dimension: d, SettledInput: billingc.SettlementInput{Snapshot: q(fmt.Sprintf("sis-%d", i)), StateVersion: 1}, SettledAmount: "1"})
	}
	require.NoError(t, db.WithTx(ctx, pool, func(ctx context.Context, tx pgx.Tx) error { return OpenFencesTx(ctx, tx, p) }))
	// Every claim row but one is parked as a caught-up fence's is (the
	// fence trigger sets 'infinity' on caught_up). The fences stay pending
	// (building 400 caught-up fences is not this test's point), so the
	// owner parks them with the claim guard off for this fixture only:
	// BC012.park-not-caught-up (00042) refuses it otherwise.
	err := db.WithTx(ctx, pool, func(ctx context.Context, tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `ALTER TABLE billing.settlement_catch_up_claims DISABLE TRIGGER settlement_catch_up_claims_guard;
			UPDATE billing.settlement_catch_up_claims SET available_at = 'infinity'
			WHERE settlement_dimension_id <> (SELECT settlement_dimension_id FROM billing.settlement_catch_up_claims ORDER BY 1 LIMIT 1);
			ALTER TABLE billing.settlement_catch_up_claims ENABLE TRIGGER settlement_catch_up_claims_guard`)
		return err
	})
	require.NoError(t, err)
	_, err = pool.Exec(ctx, `ANALYZE billing.settlement_catch_up_claims`)
	require.NoError(t, err)

	claimSQL, _ := catchUpStores(nil, nil)
	args := pgx.NamedArgs{"now": now, "lease_seconds": time.Minute.Seconds(), "limit": 10}
	err = db.WithTx(ctx, pool, func(ctx context.Context, tx pgx.Tx) error {
		rows, err := tx.Query(ctx, "EXPLAIN "+claimSQL.ClaimSQL(), args)
		if err != nil {
			return err
		}
		lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return err
		}
		plan := strings.Join(lines, "\n")
		require.Contains(t, plan, "settlement_catch_up_claims_available", "plan:\n%s", plan)
		require.NotContains(t, plan, "Seq Scan on settlement_catch_up_claims", "plan:\n%s", plan)
		return nil
	})
	require.NoError(t, err)
	claim := func() []catchUpAttempt {
		attempts, err := db.WithTxV(ctx, pool, func(ctx context.Context, tx pgx.Tx) ([]catchUpAttempt, error) {
			rows, err := tx.Query(ctx, claimSQL.ClaimSQL(), args)
			if err != nil {
				return nil, err
			}
			return pgx.CollectRows(rows, pgx.RowToStructByName[catchUpAttempt])
		})
		require.NoError(t, err)
		return attempts
	}
	first := claim()
	require.Len(t, first, 1)
	require.Equal(t, int64(1), first[0].AttemptNumber)
	require.Empty(t, claim(), "a live lease is not claimed again")
	args["now"] = now.Add(2 * time.Minute)
	second := claim()
	require.Len(t, second, 1, "an expired lease is reclaimable")
	require.Equal(t, int64(2), second[0].AttemptNumber)
	require.NotEqual(t, first[0].FencingToken, second[0].FencingToken, "a reclaim gets a new fencing token")
}
