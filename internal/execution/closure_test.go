package execution_test

import (
	"context"
	"errors"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/contracts/envelope"
	contract "github.com/oceanway/core/contracts/execution"
	"github.com/oceanway/core/contracts/strict"
	"github.com/oceanway/core/internal/execution"
	"github.com/oceanway/core/internal/ownerread"
	"github.com/oceanway/core/internal/ownerread/executionread"
	"github.com/oceanway/core/internal/ownerread/gatewayread"
)

// fakeGateway answers readDispatchSlot@1 with a fixed slot state.
type fakeGateway struct {
	mu     sync.Mutex
	answer ownerread.Answer
	state  string
	err    error
	calls  []gatewayread.DispatchSlotRead
}

func (f *fakeGateway) ReadDispatchSlot(_ context.Context, req gatewayread.DispatchSlotRead) (gatewayread.SlotResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, req)
	if f.err != nil {
		return gatewayread.SlotResult{}, f.err
	}
	if f.answer != ownerread.Found {
		return gatewayread.SlotResult{Answer: f.answer}, nil
	}
	slot := gatewayread.DispatchSlot{State: f.state}
	if f.state == gatewayread.SlotTerminalRejected {
		// A sealed rejection fact of the requested slot, as the Gateway answers it.
		rf := &contract.GatewayPreBindingRejectionFact{Fact: strict.Quadruple{Ref: "gpr-" + req.ExecutionAttemptID},
			SlotKey:    contract.SlotKey{ExecutionAttemptID: req.ExecutionAttemptID, GatewayDeploymentID: req.GatewayDeploymentID, AttemptManifest: req.AttemptManifest},
			ReasonCode: "no_capacity", RejectedAt: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
		body, err := contract.Seal(rf)
		if err != nil {
			return gatewayread.SlotResult{}, err
		}
		slot.Rejection, slot.RejectionReasonCode, slot.RejectionBody = rf.Fact, rf.ReasonCode, body
	}
	return ownerread.FoundWith(slot, nil), nil
}

func (e *env) count(t *testing.T, table string) int {
	t.Helper()
	var n int
	require.NoError(t, e.exec.QueryRow(t.Context(), "SELECT count(*) FROM "+table).Scan(&n))
	return n
}

var domainTables = []string{"execution.attempt_not_dispatched_facts", "execution.eligibility_facts",
	"execution.attempt_set_manifests", "execution.run_finalizations", "outbox.outbox_events", "outbox.outbox_deliveries"}

func (e *env) counts(t *testing.T) map[string]int {
	out := map[string]int{}
	for _, tbl := range domainTables {
		out[tbl] = e.count(t, tbl)
	}
	var closed int
	require.NoError(t, e.exec.QueryRow(t.Context(), "SELECT count(*) FROM execution.run_execution_states WHERE state = 'attempts_closed'").Scan(&closed))
	out["closed runs"] = closed
	return out
}

func (e *env) destinations(t *testing.T, eventID string) []string {
	t.Helper()
	rows, err := e.exec.Query(t.Context(), "SELECT destination FROM outbox.outbox_deliveries WHERE event_id = $1 ORDER BY destination", eventID)
	require.NoError(t, err)
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	return out
}

