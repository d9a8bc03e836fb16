package billing

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

// The worker's claim is a hot statement: it must read only the fences
// waiting for verification (the partial index), never the caught-up
// history, however long it grows.
func TestCatchUpClaimReadsOnlyPendingFences(t *testing.T) {
	t.Parallel()
	pool := dbtest.New(t, dbtest.Opts{Boundaries: []boundary.Boundary{boundary.Core},
		Lines: []migrate.Line{outboxschema.Line(), admissionschema.Line(), billingschema.Line()}, MaxConns: 4}).Core()
	ctx := t.Context()
	const history = 400
	hex := strings.Repeat("ab", 32)
	q := func(ref string) strict.Quadruple {
		return strict.Quadruple{Ref: ref, SchemaVersion: "1", DigestAlgorithmVersion: digest.JCSSHA256V1, Digest: hex}
	}
	p := CatchUpOpenParams{Tenant: CatchUpTenant{Kind: "organization", ID: uuid.NewString(), WorkspaceID: uuid.NewString()},
		CorrelationID: uuid.NewString(), FinalizationCommitted: q("bfc-plan"), FinalizationEventID: uuid.NewString(), Now: time.Now().UTC()}
	for i := range history + 1 {
		d := billingc.SettlementDimension{BillingReservationID: uuid.NewString(), BillingAccountID: uuid.NewString(), RunID: uuid.NewString(),
			RunStepID: uuid.NewString(), ExecutionAttemptID: uuid.NewString(), ChargeDimensionKey: fmt.Sprintf("tokens.d%d", i),
			EconomicIdentity: envelope.SettlementEconomicIdentityV1{Kind: "credits"}}
		p.Dimensions = append(p.Dimensions, CatchUpOpenDimension{Dimension: d, SettledInput: billingc.SettlementInput{Snapshot: q(fmt.Sprintf("sis-%d", i)), StateVersion: 1}, SettledAmount: "1"})
	}
	require.NoError(t, db.WithTx(ctx, pool, func(ctx context.Context, tx pgx.Tx) error { return OpenSettlementCatchUpTx(ctx, tx, p) }))
	// Every fence but one is caught up.
	_, err := pool.Exec(ctx, `UPDATE billing.settlement_catch_up_fences SET fence_revision = fence_revision + 1,
		coordination_state = 'caught_up', caught_up_receipt_ref = 'r', caught_up_receipt_schema_version = '1',
		caught_up_receipt_digest_algorithm_version = 'jcs-sha256-v1', caught_up_receipt_digest = $1
		WHERE settlement_dimension_id <> (SELECT settlement_dimension_id FROM billing.settlement_catch_up_fences ORDER BY 1 LIMIT 1)`, hex)
	require.NoError(t, err)
	_, err = pool.Exec(ctx, `ANALYZE billing.settlement_catch_up_fences`)
	require.NoError(t, err)

	err = db.WithTx(ctx, pool, func(ctx context.Context, tx pgx.Tx) error {
		sql := strings.Replace(qCatchUpFencePending, "@limit", "10", 1)
		rows, err := tx.Query(ctx, "EXPLAIN "+sql)
		if err != nil {
			return err
		}
		lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return err
		}
		require.Contains(t, strings.Join(lines, "\n"), "settlement_catch_up_fences_pending", "plan:\n%s", strings.Join(lines, "\n"))
		rows, err = tx.Query(ctx, sql)
		if err != nil {
			return err
		}
		ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
		require.Len(t, ids, 1)
		return err
	})
	require.NoError(t, err)
}
