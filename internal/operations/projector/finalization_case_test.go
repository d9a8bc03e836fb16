package projector_test

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/contracts/envelope"
	"github.com/oceanway/core/internal/inbox"
	"github.com/oceanway/core/internal/operations/cutover"
	"github.com/oceanway/core/internal/operations/operationstest"
	"github.com/oceanway/core/internal/operations/projector"
	"github.com/oceanway/core/internal/outbox/transport"
)

// caseSetup is a projector that builds versions 1 and 2 (two orderings of
// the same events side by side, over the same reserved identities).
func caseSetup(t *testing.T) *bundle {
	t.Helper()
	return setup(t, projector.Config{Versions: []int64{1, 2}, Inbox: inbox.Config{LockTimeout: 5 * time.Second}})
}

func (b *bundle) fence(t *testing.T, n, generations int) *operationstest.CaseFence {
	t.Helper()
	f, err := operationstest.NewCaseFence(t.Context(), b.pool, n, generations)
	require.NoError(t, err)
	return f
}

// deliverTo delivers e to the member of projection version v.
func (b *bundle) deliverTo(t *testing.T, v int64, e *envelope.Envelope) (transport.Result, error) {
	t.Helper()
	return b.p.Consume(t.Context(), operationstest.Delivery(e, operationstest.Member(e.EventType, e.EventSchemaVersion, v)))
}

// play applies events to version v in the given order, each acknowledged.
func (b *bundle) play(t *testing.T, v int64, es ...*envelope.Envelope) {
	t.Helper()
	for _, e := range es {
		_, err := b.deliverTo(t, v, e)
		require.NoError(t, err, "%s %s to v%d", e.EventType, e.EventID, v)
	}
}

// print is version v's content fingerprint (cutover.Fingerprint: receipts
// by event and envelope digest, not by the receipt digest that names the
// version), so two versions built in two orderings compare.
func (b *bundle) print(t *testing.T, v int64) string {
	t.Helper()
	p, err := cutover.Fingerprint(t.Context(), b.pool, projector.ProjectionName, v)
	require.NoError(t, err)
	require.Positive(t, p.Receipts)
	return p.SHA256
}

// caseRow is what the tests read of a finalization case.
type caseRow struct {
	Generation    int64   `db:"reconciliation_generation"`
	CaseRef       string  `db:"reconciliation_case_ref"`
	State         string  `db:"state"`
	RequestEvent  string  `db:"request_event_id"`
	Materialized  string  `db:"materialized_by_event_id"`
	Resolution    *string `db:"resolution_event_id"`
	AppliedRef    *string `db:"resolution_applied_ref"`
	Actor         *string `db:"resolution_actor_workforce_principal_id"`
	IdentityRef   string  `db:"case_identity_ref"`
	PredecessorOf *string `db:"predecessor_reconciliation_case_ref"`
}

func (b *bundle) cases(t *testing.T, v int64, fenceID string) []caseRow {
	t.Helper()
	rows, err := b.pool.Query(t.Context(), `SELECT reconciliation_generation, reconciliation_case_ref, state, request_event_id::text,
		materialized_by_event_id::text, resolution_event_id::text, resolution_applied_ref, resolution_actor_workforce_principal_id,
		case_identity_ref, predecessor_reconciliation_case_ref
		FROM operations.finalization_cases WHERE billing_finalization_fence_id = $1 AND projection_version = $2
		ORDER BY reconciliation_generation`, fenceID, v)
	require.NoError(t, err)
	out, err := pgx.CollectRows(rows, pgx.RowToStructByName[caseRow])
	require.NoError(t, err)
	return out
}

// pending counts a fence's pending case rows of version v by status.
func (b *bundle) pending(t *testing.T, v int64, table, fenceID, status string) int {
	t.Helper()
	n, err := operationstest.QueryOne(t.Context(), b.pool, pgx.RowTo[int64],
		"SELECT count(*) FROM operations."+table+" WHERE billing_finalization_fence_id = @fence AND projection_version = @v AND status = @status",
		pgx.NamedArgs{"fence": fenceID, "v": v, "status": status})
	require.NoError(t, err)
	return int(n)
}