// EX-3: the unique ExecutionEligibilityFact@1 is appended with
// execution.attempt-eligibility.finalized@1 and its metering delivery in one
// transaction; a replay returns the original; another disposition is refused.
func TestEX3EligibilityAppendsFactEventAndMeteringDelivery(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := t.Context()
	st := e.open(t)
	a, err := e.svc.CreateAttempt(ctx, attemptReq(st.RunID, uuid.NewString()))
	require.NoError(t, err)
	el, err := e.svc.FinalizeEligibility(ctx, a.Manifest.ExecutionAttemptID, contract.DispositionDispatched)
	require.NoError(t, err)
	back, err := contract.DecodeExecutionEligibilityFact(el.Body)
	require.NoError(t, err)
	require.Equal(t, el.Fact, back)
	require.Equal(t, a.Manifest.Manifest, el.Fact.AttemptManifest)
	require.Equal(t, st.Manifest, el.Fact.RunAdmissionManifest)
	require.Equal(t, []string{"metering_input_processor"}, e.destinations(t, el.EventID))

	var eventType, aggID string
	var body []byte
	require.NoError(t, e.exec.QueryRow(ctx, "SELECT event_type, aggregate_id, event_envelope FROM outbox.outbox_events WHERE event_id = $1", el.EventID).Scan(&eventType, &aggID, &body))
	require.Equal(t, envelope.ExecutionAttemptEligibilityFinalizedV1, eventType)
	require.Equal(t, a.Manifest.ExecutionAttemptID, aggID)
	ev, err := envelope.DecodeEnvelope(body)
	require.NoError(t, err)
	p, err := envelope.TypedPayload(ev)
	require.NoError(t, err)
	payload := p.(envelope.ExecutionAttemptEligibilityFinalizedV1Payload)
	require.Equal(t, el.Fact.Fact, payload.ExecutionEligibilityFact())
	require.Equal(t, a.Manifest.Manifest, payload.AttemptExecutionManifest())

	again, err := e.svc.FinalizeEligibility(ctx, a.Manifest.ExecutionAttemptID, contract.DispositionDispatched)
	require.NoError(t, err)
	require.True(t, again.Replayed)
	require.Equal(t, el.Body, again.Body)
	_, err = e.svc.FinalizeEligibility(ctx, a.Manifest.ExecutionAttemptID, contract.DispositionNotDispatched)
	require.Error(t, err)
	require.Equal(t, 1, e.count(t, "execution.eligibility_facts"))
	require.Equal(t, 1, e.count(t, "outbox.outbox_events"))
}

// GW-1: not_dispatched only after the Gateway owner read proves the slot
// terminal_rejected; then AttemptNotDispatchedFact@1 precedes the
// eligibility fact that references it. A bound, reserved or unknown slot
// (the provider side effect may have happened) never becomes not_dispatched.
func TestGW1NotDispatchedOnlyWhenGatewayProvesRejection(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := t.Context()
	st := e.open(t)
	a, err := e.svc.CreateAttempt(ctx, attemptReq(st.RunID, uuid.NewString()))
	require.NoError(t, err)
	id := a.Manifest.ExecutionAttemptID

	_, err = e.svc.FinalizeEligibility(ctx, id, contract.DispositionNotDispatched)
	require.ErrorIs(t, err, execution.ErrGatewayReadUnavailable, "not wired")
	gw := &fakeGateway{}
	e.svc.SetGatewayReads(gw)
	for _, c := range []struct {
		answer ownerread.Answer
		state  string
		err    error
		want   error
	}{
		{ownerread.Found, gatewayread.SlotBound, nil, execution.ErrNotProvenRejected},
		{ownerread.Found, gatewayread.SlotReserved, nil, execution.ErrNotProvenRejected},
		{ownerread.NotFound, "", nil, execution.ErrNotProvenRejected},
		{ownerread.Conflicting, "", nil, execution.ErrNotProvenRejected},
		{"", "", errors.New("gateway down"), execution.ErrGatewayReadUnavailable},
	} {
		gw.answer, gw.state, gw.err = c.answer, c.state, c.err
		_, err := e.svc.FinalizeEligibility(ctx, id, contract.DispositionNotDispatched)
		require.ErrorIs(t, err, c.want, "%s %s", c.answer, c.state)
	}
	require.Zero(t, e.count(t, "execution.eligibility_facts"))
	require.Zero(t, e.count(t, "execution.attempt_not_dispatched_facts"))

	gw.answer, gw.state, gw.err = ownerread.Found, gatewayread.SlotTerminalRejected, nil
	el, err := e.svc.FinalizeEligibility(ctx, id, contract.DispositionNotDispatched)
	require.NoError(t, err)
	require.Equal(t, contract.DispositionNotDispatched, el.Fact.Disposition)
	require.NotNil(t, el.NotDispatched)
	require.Equal(t, el.NotDispatched.Fact, el.Fact.NotDispatched)
	require.Equal(t, "gpr-"+id, el.NotDispatched.Rejection.Ref)
	last := gw.calls[len(gw.calls)-1]
	require.Equal(t, gatewayread.DispatchSlotRead{ContractVersion: gatewayread.ReadDispatchSlotV1, Audience: gatewayread.AudienceExecutionEligibility,
		ExecutionAttemptID: id, GatewayDeploymentID: a.Manifest.GatewayDeploymentID, AttemptManifest: a.Manifest.Manifest}, last,
		"the read names the exact slot key")
	require.Equal(t, []string{"metering_input_processor"}, e.destinations(t, el.EventID))
}

