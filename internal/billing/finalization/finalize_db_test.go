package finalization_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/contracts/envelope"
	"github.com/oceanway/core/contracts/route"
	"github.com/oceanway/core/contracts/strict"
	admissionschema "github.com/oceanway/core/internal/admission/schema"
	"github.com/oceanway/core/internal/billing"
	"github.com/oceanway/core/internal/billing/finalization"
	billingschema "github.com/oceanway/core/internal/billing/schema"
	"github.com/oceanway/core/internal/boundary"
	"github.com/oceanway/core/internal/db"
	"github.com/oceanway/core/internal/dbtest"
	"github.com/oceanway/core/internal/inbox"
	"github.com/oceanway/core/internal/migrate"
	operationsschema "github.com/oceanway/core/internal/operations/schema"
	outboxschema "github.com/oceanway/core/internal/outbox/schema"
	"github.com/oceanway/core/internal/outbox/transport"
	"github.com/oceanway/core/internal/release"
)

// core is one core database with the billing line: the migrating
// superuser (fixtures and assertions), the least-privileged billing pool
// (coordinator and worker) and the real coordinator consumer.
type core struct {
	admin *pgxpool.Pool
	pool  *pgxpool.Pool
	ops   *pgxpool.Pool // oceanway_operations: the case identities
	c     *billing.Coordinator
}

func newCore(t *testing.T) *core {
	t.Helper()
	b := dbtest.New(t, dbtest.Opts{Boundaries: []boundary.Boundary{boundary.Core},
		Lines: []migrate.Line{outboxschema.Line(), admissionschema.Line(), billingschema.Line(), operationsschema.Line()}, MaxConns: 2})
	admin := b.Core()
	_, err := release.Bootstrap(t.Context(), admin, release.BootstrapParams{ProjectionName: "operations_read_model", ProjectionVersion: 1, SourceRelease: "test"})
	require.NoError(t, err)
	cfg, err := pgxpool.ParseConfig(b.DSNs[boundary.Core])
	require.NoError(t, err)
	cfg.MaxConns = 2
	cfg.AfterConnect = func(ctx context.Context, c *pgx.Conn) error {
		_, err := c.Exec(ctx, "SET ROLE "+billingschema.RoleBilling+"; SET search_path = pg_catalog")
		return err
	}
	pool, err := pgxpool.NewWithConfig(t.Context(), cfg)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	c, err := billing.NewCoordinator(pool, billing.CoordinatorConfig{Inbox: inbox.Config{LockTimeout: time.Second}})
	require.NoError(t, err)
	ops := dbtest.RolePool(t, b.DSNs[boundary.Core], operationsschema.RoleOperations)
	return &core{admin: admin, pool: pool, ops: ops, c: c}
}

var occurred = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

// admit writes the world's admission rows and opens its billing rows
// through billing.OpenFinalizationTx (as admission does).
func (k *core) admit(t *testing.T, w *world) {
	t.Helper()
	c := w.closure
	m := c.RunAdmissionManifest
	_, err := db.WithTxV(t.Context(), k.admin, func(ctx context.Context, tx pgx.Tx) (billing.Opened, error) {
		for _, stmt := range []struct {
			sql  string
			args []any
		}{
			{`INSERT INTO admission.admission_requests VALUES ($1, 'jcs-sha256-v1', $2, '{}', $3, $4)`,
				[]any{"0195f4a8-0000-7000-8000-0000000000a1", m.Digest, c.RunID, occurred}},
			{`INSERT INTO admission.run_admission_manifests VALUES ($1, $2, $3, $4, $5, '{}', $6)`,
				[]any{m.Ref, m.SchemaVersion, string(m.DigestAlgorithmVersion), m.Digest, c.RunID, occurred}},
			{`INSERT INTO admission.runs VALUES ($1, $2, 'organization', $3, $4, NULL, $5, $6, $7, $8, $9, $10, $11, $12, $13)`,
				[]any{c.RunID, "0195f4a8-0000-7000-8000-0000000000a1", c.Tenant.TenantID, c.Tenant.WorkspaceID, "0195f4a8-0000-7000-8000-0000000000a2",
					c.BillingAccountID, c.BillingReservationID, m.Ref, m.SchemaVersion, string(m.DigestAlgorithmVersion), m.Digest,
					"0195f4a8-0000-7000-8000-0000000000a3", occurred}},
			{`INSERT INTO admission.reservations VALUES ($1, $2, $3, 'credits', $4, 'reserved', $5, $6)`,
				[]any{c.BillingReservationID, c.BillingAccountID, c.RunID, 1500, "0195f4a8-0000-7000-8000-0000000000a4", occurred}},
		} {
			if _, err := tx.Exec(ctx, stmt.sql, stmt.args...); err != nil {
				return billing.Opened{}, err
			}
		}
		return billing.OpenFinalizationTx(ctx, tx, billing.OpenParams{FenceID: c.FenceID, BillingReservationID: c.BillingReservationID,
			BillingAccountID: c.BillingAccountID, RunID: c.RunID, ReservedCredits: 1500, Manifest: m, At: occurred})
	})
	require.NoError(t, err)
}