func (b *bundle) effect(t *testing.T, v int64, eventID string) string {
	t.Helper()
	e, err := operationstest.QueryOne(t.Context(), b.pool, pgx.RowTo[string],
		"SELECT projection_effect FROM operations.projected_events WHERE event_id = @id AND projection_version = @v",
		pgx.NamedArgs{"id": eventID, "v": v})
	require.NoError(t, err)
	return e
}

// OP-1, OPS-1 (issue 31 item 3): a verified case-requested event
// materialises its pre-reserved case, open, with its receipt in the same
// transaction; the verified resolution-applied event closes it. Both are
// verified through their event-bound Billing reads with every identity the
// event states.
func TestOP1CaseRequestOpensCaseAndResolutionClosesIt(t *testing.T) {
	t.Parallel()
	b := caseSetup(t)
	f := b.fence(t, 1, 1)

	res := b.ack(t, f.Requested(1))
	require.NotEmpty(t, res.ReceiptBody)
	cs := b.cases(t, 1, f.FenceID)
	require.Len(t, cs, 1)
	require.Equal(t, caseRow{Generation: 1, CaseRef: f.Identity(1).CaseRef, State: projector.CaseOpen, RequestEvent: f.RequestEventID(1),
		Materialized: f.RequestEventID(1), IdentityRef: f.Identity(1).Identity.Ref}, cs[0])
	require.Equal(t, projector.EffectCaseOpened, b.effect(t, 1, f.RequestEventID(1)))
	require.Len(t, b.reads.DecisionRequests, 1)
	dr := b.reads.DecisionRequests[0]
	require.Equal(t, f.RequestEventID(1), dr.EventID)
	require.Equal(t, f.Identity(1).Identity, dr.CaseIdentity)
	require.Equal(t, f.Identity(1).CaseRequestOperationID, dr.CaseRequestOperationID)
	require.EqualValues(t, 1, dr.Generation)
	require.EqualValues(t, 2, dr.TriggeringWorkGeneration)
	require.Zero(t, dr.PredecessorGeneration)
	require.Equal(t, "usage_conflicting", dr.ReasonCode)

	b.ack(t, f.Resolved(1))
	cs = b.cases(t, 1, f.FenceID)
	require.Len(t, cs, 1)
	require.Equal(t, projector.CaseResolved, cs[0].State)
	require.Equal(t, f.ResolutionEventID(1), *cs[0].Resolution)
	require.Equal(t, fmt.Sprintf("finalization-reconciliation-resolution-applied-%d-%d", 1, 1), *cs[0].AppliedRef)
	require.Equal(t, f.Actor, *cs[0].Actor)
	require.Equal(t, projector.EffectCaseResolved, b.effect(t, 1, f.ResolutionEventID(1)))
	require.Len(t, b.reads.ResolutionRequests, 1)
	rr := b.reads.ResolutionRequests[0]
	require.Equal(t, f.ResolutionEventID(1), rr.EventID)
	require.Equal(t, f.Identity(1).Identity, rr.CaseIdentity)
	require.Equal(t, f.Actor, rr.Actor)
	require.EqualValues(t, 1, rr.ResolutionRevision)

	// The next generation's request opens the successor case once its
	// predecessor is closed.
	f2 := b.fence(t, 1, 2)
	b.ack(t, f2.Requested(2))
	cs = b.cases(t, 1, f.FenceID)
	require.Len(t, cs, 2)
	require.Equal(t, projector.CaseOpen, cs[1].State)
	require.Equal(t, f.Identity(1).CaseRef, *cs[1].PredecessorOf)
	require.EqualValues(t, 1, b.reads.DecisionRequests[1].PredecessorGeneration)
}

