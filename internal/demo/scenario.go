package demo

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/oceanway/core/contracts/digest"
	"github.com/oceanway/core/contracts/envelope"
	contract "github.com/oceanway/core/contracts/execution"
	"github.com/oceanway/core/contracts/reconciliation"
	"github.com/oceanway/core/contracts/strict"
	"github.com/oceanway/core/internal/admission"
	"github.com/oceanway/core/internal/db"
	"github.com/oceanway/core/internal/execution"
	"github.com/oceanway/core/internal/gateway"
	"github.com/oceanway/core/internal/gateway/simprovider"
	"github.com/oceanway/core/internal/ownerread/gatewayread"
	"github.com/oceanway/core/internal/ownerread/ownerhttp"
)

// Scenario drives one run through every owner on its own database:
// admission (core) → RunExecutionToken@1 → execution state → attempts →
// Gateway dispatch (bound or rejected before binding) → simulated provider
// evidence → eligibility (dispatched or not_dispatched) → attempt-set
// closure. The mix is deterministic in the run number i:
//
//	i % 10 == 0      a run with no attempt (closure with attemptCount 0)
//	i % 10 == 1      an attempt rejected before binding, rerouted to a new attempt
//	i % 10 == 2      two steps, one attempt each
//	i % 10 == 3      three attempts on one step, each rejected or bound by the seed
//	otherwise        one attempt, rejected (15 %) or bound by the seed
//
// Bound attempts report their evidence through the simulated provider
// (text, media, tools; prompt, late, missing, corrected, conflicting and
// unavailable evidence). Usage the provider could not vouch for
// (conflicting, unavailable) puts its reservation in a Finalization
// reconciliation case; ReportFix later reports the provider's owner-side
// fix.
type Scenario struct {
	// Platform is how the owners are called (in process by default; over
	// the platform API with demo --via api).
	Platform Platform
	Provider *simprovider.Provider
	// Rejecter rejects every attempt before binding (the forced reroutes).
	Rejecter *simprovider.Provider
	tenant   contract.Tenant
	account  string
	mix      ScenarioMix
	// later holds the provider's post-finality corrections until the
	// reservation has finalized (ApplyCorrections).
	laterMu sync.Mutex
	later   []correction
	// fixes holds, by reservation, the provider's owner-side fixes not
	// reported yet; fixed the successor availabilities already reported.
	fixMu sync.Mutex
	fixes map[string][]correction
	fixed map[string][]reconciliation.EvidenceReference
	// probe, when set (demo.Run sets it when the metering worker and the
	// catch-up run), times a disputed attempt's contradiction and fix
	// against the owners' progress; without it a disputed attempt is a
	// prompt one. disputes are the fixes still to report, disputeErr the
	// first that failed.
	probe      OwnerProbe
	disputes   sync.WaitGroup
	disputeMu  sync.Mutex
	disputeErr error
	// disputedRuns are the runs whose closure waits for a provider's
	// dispute (the latency figures are also given without them).
	disputedRuns []string
}

// OwnerProbe is the demo's read-only view of the owners' progress that a
// disputed attempt (simprovider's Dispute, issue 32) is timed by: the
// provider contradicts its report once Metering applied it (so the next
// eligibility Work blocks on the Gateway's conflict fact while the applied
// settlement input stands) and sends its corrected report once Billing's
// catch-up of the finalized dimension blocked on Metering's conflict fact.
type OwnerProbe interface {
	// MeteringApplied: the attempt has a Current settlement input.
	MeteringApplied(ctx context.Context, attemptID string) (bool, error)
	// MeteringOwnerBlocked: an eligibility Work of the attempt recorded
	// Blocked@1 on an owner's conflict fact.
	MeteringOwnerBlocked(ctx context.Context, attemptID string) (bool, error)
	// CatchUpOwnerBlocked: a catch-up fence of one of the dimensions
	// recorded BillingSettlementCatchUpWorkAttemptBlocked@1.
	CatchUpOwnerBlocked(ctx context.Context, settlementDimensionIDs []string) (bool, error)
	// RunInReconciliation: the run's finalization entered a reconciliation
	// case (Billing saw the conflicting input before it finalized), so no
	// catch-up fence will block: the fix is what closes the case.
	RunInReconciliation(ctx context.Context, runID string) (bool, error)
}