// closureDelivery is the world's execution.run-finalization.closed@1 as the
// dispatcher delivers it (a fresh attempt id each time: a redelivery).
func closureDelivery(t *testing.T, w *world) transport.Delivery {
	t.Helper()
	c := w.closure
	p := envelope.ExecutionRunFinalizationClosedV1Payload{BillingReservationID: c.BillingReservationID, BillingAccountID: c.BillingAccountID,
		RunID: c.RunID, ClosureOperationID: c.ClosureOperationID, RunExecutionFinalizationStateVersion: c.StateVersion, AttemptCount: c.AttemptCount}
	p.SetRunAdmissionManifest(c.RunAdmissionManifest)
	p.SetRunExecutionFinalization(c.Finalization)
	p.SetAttemptSetManifest(c.AttemptSet)
	e, err := envelope.Build(envelope.Envelope{
		EventID: "0195f4a8-0000-7000-8000-0000000000c1", EventType: envelope.ExecutionRunFinalizationClosedV1, EventSchemaVersion: "1",
		AggregateType: envelope.AggregateRun, AggregateID: c.RunID, AggregateRevision: 1,
		TenantKind: envelope.TenantOrganization, TenantID: c.Tenant.TenantID, WorkspaceID: c.Tenant.WorkspaceID,
		CorrelationID: "0195f4a8-0000-7000-8000-0000000000a2", OperationID: c.ClosureOperationID, OccurredAt: occurred, Payload: p.Map(),
	})
	require.NoError(t, err)
	canonical, err := e.Canonical()
	require.NoError(t, err)
	d, err := e.Digest()
	require.NoError(t, err)
	return transport.Delivery{EventID: e.EventID, EventType: e.EventType, EventSchemaVersion: e.EventSchemaVersion, Envelope: canonical, EnvelopeDigest: d,
		Member: route.Member{EventType: e.EventType, EventSchemaVersion: "1", Destination: route.BillingFinalizationCoordinator,
			ConsumerName: route.BillingFinalizationCoordinatorConsumer, ExpectedReceiptType: route.BillingFinalizationCoordinatorConsumerReceipt,
			ExpectedReceiptSchemaVersion: route.ReceiptSchemaVersion1, ProjectionTarget: route.NotApplicable, Mandatory: true},
		AttemptID: uuid.NewString(), AttemptNumber: 1}
}

// settle records, as the settlement catch-up consumer does before
// finalization, the current input of the dispatched attempt's dimension
// through billing.ApplySettlementInputTx (advance the watermark, schedule
// a Work when the closure is applied). After finalization the input
// belongs to the catch-up (ErrFinalized), which is fine here.
func (k *core) settle(t *testing.T, w *world, attempt, dim string) {
	t.Helper()
	var in *finalizationInput
	for _, x := range w.inputs[attempt] {
		if x.Snapshot.ChargeDimensionKey == dim {
			in = &finalizationInput{x.Snapshot.SettlementDimensionID, x.Snapshot.RunStepID, x.Ref.Snapshot, x.Ref.StateVersion}
		}
	}
	require.NotNil(t, in, dim)
	err := db.WithTx(t.Context(), k.pool, func(ctx context.Context, tx pgx.Tx) error {
		_, err := billing.ApplySettlementInputTx(ctx, tx, billing.SettlementInput{
			EventID:              uuid.NewSHA1(uuid.NameSpaceOID, []byte(in.dimensionID+fmt.Sprint(in.version))).String(),
			BillingReservationID: reservation, RunID: run, RunStepID: in.step, ExecutionAttemptID: attempt, ChargeDimensionKey: dim,
			SettlementDimensionID: in.dimensionID, EconomicIdentity: envelope.SettlementEconomicIdentityV1{Kind: "credits"},
			Snapshot: in.snapshot, StateVersion: in.version,
		})
		return err
	})
	if !errors.Is(err, billing.ErrFinalized) {
		require.NoError(t, err)
	}
}