// OP-1 (ADR-031 "Resolution Applied可能早于同代Case Requested投影"): a verified
// resolution whose request has not arrived waits as a pending resolution
// (acknowledged, no case); the request then materialises the case in its
// terminal state. The projection equals the one the natural order builds.
func TestOP1ResolutionBeforeRequestMaterialisesClosedCase(t *testing.T) {
	t.Parallel()
	b := caseSetup(t)
	f := b.fence(t, 2, 1)

	b.play(t, 1, f.Resolved(1))
	require.Empty(t, b.cases(t, 1, f.FenceID), "no case without its request")
	require.Equal(t, 1, b.pending(t, 1, "pending_finalization_case_resolutions", f.FenceID, "pending"))
	require.Equal(t, projector.EffectCaseResolutionPending, b.effect(t, 1, f.ResolutionEventID(1)))

	b.play(t, 1, f.Requested(1))
	cs := b.cases(t, 1, f.FenceID)
	require.Len(t, cs, 1)
	require.Equal(t, projector.CaseResolved, cs[0].State, "materialised in its terminal state")
	require.Equal(t, f.ResolutionEventID(1), *cs[0].Resolution)
	require.Equal(t, f.RequestEventID(1), cs[0].Materialized)
	require.Equal(t, projector.EffectCaseMaterializedResolved, b.effect(t, 1, f.RequestEventID(1)))
	require.Zero(t, b.pending(t, 1, "pending_finalization_case_resolutions", f.FenceID, "pending"))
	require.Equal(t, 1, b.pending(t, 1, "pending_finalization_case_resolutions", f.FenceID, "consumed"))

	b.play(t, 2, f.Requested(1), f.Resolved(1))
	require.Equal(t, b.print(t, 2), b.print(t, 1), "Resolution → Request ends where Request → Resolution does")
}

// OP-1 (ADR-031 "后继Request必须验证直接前代Identity…保存为Pending Successor"):
// C2 Request → C1 Resolution → C1 Request. The successor request waits as a
// pending successor, the early resolution as a pending resolution; the C1
// request then, in one transaction, materialises C1 closed and C2 open
// (the maximal contiguous pending chain), never two open cases. Same
// projection as the natural order.
func TestOP1SuccessorBeforePredecessorResolutionConsumesChain(t *testing.T) {
	t.Parallel()
	b := caseSetup(t)
	f := b.fence(t, 3, 2)

	b.play(t, 1, f.Requested(2))
	require.Empty(t, b.cases(t, 1, f.FenceID), "a successor waits for its predecessor's close")
	require.Equal(t, 1, b.pending(t, 1, "pending_finalization_case_successors", f.FenceID, "pending"))
	require.Equal(t, projector.EffectCaseSuccessorPending, b.effect(t, 1, f.RequestEventID(2)))

	b.play(t, 1, f.Resolved(1))
	require.Empty(t, b.cases(t, 1, f.FenceID))
	require.Equal(t, 1, b.pending(t, 1, "pending_finalization_case_resolutions", f.FenceID, "pending"))

	b.play(t, 1, f.Requested(1))
	cs := b.cases(t, 1, f.FenceID)
	require.Len(t, cs, 2)
	require.Equal(t, projector.CaseResolved, cs[0].State)
	require.Equal(t, projector.CaseOpen, cs[1].State)
	require.Equal(t, f.RequestEventID(1), cs[1].Materialized, "the C1 request's transaction materialised C2")
	require.Equal(t, f.RequestEventID(2), cs[1].RequestEvent)
	require.Zero(t, b.pending(t, 1, "pending_finalization_case_successors", f.FenceID, "pending"))
	require.Equal(t, 1, b.pending(t, 1, "pending_finalization_case_successors", f.FenceID, "materialized"))
	require.Zero(t, b.pending(t, 1, "pending_finalization_case_resolutions", f.FenceID, "pending"))

	b.play(t, 2, f.Requested(1), f.Resolved(1), f.Requested(2))
	require.Equal(t, b.print(t, 2), b.print(t, 1), "C2 Request → C1 Resolution → C1 Request ends where the natural order does")
}

