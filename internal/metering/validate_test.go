package metering_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgerrcode"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/contracts/digest"
	"github.com/oceanway/core/contracts/envelope"
	contract "github.com/oceanway/core/contracts/execution"
	"github.com/oceanway/core/contracts/meterfacts"
	"github.com/oceanway/core/contracts/settlement"
	"github.com/oceanway/core/contracts/strict"
	"github.com/oceanway/core/internal/boundary"
	"github.com/oceanway/core/internal/db"
	"github.com/oceanway/core/internal/metering"
	"github.com/oceanway/core/internal/ownerread/meteringread"
	"github.com/oceanway/core/internal/release"
)

// settlementChain writes SettlementInputSnapshot@1 versions of one gateway
// usage dimension of an attempt the way the worker does (immutable rows
// bound to the Work's latest attempt, pointer CAS), so validation has a
// real chain to answer about.
type settlementChain struct {
	b       *bundle
	a       attemptFixture
	attempt *metering.Attempt
	dim     string
	refs    []settlement.Ref
}

func newSettlementChain(t *testing.T, b *bundle, n int) *settlementChain {
	t.Helper()
	a := newAttempt(n)
	b.ack(t, a.eligibility(b.owners, contract.DispositionNotDispatched))
	c := &settlementChain{b: b, a: a, attempt: claimOne(t, b, time.Hour), dim: "text.output_tokens"}
	require.Equal(t, a.attemptID, c.attempt.Head.ExecutionAttemptID)
	return c
}

func (c *settlementChain) dimensionID() string {
	return envelope.SettlementDimensionID(id("reservation", c.a.n), c.a.runID, id("step", c.a.n), c.a.attemptID, c.dim)
}