func (e *env) attemptWithEligibility(t *testing.T, runID, step string) *contract.AttemptExecutionManifest {
	t.Helper()
	a, err := e.svc.CreateAttempt(t.Context(), attemptReq(runID, step))
	require.NoError(t, err)
	_, err = e.svc.FinalizeEligibility(t.Context(), a.Manifest.ExecutionAttemptID, contract.DispositionDispatched)
	require.NoError(t, err)
	return a.Manifest
}

func precondition(c execution.Closure) executionread.RunFinalizationPreconditionRead {
	return executionread.RunFinalizationPreconditionRead{
		ContractVersion: executionread.ReadRunFinalizationPreconditionV1, Audience: executionread.AudienceBillingFinalization,
		RunID: c.Fact.RunID, BillingReservationID: c.Fact.BillingReservationID, BillingAccountID: c.Fact.BillingAccountID,
		RunAdmissionManifest: c.Fact.RunAdmissionManifest, Finalization: c.Fact.Fact, StateVersion: c.Fact.StateVersion,
		AttemptSet: c.AttemptSet.Manifest, AttemptCount: int64(len(c.Fact.Attempts)),
	}
}

// EX-2: closure writes the sorted attempt set, CASes the run closed, writes
// the finalization fact equal to the set item by item, and appends
// execution.run-finalization.closed@1 with its coordinator delivery; a
// second closure and a later attempt are refused; an empty run closes with
// attemptCount 0.
func TestEX2ClosureWritesSetCASFactAndEvent(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := t.Context()
	st := e.open(t)
	stepA, stepB := uuid.NewString(), uuid.NewString()
	var ids []string
	for _, step := range []string{stepB, stepA, stepA} {
		ids = append(ids, e.attemptWithEligibility(t, st.RunID, step).ExecutionAttemptID)
	}
	c, err := e.svc.CloseRun(ctx, st.RunID)
	require.NoError(t, err)
	require.Len(t, c.AttemptSet.Attempts, 3)
	var listed []string
	for _, a := range c.AttemptSet.Attempts {
		listed = append(listed, a.ExecutionAttemptID)
	}
	require.ElementsMatch(t, ids, listed, "the set lists exactly the attempts created")
	require.True(t, sort.SliceIsSorted(c.AttemptSet.Attempts, func(i, j int) bool {
		a, b := c.AttemptSet.Attempts[i], c.AttemptSet.Attempts[j]
		return a.RunStepID < b.RunStepID || (a.RunStepID == b.RunStepID && a.ExecutionAttemptID < b.ExecutionAttemptID)
	}))
	require.Equal(t, c.AttemptSet.Attempts, c.Fact.Attempts, "the fact equals the set item by item, in order")
	require.EqualValues(t, 2, c.Fact.StateVersion)
	_, err = contract.DecodeRunAttemptSetManifest(c.AttemptSetBody)
	require.NoError(t, err, "the set's digest recomputes")
	_, err = contract.DecodeRunExecutionFinalizationFact(c.FactBody)
	require.NoError(t, err)
	require.Equal(t, []string{"billing_finalization_coordinator"}, e.destinations(t, c.EventID))
	var body []byte
	require.NoError(t, e.exec.QueryRow(ctx, "SELECT event_envelope FROM outbox.outbox_events WHERE event_id = $1", c.EventID).Scan(&body))
	ev, err := envelope.DecodeEnvelope(body)
	require.NoError(t, err)
	p, err := envelope.TypedPayload(ev)
	require.NoError(t, err)
	payload := p.(envelope.ExecutionRunFinalizationClosedV1Payload)
	require.EqualValues(t, 3, payload.AttemptCount)
	require.Equal(t, c.Fact.Fact, payload.RunExecutionFinalization())
	require.Equal(t, c.AttemptSet.Manifest, payload.AttemptSetManifest())
	require.Equal(t, st.Manifest, payload.RunAdmissionManifest())

	_, err = e.svc.CloseRun(ctx, st.RunID)
	require.ErrorIs(t, err, execution.ErrAlreadyClosed)
	_, err = e.svc.CreateAttempt(ctx, attemptReq(st.RunID, stepA))
	require.ErrorIs(t, err, execution.ErrRunClosed)
	require.Equal(t, 1, e.count(t, "execution.run_finalizations"))

	empty := e.open(t)
	c0, err := e.svc.CloseRun(ctx, empty.RunID)
	require.NoError(t, err)
	require.Empty(t, c0.AttemptSet.Attempts)
	require.Contains(t, string(c0.AttemptSetBody), `"attemptCount":0,`)
	require.Contains(t, string(c0.AttemptSetBody), `"attempts":[]`)

	// readRunFinalizationPrecondition: closed | not_closed | run_not_found | conflicting.
	ans, err := execution.ReadRunFinalizationPrecondition(ctx, e.exec, precondition(c))
	require.NoError(t, err)
	require.Equal(t, executionread.PreconditionClosed, ans.Answer)
	require.Equal(t, c.Fact, ans.Fact)
	open := e.open(t)
	req := precondition(c)
	req.RunID = open.RunID
	ans, err = execution.ReadRunFinalizationPrecondition(ctx, e.exec, req)
	require.NoError(t, err)
	require.Equal(t, executionread.PreconditionNotClosed, ans.Answer)
	req.RunID = uuid.NewString()
	ans, err = execution.ReadRunFinalizationPrecondition(ctx, e.exec, req)
	require.NoError(t, err)
	require.Equal(t, executionread.PreconditionRunNotFound, ans.Answer)
	for name, mutate := range map[string]func(r *executionread.RunFinalizationPreconditionRead){
		"other fact digest": func(r *executionread.RunFinalizationPreconditionRead) { r.Finalization.Digest = c0.Fact.Fact.Digest },
		"other count":       func(r *executionread.RunFinalizationPreconditionRead) { r.AttemptCount = 2 },
		"other set":         func(r *executionread.RunFinalizationPreconditionRead) { r.AttemptSet = c0.AttemptSet.Manifest },
		"other reservation": func(r *executionread.RunFinalizationPreconditionRead) { r.BillingReservationID = uuid.NewString() },
	} {
		r := precondition(c)
		mutate(&r)
		ans, err := execution.ReadRunFinalizationPrecondition(ctx, e.exec, r)
		require.NoError(t, err, name)
		require.Equal(t, executionread.PreconditionConflicting, ans.Answer, name)
		back, err := contract.DecodeRunExecutionFinalizationConflictFact(ans.ConflictBody)
		require.NoError(t, err, name)
		require.Equal(t, r.Finalization, back.Requested, name)
	}
	bad := precondition(c)
	bad.Audience = "admin"
	_, err = execution.ReadRunFinalizationPrecondition(ctx, e.exec, bad)
	require.ErrorIs(t, err, ownerread.ErrInvalidRequest)
}

