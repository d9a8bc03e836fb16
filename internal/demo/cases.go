package demo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/oceanway/core/contracts/digest"
	"github.com/oceanway/core/contracts/reconciliation"
	"github.com/oceanway/core/contracts/strict"
	"github.com/oceanway/core/internal/casegateway"
	"github.com/oceanway/core/internal/db"
	"github.com/oceanway/core/internal/operations/cases"
	"github.com/oceanway/core/internal/ownerread/ownerhttp"
)

var (
	qCasesOpen  = statements.Get("cases_open")
	qCaseCounts = statements.Get("case_counts")
)

// Cases is the Finalization reconciliation case desk the demo closes every
// case with (issue 31 item 8): two simulated operators run the resolution
// command chain through the admin command gateway, each command
// authenticated by an actor assertion of the demo's workforce identity
// provider.
type Cases struct {
	// Gateway is the admin command gateway (Operations' commands, Core's
	// grant exchange, Billing's resolution, each on its own role).
	Gateway casegateway.Gateway
	// Assert mints a fresh actor assertion that principal is acting.
	Assert func(principal string) (string, error)
	// Requester requests and applies; Approver approves (a second
	// principal: the requester cannot approve their own request).
	Requester, Approver string
	// Rounds bounds the desk's rounds (default 5): a round reports the
	// provider's fixes and resolves every open case; a case still open
	// after the last round fails the demo.
	Rounds int
	// FixFromRound is the first round in which the provider reports its
	// owner-side fixes (default 1). From 2 on, the operators' first
	// resolutions re-evaluate unfixed usage, which still conflicts: the
	// next case generation opens (the check that generations converge).
	FixFromRound int
	// Where says where the commands run, when that is worth saying (the
	// demo process beside the owner processes).
	Where string
}

func (c *Cases) rounds() int {
	if c.Rounds <= 0 {
		return 5
	}
	return c.Rounds
}

// openCase is an open case of the active projection.
type openCase struct {
	CaseRef       string
	Generation    int64
	ReservationID string
	Identity      strict.Quadruple
}

// EvidenceCaseIdentity is the evidence kind of a case identity reservation
// (an operator's evidence when the provider reported no fix).
const EvidenceCaseIdentity = "finalization_case_identity"

// deskStats is what the desk did.
type deskStats struct {
	rounds, resolved, fixed int64
}

// closeCases runs the case desk once the loop quiesced: each round the
// simulated provider reports its owner-side fix for every reservation in
// an open case and the loop settles (Metering forms a settleable input,
// which Billing holds while the fence is in its case), then the operators
// resolve every open case and the loop settles again (the coordinator
// re-evaluates with every held input: the reservation finalizes, or the
// next case generation opens). It returns once no case is open, or an
// error after cfg.Cases.Rounds rounds.
func closeCases(ctx context.Context, core db.Executor, settle func() error, cfg Config) (deskStats, error) {
	var st deskStats
	for round := 1; ; round++ {
		open, err := readOpenCases(ctx, core)
		if err != nil {
			return st, err
		}
		if len(open) == 0 {
			return st, nil
		}
		if round > cfg.Cases.rounds() {
			refs := make([]string, 0, len(open))
			for _, c := range open {
				refs = append(refs, fmt.Sprintf("%s (generation %d)", c.CaseRef, c.Generation))
			}
			return st, fmt.Errorf("cases did not converge: after %d rounds %d cases still open [%s]",
				cfg.Cases.rounds(), len(open), strings.Join(refs, ", "))
		}
		st.rounds++
		// The owner-side fix first: the successor availabilities become
		// settleable settlement inputs, held while the fence is in its case.
		evidence := map[string][]reconciliation.EvidenceReference{}
		if cfg.Scenario != nil && round >= cfg.Cases.FixFromRound {
			for _, c := range open {
				if evidence[c.ReservationID], err = cfg.Scenario.ReportFix(ctx, c.ReservationID); err != nil {
					return st, err
				}
			}
		}
		if err := settle(); err != nil {
			return st, err
		}
		for _, c := range open {
			ev := evidence[c.ReservationID]
			if len(ev) == 0 {
				ev = []reconciliation.EvidenceReference{{EvidenceKind: EvidenceCaseIdentity, Object: c.Identity}}
			} else {
				st.fixed++
			}
			if err := cfg.Cases.resolve(ctx, c, ev); err != nil {
				return st, err
			}
			st.resolved++
		}
		if err := settle(); err != nil {
			return st, err
		}
	}
}