// next appends the next version with the given quantity and moves the pointer.
func (c *settlementChain) next(t *testing.T, quantity string) settlement.Ref {
	t.Helper()
	v := int64(len(c.refs) + 1)
	p, err := settlement.PriceOf(c.dim)
	require.NoError(t, err)
	amount, err := settlement.Multiply(quantity, p.UnitPrice)
	require.NoError(t, err)
	s := &settlement.Snapshot{
		Snapshot:         strict.Quadruple{Ref: fmt.Sprintf("sis-%d-%d", c.a.n, v)},
		Tenant:           settlement.Tenant{Kind: "organization", ID: id("tenant"), WorkspaceID: id("workspace")},
		BillingAccountID: id("account", c.a.n), BillingReservationID: id("reservation", c.a.n),
		RunID: c.a.runID, RunStepID: id("step", c.a.n), ExecutionAttemptID: c.a.attemptID, ChargeDimensionKey: c.dim,
		SettlementDimensionID: c.dimensionID(), StateVersion: v,
		EligibilityFact: quad(fmt.Sprintf("eef-%d", c.a.n)), DispatchDisposition: settlement.DispositionDispatched, AttemptManifest: c.a.manifest,
		Decision:   settlement.Decision{Decision: settlement.DecisionEligible, RuleVersion: settlement.DecisionRuleVersion, ReasonCode: "dispatched", Ref: quad(fmt.Sprintf("med-%d", c.a.n))},
		MeterEvent: ptrQuad(quad(fmt.Sprintf("mev-%d-%d", c.a.n, v))),
		Basis: settlement.UsageBasis{Kind: settlement.BasisGatewayUsage, GatewayDeploymentID: c.a.deployment,
			AttemptRouteBinding: quad(fmt.Sprintf("arb-%d", c.a.n)), GatewayRouteSnapshot: quad(fmt.Sprintf("grs-%d", c.a.n)),
			CurrentAvailability: quad(fmt.Sprintf("gas-%d-%d", c.a.n, v)), AvailabilityStateVersion: v, AvailabilityState: contract.AvailabilityAvailable,
			ProviderEvidence:              ptrQuad(quad(fmt.Sprintf("gpe-%d-%d", c.a.n, v))),
			AvailabilityValidationReceipt: quad(fmt.Sprintf("gacvr-%d-%d", c.a.n, v)), AvailabilityValidationOperationID: id("validation", c.a.n, v)},
		Pricing: settlement.Pricing{PriceBookVersion: settlement.PriceBookVersion, UnitPrice: p.UnitPrice,
			BillingPolicyVersion: settlement.BillingPolicyVersion, RunAdmissionManifest: quad(fmt.Sprintf("ram-%d", c.a.n))},
		EconomicIdentity: settlement.EconomicIdentity{Kind: "credits"},
		Quantity:         quantity, Unit: p.Unit, TargetNetAmount: amount, ReconciliationState: settlement.ReconciliationNotRequired,
		RecordedAt: time.Now().UTC().Truncate(time.Microsecond),
	}
	var predVersion *int64
	var predRef *string
	if v > 1 {
		pred := c.refs[v-2]
		s.Predecessor = &pred
		predVersion, predRef = &pred.StateVersion, &pred.Snapshot.Ref
	}
	body, err := settlement.Seal(s)
	require.NoError(t, err)
	content, err := settlement.ContentDigest(s)
	require.NoError(t, err)
	h := c.attempt.Head
	ev := metering.SettlementEvent(s)
	require.NoError(t, pgx.BeginFunc(t.Context(), c.b.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(t.Context(), `INSERT INTO metering.settlement_input_snapshots (settlement_dimension_id, state_version,
			snapshot_ref, snapshot_schema_version, snapshot_digest_algorithm_version, snapshot_digest, content_digest,
			predecessor_state_version, predecessor_snapshot_ref, billing_reservation_id, run_id, run_step_id, execution_attempt_id,
			charge_dimension_key, target_net_amount, reconciliation_state, work_ref, attempt_number, fencing_token, snapshot_body, event_id)
			VALUES ($1, $2, $3, '1', 'jcs-sha256-v1', $4, $5, $6, $7, $8, $9, $10, $11, $12, $13::numeric, $14, $15, $16, $17, $18, $19)`,
			s.SettlementDimensionID, v, s.Snapshot.Ref, s.Snapshot.Digest, content.Value, predVersion, predRef, s.BillingReservationID,
			s.RunID, s.RunStepID, s.ExecutionAttemptID, s.ChargeDimensionKey, s.TargetNetAmount, s.ReconciliationState,
			h.Work.Ref, h.AttemptNumber, h.FencingToken, string(body), ev.EventID); err != nil {
			return err
		}
		// ME-1: PostgreSQL commits a version only with its event (ME005),
		// and the event only with the version that names it (ME008).
		if _, err := release.ForProducer(boundary.Metering).AppendTx(t.Context(), tx, *ev); err != nil {
			return err
		}
		if v == 1 {
			_, err := tx.Exec(t.Context(), `INSERT INTO metering.settlement_input_current (settlement_dimension_id, state_version,
				snapshot_ref, execution_attempt_id, charge_dimension_key) VALUES ($1, 1, $2, $3, $4)`,
				s.SettlementDimensionID, s.Snapshot.Ref, s.ExecutionAttemptID, s.ChargeDimensionKey)
			return err
		}
		_, err := tx.Exec(t.Context(), `UPDATE metering.settlement_input_current SET state_version = $2, snapshot_ref = $3, updated_at = now()
			WHERE settlement_dimension_id = $1 AND state_version = $2 - 1`, s.SettlementDimensionID, v, s.Snapshot.Ref)
		return err
	}))
	ref := s.Current()
	c.refs = append(c.refs, ref)
	return ref
}

func ptrQuad(q strict.Quadruple) *strict.Quadruple { return &q }

func manifestDigest(s string) digest.Digest {
	return quad("manifest-" + s).Digested()
}

func (c *settlementChain) request(purpose, op string, ref settlement.Ref) meteringread.SettlementValidationRequest {
	return meteringread.SettlementValidationRequest{Purpose: purpose, OperationID: op, SettlementDimensionID: c.dimensionID(),
		Snapshot: ref, InputManifestDigest: manifestDigest(op)}
}

func receipts(t *testing.T, b *bundle) int {
	t.Helper()
	return countRows(t, b, `SELECT count(*) FROM metering.settlement_validation_receipts`)
}