// OP-1: the chain a predecessor's close consumes is the maximal contiguous
// one: C3 Request, C2 Request, C2 Resolution wait; C1 Request opens C1; C1
// Resolution then closes C1, materialises C2 closed and C3 open in one
// transaction. Every ordering of the five events ends in the same
// projection (version 2 built in the natural order).
func TestOP1ResolutionConsumesMaximalPendingChain(t *testing.T) {
	t.Parallel()
	b := caseSetup(t)
	f := b.fence(t, 4, 3)

	b.play(t, 1, f.Requested(3), f.Requested(2), f.Resolved(2), f.Requested(1))
	cs := b.cases(t, 1, f.FenceID)
	require.Len(t, cs, 1)
	require.Equal(t, projector.CaseOpen, cs[0].State)
	require.Equal(t, 2, b.pending(t, 1, "pending_finalization_case_successors", f.FenceID, "pending"))

	b.play(t, 1, f.Resolved(1))
	cs = b.cases(t, 1, f.FenceID)
	require.Len(t, cs, 3)
	require.Equal(t, []string{projector.CaseResolved, projector.CaseResolved, projector.CaseOpen},
		[]string{cs[0].State, cs[1].State, cs[2].State})
	require.Equal(t, f.ResolutionEventID(1), cs[1].Materialized)
	require.Equal(t, f.ResolutionEventID(1), cs[2].Materialized)
	require.Zero(t, b.pending(t, 1, "pending_finalization_case_successors", f.FenceID, "pending"))
	require.Zero(t, b.pending(t, 1, "pending_finalization_case_resolutions", f.FenceID, "pending"))

	b.play(t, 2, f.Requested(1), f.Resolved(1), f.Requested(2), f.Resolved(2), f.Requested(3))
	require.Equal(t, b.print(t, 2), b.print(t, 1))
}

// OP-1 with -race: for 24 fences whose C1 case is open, C1 Resolution and
// C2 Request are delivered at the same time from two sessions (real
// goroutines). Whichever commits first, the other sees it: every fence
// ends with C1 resolved, C2 open, no pending row left, and never two open
// cases of one fence (the partial unique index would refuse the second).
func TestOP1ConcurrentResolutionAndSuccessorNeverTwoOpenCases(t *testing.T) {
	t.Parallel()
	b := caseSetup(t)
	const fences = 24
	fs := make([]*operationstest.CaseFence, fences)
	for i := range fs {
		fs[i] = b.fence(t, 100+i, 2)
		b.ack(t, fs[i].Requested(1))
	}
	start := make(chan struct{})
	var wg sync.WaitGroup
	errs := make(chan error, 2*fences)
	for _, f := range fs {
		for _, e := range []*envelope.Envelope{f.Resolved(1), f.Requested(2)} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				if _, err := b.p.Consume(t.Context(), operationstest.DeliveryV1(e)); err != nil {
					errs <- fmt.Errorf("%s %s: %w", e.EventType, e.EventID, err)
				}
			}()
		}
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	for _, f := range fs {
		cs := b.cases(t, 1, f.FenceID)
		require.Len(t, cs, 2, "fence %s", f.FenceID)
		require.Equal(t, projector.CaseResolved, cs[0].State)
		require.Equal(t, projector.CaseOpen, cs[1].State)
		require.Zero(t, b.pending(t, 1, "pending_finalization_case_successors", f.FenceID, "pending"))
	}
	twoOpen, err := operationstest.QueryOne(t.Context(), b.pool, pgx.RowTo[int64], `SELECT count(*) FROM (
		SELECT billing_finalization_fence_id FROM operations.finalization_cases WHERE state = 'open'
		GROUP BY billing_finalization_fence_id, projection_name, projection_version HAVING count(*) > 1) x`, nil)
	require.NoError(t, err)
	require.Zero(t, twoOpen)

	// Same events, one at a time in the natural order, on version 2.
	for _, f := range fs {
		b.play(t, 2, f.Requested(1), f.Resolved(1), f.Requested(2))
	}
	require.Equal(t, b.print(t, 2), b.print(t, 1))
}