type finalizationInput struct {
	dimensionID, step string
	snapshot          strict.Quadruple
	version           int64
}

// drain runs the worker until no Work is runnable.
func drain(t *testing.T, wk *finalization.Worker) []finalization.Result {
	t.Helper()
	var out []finalization.Result
	for {
		r, err := wk.ProcessOne(t.Context())
		if errors.Is(err, finalization.ErrNoWork) {
			return out
		}
		require.NoError(t, err)
		out = append(out, r)
	}
}

type committed struct {
	chain                  map[string]string // the manifest, bundle and decision quadruples the fact binds
	count                  int
	ref, digest, body      string
	settled, released      string
	decisionRef, bundleRef string
}

func (k *core) committed(t *testing.T) committed {
	t.Helper()
	var c committed
	require.NoError(t, k.admin.QueryRow(t.Context(), `SELECT count(*) FROM billing.finalization_committed`).Scan(&c.count))
	if c.count == 1 {
		require.NoError(t, k.admin.QueryRow(t.Context(), `
			SELECT committed_ref, committed_digest, committed_body, settled_amount::text, released_amount::text
			  FROM billing.finalization_committed`).Scan(&c.ref, &c.digest, &c.body, &c.settled, &c.released))
		require.NoError(t, k.admin.QueryRow(t.Context(), `
			SELECT decision_ref, bundle_ref FROM billing.finalization_decisions WHERE bundle_ref IS NOT NULL`).Scan(&c.decisionRef, &c.bundleRef))
		var fact map[string]any
		require.NoError(t, json.Unmarshal([]byte(c.body), &fact))
		c.chain = map[string]string{}
		for _, prefix := range []string{"finalizationInputManifest", "finalizationValidationBundle", "billingFinalizationDecision"} {
			c.chain[prefix] = fmt.Sprint(fact[prefix+"Ref"], " ", fact[prefix+"Digest"])
		}
	}
	return c
}

// BI-1 (issue 15 "every order"): every order of {the coordinator's Work run,
// the closure, the settlement of dimension 1, of dimension 2, a
// redelivered closure} ends with exactly one committed fact binding the
// same input manifest, validation bundle and decision digests and the same
// settled/released amounts (settled + released = reserved, nothing above
// the reservation); waits in between are recorded evaluations with a
// visible reason, never money. The committed fact's own digest also binds
// the fence revision, Work generation and coordinator receipt at commit
// (the outbox document requires it), which differ by order; a replay of
// one commit is byte-identical (billing-core's commit tests).
func TestBI1EveryOrderCommitsOneFinalization(t *testing.T) {
	t.Parallel()
	steps := []string{"work", "closure", "settle1", "settle2", "redeliver"}
	var orders [][]string
	var permute func(prefix, rest []string)
	permute = func(prefix, rest []string) {
		if len(rest) == 0 {
			if strings.Index(strings.Join(prefix, " "), "closure") < strings.Index(strings.Join(prefix, " "), "redeliver") {
				orders = append(orders, append([]string(nil), prefix...))
			}
			return
		}
		for i := range rest {
			next := append(append([]string(nil), rest[:i]...), rest[i+1:]...)
			permute(append(prefix, rest[i]), next)
		}
	}
	permute(nil, steps)
	require.Len(t, orders, 60, "a redelivery follows its first delivery")
	results := make([]committed, len(orders))
	t.Run("orders", func(t *testing.T) {
		for i, order := range orders {
			t.Run(strings.Join(order, "-"), func(t *testing.T) {
				t.Parallel()
				results[i] = runOrder(t, order)
			})
		}
	})
	for i, got := range results {
		require.Equal(t, results[0].decisionRef, got.decisionRef, "order %v: the same decision", orders[i])
		require.Equal(t, results[0].bundleRef, got.bundleRef, "order %v: the same bundle", orders[i])
		require.Equal(t, results[0].chain, got.chain, "order %v: the committed fact binds the same manifest, bundle and decision digests", orders[i])
	}
}