// resolve runs one case's chain: the requester's request naming the
// evidence, the approver's approval, the requester's apply (Operations'
// decision, Core's grant, Billing's resolution). Each command is retried
// with the same assertion and operation after a transient error, which
// returns its first result.
func (c *Cases) resolve(ctx context.Context, kase openCase, evidence []reconciliation.EvidenceReference) error {
	if len(evidence) > reconciliation.MaxEvidenceReferences {
		evidence = evidence[:reconciliation.MaxEvidenceReferences]
	}
	why := fmt.Sprintf("demo: the provider reported %d successor availabilities for the usage it could not vouch for", len(evidence))
	if evidence[0].EvidenceKind == EvidenceCaseIdentity {
		why = "demo: no owner-side fix reported yet"
	}
	in := cases.RequestInput{CaseRef: kase.CaseRef, OperationID: uuid.NewString(), Evidence: evidence,
		Justification: fmt.Sprintf("%s; re-evaluate generation %d on the current owner state", why, kase.Generation)}
	asserted, err := c.Assert(c.Requester)
	if err != nil {
		return fmt.Errorf("assert %s: %w", c.Requester, err)
	}
	ch, err := retryCommand(ctx, func() (*cases.Chain, error) { return c.Gateway.Request(ctx, asserted, in) })
	if err != nil {
		return fmt.Errorf("case %s: request: %w", kase.CaseRef, err)
	}
	ref := ch.Request.Request.Ref
	if asserted, err = c.Assert(c.Approver); err != nil {
		return fmt.Errorf("assert %s: %w", c.Approver, err)
	}
	if _, err := retryCommand(ctx, func() (*cases.Chain, error) { return c.Gateway.Approve(ctx, asserted, ref) }); err != nil {
		return fmt.Errorf("case %s: approve %s: %w", kase.CaseRef, ref, err)
	}
	if asserted, err = c.Assert(c.Requester); err != nil {
		return fmt.Errorf("assert %s: %w", c.Requester, err)
	}
	if _, err := retryCommand(ctx, func() (casegateway.Applied, error) { return c.Gateway.Apply(ctx, asserted, ref) }); err != nil {
		return fmt.Errorf("case %s: apply %s: %w", kase.CaseRef, ref, err)
	}
	return nil
}

// retryCommand runs one idempotent case command and replays it after a
// transient database error, pausing 50 ms doubling to 2 s, until ctx ends.
func retryCommand[T any](ctx context.Context, call func() (T, error)) (T, error) {
	pause := 50 * time.Millisecond
	for {
		v, err := call()
		if !db.Transient(err) && !errors.Is(err, ownerhttp.ErrUnavailable) {
			return v, err
		}
		select {
		case <-ctx.Done():
			return v, fmt.Errorf("%w (last transient error: %w)", ctx.Err(), err)
		case <-time.After(pause):
		}
		pause = min(2*pause, 2*time.Second)
	}
}

func readOpenCases(ctx context.Context, core db.Executor) ([]openCase, error) {
	rows, err := core.Query(ctx, qCasesOpen)
	if err != nil {
		return nil, fmt.Errorf("open cases: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (openCase, error) {
		var c openCase
		var alg string
		err := row.Scan(&c.CaseRef, &c.Generation, &c.ReservationID, &c.Identity.Ref, &c.Identity.SchemaVersion, &alg, &c.Identity.Digest)
		c.Identity.DigestAlgorithmVersion = digest.Algorithm(alg)
		return c, err
	})
	if err != nil {
		return nil, fmt.Errorf("open cases: %w", err)
	}
	return out, nil
}

// CaseReport is the Finalization reconciliation cases' end state: cases
// (one per fence generation) opened and resolved, successor generations,
// the command chain behind them, the provider's fixes and the time from a
// case to its resolution.
type CaseReport struct {
	Opened       int64 `json:"opened"`
	Open         int64 `json:"open"`
	Resolved     int64 `json:"resolved"`
	Successors   int64 `json:"successorGenerations"`
	MaxGen       int64 `json:"maxGeneration"`
	Reservations int64 `json:"reservations"`
	Requests     int64 `json:"commandRequests"`
	Approvals    int64 `json:"approvals"`
	Grants       int64 `json:"grantsExchanged"`
	// Rounds the desk ran; ResolvedWithFix the resolutions whose request
	// named the provider's successor availabilities.
	Rounds          int64 `json:"rounds"`
	ResolvedWithFix int64 `json:"resolvedWithOwnerFix"`
	// Reasons counts the cases by the reason Billing entered them with.
	Reasons              map[string]int64 `json:"reasons,omitempty"`
	ToResolutionP50Milli float64          `json:"caseToResolutionP50Millis"`
	ToResolutionMaxMilli float64          `json:"caseToResolutionMaxMillis"`
	Where                string           `json:"commandsRunIn,omitempty"`
}

