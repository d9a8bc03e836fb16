package demo

import (
	"context"
	"fmt"
	"strings"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/oceanway/core/contracts/digest"
	"github.com/oceanway/core/contracts/reconciliation"
	"github.com/oceanway/core/contracts/strict"
	"github.com/oceanway/core/internal/casegateway"
	"github.com/oceanway/core/internal/db"
	"github.com/oceanway/core/internal/operations/cases"
)

var qLateCasesOpen = statements.Get("late_cases_open")

// EvidenceLateExposure is the evidence kind the demo's operators name: the
// exposure they fund.
const EvidenceLateExposure = "late_settlement_exposure"

// openLateCase is an open late settlement case with the exposure to fund.
type openLateCase struct {
	CaseRef    string
	Generation int64
	ExposureID string
	Exposure   strict.Quadruple
}

// lateDeskStats is what the late settlement desk did.
type lateDeskStats struct {
	rounds, funded int64
	ran            bool
}

// fundLateCases runs the late settlement desk once the corrections
// settled (issue 32): each round the requester asks to fund every open late
// case's latest unresolved exposure, a second principal approves, the
// requester applies (Operations' decision, Billing's funding decision,
// Core's grant, Billing's one ledger transaction), and the loop settles
// (the projector verifies the result and the applied fact and closes the
// case). It returns once no late case is open, or an error after
// cfg.Cases.Rounds rounds.
func fundLateCases(ctx context.Context, core db.Executor, settle func() error, cfg Config) (lateDeskStats, error) {
	st := lateDeskStats{ran: true}
	for round := 1; ; round++ {
		open, err := readOpenLateCases(ctx, core)
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
			return st, fmt.Errorf("late settlement cases did not converge: after %d rounds %d still open [%s]",
				cfg.Cases.rounds(), len(open), strings.Join(refs, ", "))
		}
		st.rounds++
		for _, c := range open {
			if err := cfg.Cases.fund(ctx, c); err != nil {
				return st, err
			}
			st.funded++
		}
		if err := settle(); err != nil {
			return st, err
		}
	}
}

// fund runs one late case's chain with retries on transient errors (each
// command is idempotent: the same operation returns its first result).
func (c *Cases) fund(ctx context.Context, kase openLateCase) error {
	in := cases.LateRequestInput{CaseRef: kase.CaseRef, LateSettlementExposureID: kase.ExposureID,
		Evidence:                  []reconciliation.EvidenceReference{{EvidenceKind: EvidenceLateExposure, Object: kase.Exposure}},
		Justification:             fmt.Sprintf("demo: the customer agreed to be charged the late usage of generation %d", kase.Generation),
		CommandRequestOperationID: uuid.NewString()}
	asserted, err := c.Assert(c.Requester)
	if err != nil {
		return fmt.Errorf("assert %s: %w", c.Requester, err)
	}
	ch, err := retryCommand(ctx, func() (*cases.LateChain, error) { return c.Gateway.RequestLate(ctx, asserted, in) })
	if err != nil {
		return fmt.Errorf("late case %s: request: %w", kase.CaseRef, err)
	}
	ref := ch.Request.Request.Ref
	if asserted, err = c.Assert(c.Approver); err != nil {
		return fmt.Errorf("assert %s: %w", c.Approver, err)
	}
	if _, err := retryCommand(ctx, func() (*cases.LateChain, error) { return c.Gateway.ApproveLate(ctx, asserted, ref) }); err != nil {
		return fmt.Errorf("late case %s: approve %s: %w", kase.CaseRef, ref, err)
	}
	if asserted, err = c.Assert(c.Requester); err != nil {
		return fmt.Errorf("assert %s: %w", c.Requester, err)
	}
	if _, err := retryCommand(ctx, func() (casegateway.LateApplied, error) { return c.Gateway.ApplyLate(ctx, asserted, ref) }); err != nil {
		return fmt.Errorf("late case %s: apply %s: %w", kase.CaseRef, ref, err)
	}
	return nil
}

func readOpenLateCases(ctx context.Context, core db.Executor) ([]openLateCase, error) {
	rows, err := core.Query(ctx, qLateCasesOpen)
	if err != nil {
		return nil, fmt.Errorf("open late settlement cases: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (openLateCase, error) {
		var c openLateCase
		var alg string
		err := row.Scan(&c.CaseRef, &c.Generation, &c.ExposureID, &c.Exposure.Ref, &c.Exposure.SchemaVersion, &alg, &c.Exposure.Digest)
		c.Exposure.DigestAlgorithmVersion = digest.Algorithm(alg)
		return c, err
	})
	if err != nil {
		return nil, fmt.Errorf("open late settlement cases: %w", err)
	}
	return out, nil
}