// Timeouts of a disputed attempt's waits (each gives up and goes on: the
// invariants then show what was not reached).
var (
	disputeApplyTimeout   = 4 * time.Minute
	disputeBlockTimeout   = 2 * time.Minute
	disputeCatchUpTimeout = 4 * time.Minute
	// A dispute's waits poll from disputePoll, doubling up to
	// disputePollMax: at saturation Metering lags by seconds, and a fixed
	// 50 ms poll was 13 metering statements per run of the loop benchmark
	// (issue 35), all of them the driver's, none the loop's.
	disputePoll    = 50 * time.Millisecond
	disputePollMax = 500 * time.Millisecond
)

// correction is one post-finality report of a bound attempt.
type correction struct {
	reservationID, attemptID string
	obs                      []gateway.Observation
}

// ScenarioMix counts what the scenario did.
type ScenarioMix struct {
	Runs, EmptyRuns, MultiAttemptRuns                              atomic.Int64
	Attempts, Bound, RejectedBeforeBinding, Rerouted, Observations atomic.Int64
	// Retries counts owner calls replayed after a transient database error.
	Retries atomic.Int64
	// Post-finality corrections reported after the reservation finalized,
	// down and up, and those not sent because the reservation never
	// finalized (a case the demo could not close).
	CorrectionsDown, CorrectionsUp, CorrectionsNotFinalized atomic.Int64
	// Owner-side fixes: attempts whose conflicting or unavailable usage the
	// provider settled once their reservation was in a case, and the
	// successor availabilities it reported.
	FixedAttempts, FixObservations atomic.Int64
	// Owner conflicts the provider later fixed (disputed, issue 32): the
	// contradictions reported, those whose Metering Work was seen blocked
	// on the Gateway's conflict fact, those whose catch-up fence was seen
	// blocked on Metering's before the fix, and the fixes reported.
	Disputed, DisputesMeteringBlocked, DisputesCatchUpBlocked, DisputeFixes atomic.Int64
}

// Mix is a plain copy of the counters.
type Mix struct {
	Runs                  int64 `json:"runs"`
	EmptyRuns             int64 `json:"emptyRuns"`
	MultiAttemptRuns      int64 `json:"multiAttemptRuns"`
	Attempts              int64 `json:"attempts"`
	Bound                 int64 `json:"bound"`
	RejectedBeforeBinding int64 `json:"rejectedBeforeBinding"`
	Rerouted              int64 `json:"rerouted"`
	Observations          int64 `json:"observations"`
	Retries               int64 `json:"retries"`
	// CorrectionsDown/Up: usage corrections the provider reported after
	// finality; CorrectionsNotFinalized were never sent (no finalization).
	CorrectionsDown         int64 `json:"postFinalityCorrectionsDown"`
	CorrectionsUp           int64 `json:"postFinalityCorrectionsUp"`
	CorrectionsNotFinalized int64 `json:"postFinalityCorrectionsNotFinalized"`
	// FixedAttempts/FixObservations: the provider's owner-side fixes of
	// usage it could not vouch for (successor availabilities).
	FixedAttempts   int64 `json:"ownerFixedAttempts"`
	FixObservations int64 `json:"ownerFixObservations"`
	// Disputed..DisputeFixes: owner conflicts the provider later fixed.
	Disputed                int64 `json:"ownerConflictsDisputed"`
	DisputesMeteringBlocked int64 `json:"ownerConflictsMeteringBlocked"`
	DisputesCatchUpBlocked  int64 `json:"ownerConflictsCatchUpBlocked"`
	DisputeFixes            int64 `json:"ownerConflictsFixed"`
}

// ExecutionOwnerReads are the other owners' reads the Execution owner calls:
// Core's readRunAdmissionManifest@1 (opening a run) and the Gateway's
// readDispatchSlot@1 (an attempt not dispatched).
type ExecutionOwnerReads struct {
	Manifest execution.ManifestReads
	Gateway  execution.GatewayReads
}