// OP-1 (ADR-031 "Operations先验证本地Identity"): a case event that disagrees
// with the identity Operations reserved — another identity quadruple,
// account, run or predecessor, or a generation never reserved — is
// non_retryable finalization_case_identity_conflict, asks Billing nothing
// and writes nothing.
// Clauses: OP-1.case-request-identity-mismatch, OP-1.case-resolution-identity-mismatch.
func TestOP1CaseIdentityMismatchIsNonRetryable(t *testing.T) {
	t.Parallel()
	b := caseSetup(t)
	f := b.fence(t, 5, 2)
	b.ack(t, f.Requested(1))
	before := b.state(t)
	other := f.Identity(2).Identity

	for name, e := range map[string]*envelope.Envelope{
		// OP-1.case-request-identity-mismatch
		"request/identity": operationstest.Rebuild(f.Requested(2), func(e *envelope.Envelope) {
			e.Payload["finalizationCaseIdentityReservationDigest"] = f.Identity(1).Identity.Digest
		}),
		"request/account": operationstest.Rebuild(f.Requested(2), func(e *envelope.Envelope) {
			e.Payload["billingAccountId"] = operationstest.ID(5, 99)
		}),
		"request/predecessor": operationstest.Rebuild(f.Requested(2), func(e *envelope.Envelope) {
			pred := e.Payload["predecessorCase"].(map[string]any)
			pred["predecessorFinalizationCaseIdentityReservationDigest"] = other.Digest
		}),
		"request/tenant": operationstest.Rebuild(f.Requested(2), func(e *envelope.Envelope) {
			e.WorkspaceID = operationstest.ID(5, 98)
		}),
		// OP-1.case-resolution-identity-mismatch
		"resolution/identity": operationstest.Rebuild(f.Resolved(1), func(e *envelope.Envelope) {
			e.Payload["finalizationCaseIdentityReservationDigest"] = other.Digest
		}),
		"resolution/run": operationstest.Rebuild(f.Resolved(1), func(e *envelope.Envelope) {
			e.Payload["runId"] = operationstest.ID(5, 97)
		}),
	} {
		_, err := b.deliver(t, e)
		requireCode(t, err, false, projector.CodeCaseIdentityConflict)
		require.ErrorIs(t, err, projector.ErrCaseIdentityConflict, name)
		require.Equal(t, before, b.state(t), "%s: nothing written", name)
	}
	// A generation Operations never reserved.
	_, err := b.deliver(t, f.Resolved(1))
	require.NoError(t, err)
	g3 := operationstest.Rebuild(f.Resolved(1), func(e *envelope.Envelope) {
		e.EventID = operationstest.ID(5, 96)
		e.AggregateID = envelope.FinalizationResolutionAggregateID(f.FenceID, 3)
		e.Payload["reconciliationGeneration"] = int64(3)
	})
	before = b.state(t)
	_, err = b.deliver(t, g3)
	requireCode(t, err, false, projector.CodeCaseIdentityConflict)
	require.ErrorContains(t, err, "no case identity reserved")
	require.Equal(t, before, b.state(t))
	require.Len(t, b.reads.DecisionRequests, 1, "Billing is asked only after the identity matched")
	require.Len(t, b.reads.ResolutionRequests, 1)

	b.ack(t, f.Requested(2)) // the matching request applies
}