func runOrder(t *testing.T, order []string) committed {
	k := newCore(t)
	w := newWorld("1200", "333")
	k.admit(t, w)
	wk := finalization.NewWorker(k.pool, w.owners(), finalization.BillingLedger{}, finalization.Config{}, nil)
	// The not-dispatched attempt's terminal-none input reaches Billing first.
	k.settle(t, w, rejected, "attempt.not_dispatched")
	for _, step := range order {
		switch step {
		case "work":
			drain(t, wk)
		case "closure", "redeliver":
			_, err := k.c.Consume(t.Context(), closureDelivery(t, w))
			require.NoError(t, err, step)
		case "settle1":
			k.settle(t, w, dispatched, "text.input_tokens")
		case "settle2":
			k.settle(t, w, dispatched, "text.output_tokens")
		}
	}
	drain(t, wk)
	got := k.committed(t)
	require.Equal(t, 1, got.count, "exactly one committed fact")
	require.Equal(t, "2.199", got.settled)
	require.Equal(t, "1497.801", got.released, "settled + released = reserved")
	k.requireBalancedLedger(t)
	return got
}

// requireBalancedLedger: every posting group balances, no balance is
// negative, and a finalized reservation settles + releases what it reserved.
func (k *core) requireBalancedLedger(t *testing.T) {
	t.Helper()
	var unbalanced, negative, off int
	require.NoError(t, k.admin.QueryRow(t.Context(), `
		SELECT (SELECT count(*) FROM (SELECT posting_group_id FROM billing.ledger_postings GROUP BY 1
		          HAVING sum(amount) FILTER (WHERE direction = 'debit') <> sum(amount) FILTER (WHERE direction = 'credit')) x),
		       (SELECT count(*) FROM billing.ledger_balances WHERE balance < 0),
		       (SELECT count(*) FROM billing.reservation_states WHERE state <> 'reserved' AND settled_amount + released_amount <> reserved_amount)`).
		Scan(&unbalanced, &negative, &off))
	require.Zero(t, unbalanced+negative+off)
}

// BI-1, issue 32 part 4 (guard BI-1.registered-dimension-missing), on real
// PostgreSQL as the billing role: the dispatched attempt's manifest
// registers tools.calls besides its two token dimensions, and tools.calls
// has no evidence yet. Every other input is settled and the closure
// applied: the worker's evaluation is blocked (inputs_not_closed, recorded),
// nothing is committed and no ledger posting exists. When tools.calls'
// input arrives (its current-changed event wakes the fence), the same
// finalization commits with it in the base settlement.
func TestBI1RegisteredDimensionKeepsFinalizationBlockedUntilItArrives(t *testing.T) {
	t.Parallel()
	k := newCore(t)
	w := newWorld("1200", "333")
	w.registered[dispatched] = []string{"text.input_tokens", "text.output_tokens", "tools.calls"}
	k.admit(t, w)
	wk := finalization.NewWorker(k.pool, w.owners(), finalization.BillingLedger{}, finalization.Config{}, nil)
	k.settle(t, w, rejected, "attempt.not_dispatched")
	k.settle(t, w, dispatched, "text.input_tokens")
	k.settle(t, w, dispatched, "text.output_tokens")
	_, err := k.c.Consume(t.Context(), closureDelivery(t, w))
	require.NoError(t, err)
	var before, postings, blocked int
	require.NoError(t, k.admin.QueryRow(t.Context(), `SELECT count(*) FROM billing.ledger_postings`).Scan(&before))
	drain(t, wk)
	require.Zero(t, k.committed(t).count, "no finalization while a registered dimension is missing")
	require.NoError(t, k.admin.QueryRow(t.Context(), `SELECT count(*) FROM billing.finalization_decisions
		WHERE decision = 'blocked' AND reason_code = 'inputs_not_closed'`).Scan(&blocked))
	require.Positive(t, blocked, "the wait is a recorded evaluation with its reason")
	require.NoError(t, k.admin.QueryRow(t.Context(), `SELECT count(*) FROM billing.ledger_postings`).Scan(&postings))
	require.Equal(t, before, postings, "a blocked evaluation writes no ledger")
	var state string
	require.NoError(t, k.admin.QueryRow(t.Context(), `SELECT state FROM billing.reservation_states WHERE billing_reservation_id = $1`, reservation).Scan(&state))
	require.Equal(t, "reserved", state)

	// The registered dimension's evidence arrives: Metering settles it and
	// its event reaches Billing; the finalization commits with it.
	w.setUsage("tools.calls", "4", 1)
	k.settle(t, w, dispatched, "tools.calls")
	drain(t, wk)
	got := k.committed(t)
	require.Equal(t, 1, got.count)
	require.Equal(t, "3.199", got.settled, "1200 × 0.001 + 333 × 0.003 + 4 × 0.25: the late dimension is in the base settlement")
	require.Equal(t, "1496.801", got.released)
	k.requireBalancedLedger(t)
}