// NewScenario wires the owners of one demo (one tenant and account), the
// Execution owner reading Core and the Gateway in process.
func NewScenario(core, exec, gw *pgxpool.Pool, seed int64) *Scenario {
	return NewScenarioWith(core, exec, gw, seed, ExecutionOwnerReads{Manifest: admission.Reads{DB: core}, Gateway: gateway.Reads{DB: gw}})
}

// NewScenarioWith is NewScenario with the Execution owner's reads given
// (over HTTP when the owners run apart).
func NewScenarioWith(core, exec, gw *pgxpool.Pool, seed int64, reads ExecutionOwnerReads) *Scenario {
	exe := execution.New(exec, reads.Manifest)
	exe.SetGatewayReads(reads.Gateway)
	return &Scenario{
		Platform: &InProcess{Core: core, Admission: admission.New(core), Execution: exe, Gateway: gateway.New(gw)},
		Provider: simprovider.New(simprovider.Config{Seed: seed, RejectPercent: 15, Weights: simprovider.RealisticWeights}),
		Rejecter: simprovider.New(simprovider.Config{Seed: seed, ForceReject: true}),
		tenant:   contract.Tenant{Kind: "organization", TenantID: uuid.NewString(), WorkspaceID: uuid.NewString()},
		account:  uuid.NewString(),
		fixes:    map[string][]correction{},
		fixed:    map[string][]reconciliation.EvidenceReference{},
	}
}

// Mix returns what the scenario did so far.
func (s *Scenario) Mix() Mix {
	m := &s.mix
	return Mix{Runs: m.Runs.Load(), EmptyRuns: m.EmptyRuns.Load(), MultiAttemptRuns: m.MultiAttemptRuns.Load(),
		Attempts: m.Attempts.Load(), Bound: m.Bound.Load(), RejectedBeforeBinding: m.RejectedBeforeBinding.Load(),
		Rerouted: m.Rerouted.Load(), Observations: m.Observations.Load(), Retries: m.Retries.Load(),
		CorrectionsDown: m.CorrectionsDown.Load(), CorrectionsUp: m.CorrectionsUp.Load(), CorrectionsNotFinalized: m.CorrectionsNotFinalized.Load(),
		FixedAttempts: m.FixedAttempts.Load(), FixObservations: m.FixObservations.Load(),
		Disputed: m.Disputed.Load(), DisputesMeteringBlocked: m.DisputesMeteringBlocked.Load(),
		DisputesCatchUpBlocked: m.DisputesCatchUpBlocked.Load(), DisputeFixes: m.DisputeFixes.Load()}
}

// SetProbe makes disputed attempts dispute and fix (see OwnerProbe).
func (s *Scenario) SetProbe(p OwnerProbe) { s.probe = p }

// AwaitDisputes waits until every disputed attempt's fix was reported (or
// ctx ends) and returns the first that failed.
func (s *Scenario) AwaitDisputes(ctx context.Context) error {
	done := make(chan struct{})
	go func() { s.disputes.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		return ctx.Err()
	}
	s.disputeMu.Lock()
	defer s.disputeMu.Unlock()
	return s.disputeErr
}

// DisputedRuns are the runs whose closure waited for a provider's
// dispute: their admission → finalization time is the dispute's protocol
// (the contradiction, Metering's block, the fix), not the loop's.
// The slice is never nil (an empty list binds as an empty array, not NULL).
func (s *Scenario) DisputedRuns() []string {
	s.disputeMu.Lock()
	defer s.disputeMu.Unlock()
	return append([]string{}, s.disputedRuns...)
}

// disputeJob is one disputed attempt of a run (issue 32): the provider's
// contradiction of its first usage report, its later fix, and the
// attempt's settlement dimensions.
type disputeJob struct {
	attemptID          string
	contradiction, fix []gateway.Observation
	dims               []string
}