// TestMETVSCCurrentAndNotCurrentForEachPurpose (ADR-031
// validateSettlementInputCurrent): every one of the four purposes answers
// current for the dimension's Current five-tuple and not_current (with only
// the Current five-tuple) for an older one; the receipt binds the
// five-tuple, purpose, operation and input manifest digest and has no
// expiry: replaying an operation after the head moved returns the same bytes.
func TestMETVSCCurrentAndNotCurrentForEachPurpose(t *testing.T) {
	t.Parallel()
	b := workerSetup(t)
	c := newSettlementChain(t, b, 400)
	v1 := c.next(t, "10")
	first := map[string]meteringread.SettlementValidation{}
	for _, purpose := range meterfacts.Purposes {
		op := id("validation", purpose, 1)
		res, err := metering.ValidateSettlementInputCurrent(t.Context(), b.pool, c.request(purpose, op, v1))
		require.NoError(t, err, purpose)
		r := res.Receipt
		require.True(t, r.Current, purpose)
		require.Equal(t, purpose, r.Purpose)
		require.Equal(t, op, r.OperationID)
		require.Equal(t, manifestDigest(op), r.InputManifestDigest)
		require.Equal(t, c.dimensionID(), r.SettlementDimensionID)
		require.Equal(t, v1, settlement.Ref{Snapshot: r.Validated, StateVersion: r.ValidatedStateVersion})
		require.Equal(t, v1, res.Current)
		back, err := meterfacts.DecodeSettlementInputCurrentValidationReceipt(res.Body)
		require.NoError(t, err, "the stored body decodes strictly and its digest recomputes")
		require.Equal(t, r, back)
		first[purpose] = res
	}

	v2 := c.next(t, "12")
	for _, purpose := range meterfacts.Purposes {
		res, err := metering.ValidateSettlementInputCurrent(t.Context(), b.pool, c.request(purpose, id("validation", purpose, 2), v1))
		require.NoError(t, err, purpose)
		require.False(t, res.Receipt.Current, purpose)
		require.Equal(t, v2, settlement.Ref{Snapshot: res.Receipt.CurrentSnapshot, StateVersion: res.Receipt.CurrentStateVersion})
		require.Equal(t, v2, res.Current)

		res, err = metering.ValidateSettlementInputCurrent(t.Context(), b.pool, c.request(purpose, id("validation", purpose, 3), v2))
		require.NoError(t, err, purpose)
		require.True(t, res.Receipt.Current, purpose)

		// No TTL: the first operation still answers what was current then.
		again, err := metering.ValidateSettlementInputCurrent(t.Context(), b.pool, c.request(purpose, id("validation", purpose, 1), v1))
		require.NoError(t, err, purpose)
		require.Equal(t, first[purpose].Body, again.Body, "byte-identical receipt for the same operation")
		require.True(t, again.Receipt.Current)
	}
	require.Equal(t, 3*len(meterfacts.Purposes), receipts(t, b))
}

// TestMETVSCInsertOrCompareOperation: the same operation and request
// return the byte-identical receipt, also to concurrent sessions (one row);
// the same operation with another request (purpose, input manifest digest,
// five-tuple) is ErrValidationOperationConflict with nothing written.
func TestMETVSCInsertOrCompareOperation(t *testing.T) {
	t.Parallel()
	b := workerSetup(t)
	c := newSettlementChain(t, b, 410)
	v1 := c.next(t, "10")
	v2 := c.next(t, "11")
	op := id("validation", "race")
	req := c.request(meterfacts.PurposeFinalization, op, v1)

	const sessions = 6
	bodies := make([][]byte, sessions)
	errs := make([]error, sessions)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range sessions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			res, err := metering.ValidateSettlementInputCurrent(context.Background(), b.pool, req)
			bodies[i], errs[i] = res.Body, err
		}()
	}
	close(start)
	wg.Wait()
	for i := range sessions {
		require.NoError(t, errs[i])
		require.Equal(t, bodies[0], bodies[i])
	}
	require.Equal(t, 1, receipts(t, b))

	other := []meteringread.SettlementValidationRequest{
		c.request(meterfacts.PurposeLateSettlementCommand, op, v1),
		c.request(meterfacts.PurposeFinalization, op, v2),
		func() meteringread.SettlementValidationRequest {
			r := req
			r.InputManifestDigest = manifestDigest("other")
			return r
		}(),
	}
	for _, r := range other {
		_, err := metering.ValidateSettlementInputCurrent(t.Context(), b.pool, r)
		require.ErrorIs(t, err, metering.ErrValidationOperationConflict) // ME-1.validation-operation-conflict
	}
	require.Equal(t, 1, receipts(t, b))
	res, err := metering.ValidateSettlementInputCurrent(t.Context(), b.pool, req)
	require.NoError(t, err)
	require.Equal(t, bodies[0], res.Body)
}