// OP-1, CON-2: the event-bound Billing reads decide after the identity:
// unavailable (an error, or not wired) and not_found are retryable with
// nothing written (no case, no pending row, no receipt); conflicting is
// non_retryable; found applies.
func TestOP1CaseBillingReadNotFoundIsRetryable(t *testing.T) {
	t.Parallel()
	b := caseSetup(t)
	f := b.fence(t, 6, 2)
	before := b.state(t)

	unwired, err := projector.New(b.pool, projector.Config{BillingReads: operationstest.Found()})
	require.NoError(t, err)
	for _, e := range []*envelope.Envelope{f.Requested(1), f.Resolved(1), f.Requested(2)} {
		_, err := unwired.Consume(t.Context(), operationstest.DeliveryV1(e))
		requireCode(t, err, true, projector.CodeOwnerReadUnavailable)
	}
	require.Equal(t, before, b.state(t))

	for _, read := range []struct {
		set func(projector.OwnerAnswer, error)
		e   *envelope.Envelope
	}{{b.reads.SetDecision, f.Requested(1)}, {b.reads.SetDecision, f.Requested(2)}, {b.reads.SetResolution, f.Resolved(1)}} {
		read.set("", errors.New("billing owner read: connection refused"))
		_, err := b.deliver(t, read.e)
		requireCode(t, err, true, projector.CodeOwnerReadUnavailable)
		read.set(projector.OwnerNotFound, nil)
		_, err = b.deliver(t, read.e)
		requireCode(t, err, true, projector.CodeOwnerFactNotReadable)
		read.set(projector.OwnerConflicting, nil)
		_, err = b.deliver(t, read.e)
		requireCode(t, err, false, projector.CodeOwnerFactConflicting)
		require.Equal(t, before, b.state(t), "%s: nothing written", read.e.EventType)
		read.set(projector.OwnerFound, nil)
	}
	b.play(t, 1, f.Requested(2), f.Resolved(1), f.Requested(1))
	require.Len(t, b.cases(t, 1, f.FenceID), 2)
}

// OPS-1, CON-1: a redelivered case event returns its first receipt byte
// for byte and changes nothing — also the request that waited as a pending
// successor and the one whose transaction consumed the chain.
func TestOP1CaseRedeliveryReturnsFirstReceipt(t *testing.T) {
	t.Parallel()
	b := caseSetup(t)
	f := b.fence(t, 7, 2)
	first := map[string]transport.Result{}
	for _, e := range []*envelope.Envelope{f.Requested(2), f.Resolved(1), f.Requested(1)} {
		first[e.EventID] = b.ack(t, e)
	}
	after := b.state(t)
	for _, e := range []*envelope.Envelope{f.Requested(1), f.Requested(2), f.Resolved(1)} {
		again := b.ack(t, e)
		require.Equal(t, first[e.EventID].ReceiptBody, again.ReceiptBody, e.EventID)
		require.Equal(t, first[e.EventID].Ack, again.Ack, e.EventID)
	}
	require.Equal(t, after, b.state(t))
	require.Len(t, b.reads.DecisionRequests, 2, "a duplicate asks Billing nothing")
}

// OPS-1 (batch): the three events of C2 Request → C1 Resolution → C1
// Request in one batch transaction, each in its own savepoint, end where
// the single deliveries do.
func TestOP1CaseChainInOneBatch(t *testing.T) {
	t.Parallel()
	b := caseSetup(t)
	f := b.fence(t, 8, 2)
	for _, a := range b.batch(t, f.Requested(2), f.Resolved(1), f.Requested(1)) {
		require.NoError(t, a.Err)
	}
	b.play(t, 2, f.Requested(2), f.Resolved(1), f.Requested(1))
	require.Equal(t, b.print(t, 2), b.print(t, 1))
	cs := b.cases(t, 1, f.FenceID)
	require.Len(t, cs, 2)
	require.Equal(t, projector.CaseOpen, cs[1].State)
}