// disputeRun runs a run's disputed attempts (issue 32) in the background,
// so the admission goes on: once Metering applied an attempt's settlement
// inputs, the provider contradicts its first usage report (the Gateway
// stores its GatewayEvidenceConflictFact@1; the next eligibility Work
// blocks on it and the lane is blocked_on_owner_conflict); then the run
// closes and finalizes on the applied inputs, and Billing's catch-up of the
// finalized dimensions asks Metering, which answers with its
// SettlementInputConflictFact@1 (the fence blocked_on_owner_conflict). Once
// a fence is seen blocked the provider sends its corrected report: the
// Metering Work applies it and the catch-up takes it to caught_up. Each
// wait gives up after its timeout and goes on (the invariants then show
// what was not reached); AwaitDisputes waits for all of it.
func (s *Scenario) disputeRun(ctx context.Context, runID string, jobs []disputeJob) {
	s.disputeMu.Lock()
	s.disputedRuns = append(s.disputedRuns, runID)
	s.disputeMu.Unlock()
	s.disputes.Add(1)
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), disputeApplyTimeout+disputeBlockTimeout+disputeCatchUpTimeout+time.Minute)
	go func() {
		defer s.disputes.Done()
		defer cancel()
		if err := s.disputeRunErr(ctx, runID, jobs); err != nil {
			s.disputeMu.Lock()
			if s.disputeErr == nil {
				s.disputeErr = err
			}
			s.disputeMu.Unlock()
		}
	}()
}

func (s *Scenario) disputeRunErr(ctx context.Context, runID string, jobs []disputeJob) error {
	for _, j := range jobs {
		if !s.waitFor(ctx, disputeApplyTimeout, func() (bool, error) { return s.probe.MeteringApplied(ctx, j.attemptID) }) {
			continue // never applied in time: no dispute (a prompt attempt)
		}
		if _, err := s.observe(ctx, j.attemptID, j.contradiction); err != nil {
			return fmt.Errorf("dispute of %s: %w", j.attemptID, err)
		}
		s.mix.Disputed.Add(1)
		if s.waitFor(ctx, disputeBlockTimeout, func() (bool, error) { return s.probe.MeteringOwnerBlocked(ctx, j.attemptID) }) {
			s.mix.DisputesMeteringBlocked.Add(1)
		}
	}
	if _, err := retrying(ctx, s, func() (struct{}, error) { return struct{}{}, s.Platform.CloseRun(ctx, runID) }); err != nil {
		return fmt.Errorf("close run %s: %w", runID, err)
	}
	for _, j := range jobs {
		// The fix waits until the catch-up blocked on Metering's conflict
		// fact, or until the run's finalization entered a case instead:
		// waiting out the timeout there held the loop's quiescence for
		// minutes (issue 35: the loop benchmark's stalled windows).
		var blocked bool
		s.waitFor(ctx, disputeCatchUpTimeout, func() (bool, error) {
			var err error
			if blocked, err = s.probe.CatchUpOwnerBlocked(ctx, j.dims); err != nil || blocked {
				return blocked, err
			}
			return s.probe.RunInReconciliation(ctx, runID)
		})
		if blocked {
			s.mix.DisputesCatchUpBlocked.Add(1)
		}
		if _, err := s.observe(ctx, j.attemptID, j.fix); err != nil {
			return fmt.Errorf("dispute fix of %s: %w", j.attemptID, err)
		}
		s.mix.DisputeFixes.Add(1)
	}
	return nil
}