// TestMETVSCInvalidRequestsWriteNothing: an unknown purpose (there is no
// generic metering_fact_construction purpose), a missing operation, a bare
// digest or a five-tuple that is not in the dimension's chain is a typed
// error and writes nothing.
func TestMETVSCInvalidRequestsWriteNothing(t *testing.T) {
	t.Parallel()
	b := workerSetup(t)
	c := newSettlementChain(t, b, 420)
	v1 := c.next(t, "10")
	forged := v1
	forged.Snapshot.Digest = quad("forged").Digest
	for _, x := range []struct {
		name string
		req  meteringread.SettlementValidationRequest
		want error
	}{
		{"unknown_purpose", c.request("metering_fact_construction", id("v", 1), v1), metering.ErrValidationRequestInvalid},
		{"empty_purpose", c.request("", id("v", 2), v1), metering.ErrValidationRequestInvalid},
		{"no_operation", c.request(meterfacts.PurposeFinalization, "", v1), metering.ErrValidationRequestInvalid},
		{"bare_manifest_digest", func() meteringread.SettlementValidationRequest {
			r := c.request(meterfacts.PurposeFinalization, id("v", 3), v1)
			r.InputManifestDigest.Algorithm = ""
			return r
		}(), metering.ErrValidationRequestInvalid},
		{"forged_five_tuple", c.request(meterfacts.PurposeFinalization, id("v", 4), forged), metering.ErrSettlementInputUnknown},
		{"future_version", c.request(meterfacts.PurposeFinalization, id("v", 5), settlement.Ref{Snapshot: v1.Snapshot, StateVersion: 2}), metering.ErrSettlementInputUnknown},
		{"other_dimension", func() meteringread.SettlementValidationRequest {
			r := c.request(meterfacts.PurposeFinalization, id("v", 6), v1)
			r.SettlementDimensionID = id("another dimension")
			return r
		}(), metering.ErrSettlementInputUnknown},
	} {
		_, err := metering.ValidateSettlementInputCurrent(t.Context(), b.pool, x.req)
		require.ErrorIs(t, err, x.want, x.name)
	}
	require.Zero(t, receipts(t, b))
}

// TestMETVSCReceiptsImmutable: the least-privileged metering role cannot
// update or delete a validation receipt (no grant), nobody can (ME001), and
// a receipt row must name a real snapshot of its dimension's chain (a
// foreign key; the body check of 00013, ME007, fires first for this one).
func TestMETVSCReceiptsImmutable(t *testing.T) {
	t.Parallel()
	b := workerSetup(t)
	c := newSettlementChain(t, b, 430)
	v1 := c.next(t, "10")
	_, err := metering.ValidateSettlementInputCurrent(t.Context(), b.pool, c.request(meterfacts.PurposeBillingCatchUpFence, id("v", 1), v1))
	require.NoError(t, err)
	for _, x := range []struct {
		sql, state string
		asRole     bool
	}{
		{"UPDATE metering.settlement_validation_receipts SET result_state = 'not_current'", pgerrcode.InsufficientPrivilege, true},
		{"DELETE FROM metering.settlement_validation_receipts", pgerrcode.InsufficientPrivilege, true},
		{"UPDATE metering.settlement_validation_receipts SET receipt_body = '{}'", metering.SQLStateInsertOnly, false},
		{"DELETE FROM metering.settlement_validation_receipts", metering.SQLStateInsertOnly, false},
		{`INSERT INTO metering.settlement_validation_receipts (validation_operation_id, request_digest, purpose, settlement_dimension_id,
		   validated_state_version, validated_snapshot_ref, result_state, current_state_version, receipt_ref, receipt_digest, receipt_body)
		  SELECT gen_random_uuid(), repeat('c', 64), 'finalization', settlement_dimension_id, 1, 'sis-forged', 'current', 1,
		   'sicvr-x', repeat('c', 64), '{}' FROM metering.settlement_input_current`, metering.SQLStateValidationBody, true},
	} {
		err := pgx.BeginFunc(t.Context(), b.pool, func(tx pgx.Tx) error {
			if x.asRole {
				if _, err := tx.Exec(t.Context(), "SET LOCAL ROLE oceanway_metering"); err != nil {
					return err
				}
			}
			_, err := tx.Exec(t.Context(), x.sql)
			return err
		})
		require.Equal(t, x.state, db.SQLState(err), "%s: %v", x.sql, err)
	}
}