// EX-2: closure requires every attempt's eligibility fact; without one
// nothing is written.
func TestEX2ClosureRequiresEveryEligibility(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := t.Context()
	st := e.open(t)
	e.attemptWithEligibility(t, st.RunID, uuid.NewString())
	_, err := e.svc.CreateAttempt(ctx, attemptReq(st.RunID, uuid.NewString()))
	require.NoError(t, err)
	before := e.counts(t)
	_, err = e.svc.CloseRun(ctx, st.RunID)
	require.ErrorIs(t, err, execution.ErrEligibilityMissing)
	require.Equal(t, before, e.counts(t))

	// The database is the second guard: a closed run without its closure
	// rows is refused at COMMIT (EX004).
	_, err = e.exec.Exec(ctx, "UPDATE execution.run_execution_states SET state = 'attempts_closed', state_version = 2, closed_at = now() WHERE run_id = $1", st.RunID)
	require.ErrorContains(t, err, execution.CodeClosureIncomplete)
}

// EX-2, EX-3: a failure injected after every write of the eligibility and
// closure transactions leaves no domain row and no outbox row.
func TestEX2EX3FailureAfterEveryWriteRollsBack(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := t.Context()
	gw := &fakeGateway{answer: ownerread.Found, state: gatewayread.SlotTerminalRejected}
	e.svc.SetGatewayReads(gw)
	injected := errors.New("injected")
	fail := func(at string) {
		e.svc.SetHooks(execution.Hooks{AfterStep: func(_ context.Context, _ pgx.Tx, step string) error {
			if step == at {
				return injected
			}
			return nil
		}})
	}
	st := e.open(t)
	a, err := e.svc.CreateAttempt(ctx, attemptReq(st.RunID, uuid.NewString()))
	require.NoError(t, err)
	for _, c := range []struct{ disposition, step string }{
		{contract.DispositionNotDispatched, "not_dispatched"},
		{contract.DispositionNotDispatched, "eligibility"},
		{contract.DispositionNotDispatched, "append"},
		{contract.DispositionDispatched, "eligibility"},
		{contract.DispositionDispatched, "append"},
	} {
		before := e.counts(t)
		fail(c.step)
		_, err := e.svc.FinalizeEligibility(ctx, a.Manifest.ExecutionAttemptID, c.disposition)
		require.ErrorIs(t, err, injected, c.step)
		require.Equal(t, before, e.counts(t), "%s after %s", c.disposition, c.step)
	}
	e.svc.SetHooks(execution.Hooks{})
	_, err = e.svc.FinalizeEligibility(ctx, a.Manifest.ExecutionAttemptID, contract.DispositionNotDispatched)
	require.NoError(t, err)
	for _, step := range []string{"attempt_set", "cas", "finalization", "append"} {
		before := e.counts(t)
		fail(step)
		_, err := e.svc.CloseRun(ctx, st.RunID)
		require.ErrorIs(t, err, injected, step)
		require.Equal(t, before, e.counts(t), "closure after %s", step)
	}
	e.svc.SetHooks(execution.Hooks{})
	_, err = e.svc.CloseRun(ctx, st.RunID)
	require.NoError(t, err)
}