// waitFor polls cond until it holds (true), timeout passes or ctx ends
// (false), backing off from disputePoll to disputePollMax. A failed poll
// (a database restart under chaos) is a "not yet".
func (s *Scenario) waitFor(ctx context.Context, timeout time.Duration, cond func() (bool, error)) bool {
	deadline := time.Now().Add(timeout)
	for pause := disputePoll; ; pause = min(2*pause, disputePollMax) {
		if ok, err := cond(); err == nil && ok {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		select {
		case <-ctx.Done():
			return false
		case <-time.After(pause):
		}
	}
}

// ReservationFloor is the smallest reservation a run is admitted with, in
// credits: the most one of the scenario's runs can settle at finality
// (three attempts on one step, each at most 86 credits: a media attempt's
// 8 images recounted up to 13 at 2 credits, and 120 video seconds at 0.5).
// A target above the reservation enters a reconciliation case that no
// re-evaluation can close (the resolution's only action), so the scenario
// reserves each run's worst case, as a platform would; every case the demo
// opens is then one the provider's fix closes.
const ReservationFloor = 260

// outputContractOf is the output contract of a workload: the Contracts
// charge dimension registry freezes, per output contract, the dimensions an
// attempt must settle (issue 32 part 4), so each workload of the simulated
// provider has its own (text: input and output tokens; media: images and
// video seconds; tools: calls and input tokens).
func outputContractOf(workload string) strict.Quadruple {
	ref := "output-contract/" + workload + "@1"
	d := sha256.Sum256([]byte(ref))
	return strict.Quadruple{Ref: ref, SchemaVersion: "1", DigestAlgorithmVersion: digest.JCSSHA256V1, Digest: hex.EncodeToString(d[:])}
}

// Run is the AdmitFunc of run i.
func (s *Scenario) Run(ctx context.Context, i int) error {
	// One operation id for every try: a replayed admission is the same one.
	req := admission.Request{
		AdmissionOperationID: uuid.NewString(), TenantKind: s.tenant.Kind, TenantID: s.tenant.TenantID,
		WorkspaceID: s.tenant.WorkspaceID, BillingAccountID: s.account, ReservedCredits: int64(ReservationFloor + i%900),
	}
	res, err := retrying(ctx, s, func() (Admitted, error) { return s.Platform.Admit(ctx, req) })
	if err != nil {
		return fmt.Errorf("admit: %w", err)
	}
	if _, err := retrying(ctx, s, func() (struct{}, error) { return struct{}{}, s.Platform.OpenRun(ctx, res.RunID) }); err != nil {
		return fmt.Errorf("open run %s: %w", res.RunID, err)
	}
	s.mix.Runs.Add(1)
	step := uuid.NewString()
	var disputes []disputeJob
	switch i % 10 {
	case 0:
		s.mix.EmptyRuns.Add(1)
	case 1:
		s.mix.MultiAttemptRuns.Add(1)
		bound, err := s.attempt(ctx, res.BillingReservationID, res.RunID, step, "gw-sim-eu", s.Rejecter, &disputes)
		if err != nil {
			return err
		}
		if !bound {
			s.mix.Rerouted.Add(1)
		}
		if _, err := s.attempt(ctx, res.BillingReservationID, res.RunID, step, "gw-sim-us", s.Provider, &disputes); err != nil {
			return err
		}
	case 2:
		s.mix.MultiAttemptRuns.Add(1)
		for _, st := range []string{step, uuid.NewString()} {
			if _, err := s.attempt(ctx, res.BillingReservationID, res.RunID, st, "gw-sim-eu", s.Provider, &disputes); err != nil {
				return err
			}
		}
	case 3:
		s.mix.MultiAttemptRuns.Add(1)
		for _, gw := range []string{"gw-sim-eu", "gw-sim-us", "gw-sim-ap"} {
			if _, err := s.attempt(ctx, res.BillingReservationID, res.RunID, step, gw, s.Provider, &disputes); err != nil {
				return err
			}
		}
	default:
		if _, err := s.attempt(ctx, res.BillingReservationID, res.RunID, step, "gw-sim-eu", s.Provider, &disputes); err != nil {
			return err
		}
	}
	if len(disputes) > 0 {
		s.disputeRun(ctx, res.RunID, disputes) // closes the run in the background
		return nil
	}
	_, err = retrying(ctx, s, func() (struct{}, error) { return struct{}{}, s.Platform.CloseRun(ctx, res.RunID) })
	if err != nil {
		return fmt.Errorf("close run %s: %w", res.RunID, err)
	}
	return nil
}

// retrying runs one owner call and replays it after a transient database
// error (a restart, a dropped connection), an owner read that got no
// answer (the owner's process restarting) or an API answer to replay
// (ErrRetry), pausing 50 ms doubling to 2 s, until ctx ends. Every call is
// idempotent on replay (see Platform), so a replay after a commit whose
// answer was lost returns the original result.
func retrying[T any](ctx context.Context, s *Scenario, call func() (T, error)) (T, error) {
	pause := retryPause
	for {
		v, err := call()
		// A database restart, or an owner process (Core, Gateway) the
		// Execution owner reads being down: both pass.
		if !db.Transient(err) && !errors.Is(err, ownerhttp.ErrUnavailable) && !errors.Is(err, ErrRetry) {
			return v, err
		}
		s.mix.Retries.Add(1)
		select {
		case <-ctx.Done():
			return v, fmt.Errorf("%w (last transient error: %w)", ctx.Err(), err)
		case <-time.After(pause):
		}
		pause = min(2*pause, 2*time.Second)
	}
}

// attempt creates one attempt, dispatches it through the Gateway with p's
// decision, reports the provider's evidence when bound, and finalizes its
// eligibility. It reports whether the slot was bound.
func (s *Scenario) attempt(ctx context.Context, reservationID, runID, step, gw string, p *simprovider.Provider, disputes *[]disputeJob) (bool, error) {
	attemptID := uuid.NewString()
	areq := execution.AttemptRequest{
		RunID: runID, RunStepID: step, ExecutionAttemptID: attemptID, ModelDeploymentID: "model-deploy/sim",
		GatewayDeploymentID: gw, RoutingPolicyRevision: 1, OutputContract: outputContractOf(p.Workload(attemptID)),
	}
	a, err := retrying(ctx, s, func() (Attempt, error) { return s.Platform.CreateAttempt(ctx, areq) })
	if err != nil {
		return false, err
	}
	s.mix.Attempts.Add(1)
	dreq := gateway.DispatchRequest{Tenant: s.tenant, ManifestBody: a.Body, Decision: p.Route(a.Manifest)}
	reply, err := retrying(ctx, s, func() (gateway.Reply, error) { return s.Platform.Dispatch(ctx, dreq) })
	if err != nil {
		return false, err
	}
	if reply.State == gatewayread.SlotTerminalRejected {
		s.mix.RejectedBeforeBinding.Add(1)
		_, err := retrying(ctx, s, func() (struct{}, error) {
			return struct{}{}, s.Platform.FinalizeEligibility(ctx, a.Manifest.ExecutionAttemptID, contract.DispositionNotDispatched)
		})
		return false, err
	}
	s.mix.Bound.Add(1)
	obs, err := p.Execute(ctx, &contract.AttemptRouteBinding{Binding: reply.Binding,
		SlotKey: contract.SlotKey{ExecutionAttemptID: a.Manifest.ExecutionAttemptID, GatewayDeploymentID: gw, AttemptManifest: a.Manifest.Manifest}})
	if err != nil {
		return true, err
	}
	if _, err := s.observe(ctx, a.Manifest.ExecutionAttemptID, obs); err != nil {
		return true, err
	}
	if later := p.AfterFinality(a.Manifest.ExecutionAttemptID); len(later) > 0 {
		s.laterMu.Lock()
		s.later = append(s.later, correction{reservationID: reservationID, attemptID: a.Manifest.ExecutionAttemptID, obs: later})
		s.laterMu.Unlock()
	}
	if fix := p.Reconciled(a.Manifest.ExecutionAttemptID); len(fix) > 0 {
		s.fixMu.Lock()
		s.fixes[reservationID] = append(s.fixes[reservationID], correction{reservationID: reservationID, attemptID: a.Manifest.ExecutionAttemptID, obs: fix})
		s.fixMu.Unlock()
	}
	_, err = retrying(ctx, s, func() (struct{}, error) {
		return struct{}{}, s.Platform.FinalizeEligibility(ctx, a.Manifest.ExecutionAttemptID, contract.DispositionDispatched)
	})
	if err != nil {
		return true, err
	}
	if d := p.Dispute(a.Manifest.ExecutionAttemptID); len(d) > 0 && s.probe != nil {
		id := a.Manifest.ExecutionAttemptID
		job := disputeJob{attemptID: id, contradiction: d, fix: p.DisputeFix(id)}
		for _, o := range p.Dimensions(id) {
			job.dims = append(job.dims, envelope.SettlementDimensionID(reservationID, runID, step, id, o.DimensionKey))
		}
		*disputes = append(*disputes, job)
	}
	return true, nil
}

// observe reports the provider's observations of a bound attempt to the
// Gateway, in order, and returns the availability snapshot each one left
// current.
func (s *Scenario) observe(ctx context.Context, attemptID string, obs []gateway.Observation) ([]strict.Quadruple, error) {
	current := make([]strict.Quadruple, 0, len(obs))
	for _, o := range obs {
		key := uuid.NewString() // this report's own key, the same on replay
		snap, err := retrying(ctx, s, func() (strict.Quadruple, error) { return s.Platform.Observe(ctx, key, attemptID, o) })
		if err != nil {
			return nil, err
		}
		current = append(current, snap)
		s.mix.Observations.Add(1)
	}
	return current, nil
}

// EvidenceAvailabilitySnapshot is the evidence kind of a Gateway
// availability snapshot an operator's request refers to.
const EvidenceAvailabilitySnapshot = "gateway_evidence_availability_snapshot"

// ReportFix reports, once, the provider's owner-side fix of every usage of
// the reservation it could not vouch for (simprovider's Reconciled: a
// successor availability of the same attempt and evidence dimension,
// through the Gateway as every observation), and returns the references of
// those successor availabilities, the ones reported by an earlier call
// included: the evidence an operator's resolution request names. Metering
// forms a settleable settlement input from each; Billing holds it while
// the reservation's fence is in its case. Nil when the provider has nothing
// to fix for the reservation.
func (s *Scenario) ReportFix(ctx context.Context, reservationID string) ([]reconciliation.EvidenceReference, error) {
	s.fixMu.Lock()
	pending := s.fixes[reservationID]
	s.fixMu.Unlock()
	for len(pending) > 0 {
		c := pending[0]
		current, err := s.observe(ctx, c.attemptID, c.obs)
		if err != nil {
			return nil, fmt.Errorf("owner-side fix of %s: %w", c.attemptID, err)
		}
		s.mix.FixedAttempts.Add(1)
		s.mix.FixObservations.Add(int64(len(c.obs)))
		s.fixMu.Lock()
		for _, q := range current {
			s.fixed[reservationID] = append(s.fixed[reservationID], reconciliation.EvidenceReference{EvidenceKind: EvidenceAvailabilitySnapshot, Object: q})
		}
		s.fixes[reservationID] = s.fixes[reservationID][1:]
		pending = s.fixes[reservationID]
		s.fixMu.Unlock()
	}
	s.fixMu.Lock()
	defer s.fixMu.Unlock()
	return slices.Clone(s.fixed[reservationID]), nil
}

// ApplyCorrections reports the provider's post-finality corrections of
// every reservation that has finalized (settled or released): each becomes a
// new settlement input after finality, which the settlement catch-up turns
// into a transition (down: refund; up: a blocked late exposure). Corrections
// of reservations that never finalized (a case the demo could not close)
// are not sent and counted. Call it once the finalizations quiesced and the
// cases closed.
func (s *Scenario) ApplyCorrections(ctx context.Context) error {
	s.laterMu.Lock()
	pending := s.later
	s.later = nil
	s.laterMu.Unlock()
	for _, c := range pending {
		state, err := retrying(ctx, s, func() (string, error) { return s.Platform.ReservationState(ctx, c.reservationID) })
		if err != nil {
			return err
		}
		if state != "settled" && state != "released" {
			s.mix.CorrectionsNotFinalized.Add(1)
			continue
		}
		if _, err := s.observe(ctx, c.attemptID, c.obs); err != nil {
			return fmt.Errorf("post-finality correction of %s: %w", c.attemptID, err)
		}
		if s.Provider.Scenario(c.attemptID) == simprovider.ScenarioCorrectedUp {
			s.mix.CorrectionsUp.Add(1)
		} else {
			s.mix.CorrectionsDown.Add(1)
		}
	}
	return nil
}