// summarizeCases reports the cases and proves their invariants: no case
// open and every Billing case request resolved, Operations' cases exactly
// Billing's requests, one event per request and resolution with every
// delivery acknowledged, and every resolution through the whole chain (a
// consumed grant Core issued, Operations' decision on a request another
// principal approved).
func summarizeCases(ctx context.Context, core queryer, cfg Config, st deskStats, s *Summary) error {
	c := CaseReport{Rounds: st.rounds, ResolvedWithFix: st.fixed, Where: cfg.Cases.Where}
	var billingRequests, billingResolutions, unresolved, notMatched, requestEventsOff, resolutionEventsOff, withoutEvent,
		unacked, deliveries, chainBroken int64
	var reasons string
	if err := core.QueryRow(ctx, qCaseCounts).Scan(&c.Opened, &c.Open, &c.Resolved, &c.Successors, &c.MaxGen, &c.Reservations,
		&billingRequests, &billingResolutions, &c.Requests, &c.Approvals, &c.Grants, &unresolved, &notMatched,
		&requestEventsOff, &resolutionEventsOff, &withoutEvent, &unacked, &deliveries, &chainBroken,
		&c.ToResolutionP50Milli, &c.ToResolutionMaxMilli, &reasons); err != nil {
		return fmt.Errorf("demo cases: %w", err)
	}
	if err := json.Unmarshal([]byte(reasons), &c.Reasons); err != nil {
		return fmt.Errorf("demo case reasons: %w", err)
	}
	s.Cases = &c
	ok := c.Open == 0 && unresolved == 0 && notMatched == 0 && unacked == 0 && c.Resolved == billingResolutions
	s.check("every_case_resolved", ok, failDetail(ok, fmt.Sprintf(
		"%d cases open in Operations, %d Billing case requests without their resolution, %d cases and requests not each other's, %d of %d deliveries of the two pairs not acknowledged, %d resolved in Operations for %d Billing resolutions",
		c.Open, unresolved, notMatched, unacked, deliveries, c.Resolved, billingResolutions)))
	s.count("case_event_once", requestEventsOff+resolutionEventsOff+withoutEvent,
		"case requests or resolutions without exactly their one case-requested@1 or resolution-applied@1 event")
	s.count("case_resolution_chain", chainBroken,
		"resolutions without a consumed grant Core issued, or without Operations' decision on a request another principal approved")
	return nil
}

// writeCases prints the cases part of the summary.
func (s *Summary) writeCases(row func(string, any)) {
	c := s.Cases
	if c == nil {
		return
	}
	row("cases: opened (reservations)", fmt.Sprintf("%d (%d reservations; %d successor generations, highest generation %d)",
		c.Opened, c.Reservations, c.Successors, c.MaxGen))
	if len(c.Reasons) > 0 {
		reasons := make([]string, 0, len(c.Reasons))
		for r, n := range c.Reasons {
			reasons = append(reasons, fmt.Sprintf("%d %s", n, r))
		}
		slices.Sort(reasons)
		row("cases: reasons", strings.Join(reasons, ", "))
	}
	row("cases: resolved / open", fmt.Sprintf("%d / %d in %d rounds (%d with the provider's successor availability as evidence)",
		c.Resolved, c.Open, c.Rounds, c.ResolvedWithFix))
	row("cases: command chain", fmt.Sprintf("%d requests, %d approvals by a second operator, %d grants exchanged and consumed",
		c.Requests, c.Approvals, c.Grants))
	row("cases: case → resolution", fmt.Sprintf("p50 %.0f ms, max %.0f ms", c.ToResolutionP50Milli, c.ToResolutionMaxMilli))
	if s.Scenario != nil {
		row("provider: owner-side fixes", fmt.Sprintf("%d attempts' usage reconciled (%d successor availabilities through the Gateway)",
			s.Scenario.FixedAttempts, s.Scenario.FixObservations))
	}
	if c.Where != "" {
		row("cases: commands run", c.Where)
	}
}