// EX-2: closure racing a new attempt — exactly one wins. If the closure
// wins, the attempt is refused and the set lists exactly the attempts
// committed before; if the attempt wins, the closure is refused (the new
// attempt has no eligibility yet) and a later closure includes it. Run with
// -race -count=20.
func TestEX2ClosureRacesNewAttempt(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := t.Context()
	for round := 0; round < 8; round++ {
		st := e.open(t)
		var committed []string
		for i := 0; i < 2; i++ {
			committed = append(committed, e.attemptWithEligibility(t, st.RunID, uuid.NewString()).ExecutionAttemptID)
		}
		start := make(chan struct{})
		var wg sync.WaitGroup
		var closeErr, createErr error
		var closure execution.Closure
		var created execution.Attempt
		wg.Add(2)
		go func() {
			defer wg.Done()
			<-start
			closure, closeErr = e.svc.CloseRun(ctx, st.RunID)
		}()
		go func() {
			defer wg.Done()
			<-start
			created, createErr = e.svc.CreateAttempt(ctx, attemptReq(st.RunID, uuid.NewString()))
		}()
		close(start)
		wg.Wait()
		require.True(t, (closeErr == nil) != (createErr == nil), "exactly one wins: close=%v create=%v", closeErr, createErr)
		if closeErr == nil {
			require.ErrorIs(t, createErr, execution.ErrRunClosed)
		} else {
			require.ErrorIs(t, closeErr, execution.ErrEligibilityMissing)
			_, err := e.svc.FinalizeEligibility(ctx, created.Manifest.ExecutionAttemptID, contract.DispositionDispatched)
			require.NoError(t, err)
			committed = append(committed, created.Manifest.ExecutionAttemptID)
			closure, err = e.svc.CloseRun(ctx, st.RunID)
			require.NoError(t, err)
		}
		_, err := e.svc.CreateAttempt(ctx, attemptReq(st.RunID, uuid.NewString()))
		require.ErrorIs(t, err, execution.ErrRunClosed, "a later create is refused")
		var listed []string
		for _, it := range closure.AttemptSet.Attempts {
			listed = append(listed, it.ExecutionAttemptID)
		}
		require.ElementsMatch(t, committed, listed, "the set lists exactly the attempts committed before closure")
		set, err := contract.DecodeRunAttemptSetManifest(closure.AttemptSetBody)
		require.NoError(t, err, "its digest recomputes")
		d, err := contract.DigestOf(set)
		require.NoError(t, err)
		require.Equal(t, closure.AttemptSet.Manifest.Digest, d.Value)
	}
}
