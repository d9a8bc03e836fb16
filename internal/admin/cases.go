package admin

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/oceanway/core/internal/admin/dbsqlc"
	"github.com/oceanway/core/internal/operations/projector"
)

// Defaults of the Cases page's bounds (Config.CaseListLimit,
// Config.CaseRequestLimit).
const (
	DefaultCaseListLimit    = 50
	DefaultCaseRequestLimit = 1000
)

// HowCasesClose is what the Cases page and its JSON say about closing a
// case: the page only reads.
const HowCasesClose = "Read-only: nothing here closes, resolves or changes a case. " +
	"A case closes only through oceanway case request|approve|apply: an operator requests the re-evaluation, " +
	"a second operator approves it, the requester applies it (Operations' decision, Core's grant, Billing's resolution), " +
	"and the Operations projection then marks the case resolved."

// CasesResult is the Cases page: the Finalization reconciliation cases of
// the active Operations projection with their resolution command chain,
// open first, then the most recently resolved, read from the core database
// (schema operations) in one read-only snapshot. A core database that is
// not configured or has no case tables is not an error (SectionStatus).
type CasesResult struct {
	SectionStatus
	// Projection is "name@version" of the active Operations projection the
	// cases are read from; "" when none is active (both lists are then
	// empty).
	Projection string `json:"projection"`
	// OpenTotal is the number of open cases; Open shows the oldest.
	OpenTotal int64    `json:"openTotal"`
	Open      CaseList `json:"open"`
	// Resolved shows the most recently resolved cases.
	Resolved CaseList `json:"resolved"`
	// RequestsTruncated is true when the cases listed have more command
	// requests than Config.CaseRequestLimit: some chains are then shown in
	// part.
	RequestsTruncated bool `json:"requestsTruncated"`
	// HowCasesClose is the HowCasesClose notice.
	HowCasesClose string `json:"howCasesClose"`
}

// OpenMore is the number of open cases the list does not show.
func (c CasesResult) OpenMore() int64 { return max(0, c.OpenTotal-int64(len(c.Open.Items))) }

// CaseList is a bounded list of cases.
type CaseList struct {
	Limit int `json:"limit"`
	// Truncated is true when more cases exist than Items shows.
	Truncated bool   `json:"truncated"`
	Items     []Case `json:"items"`
}

// Case is one Finalization reconciliation case (one generation of a
// reservation's finalization fence) with its resolution command requests.
// The JSON names are those of `oceanway case list --json`.
type Case struct {
	CaseRef       string `json:"reconciliationCaseRef"`
	Generation    int64  `json:"reconciliationGeneration"`
	State         string `json:"state"`
	FenceID       string `json:"billingFinalizationFenceId"`
	ReservationID string `json:"billingReservationId"`
	RunID         string `json:"runId"`
	ReasonCode    string `json:"reconciliationReasonCode"`
	// PredecessorCaseRef is the previous generation's case (generation > 1).
	PredecessorCaseRef string    `json:"predecessorReconciliationCaseRef,omitempty"`
	RequestedAt        time.Time `json:"requestedAt"`
	// AgeSeconds is the age of the case request at the snapshot time.
	AgeSeconds float64 `json:"ageSeconds"`
	// ResolvedAt, ResolvedBy (the workforce principal who applied the
	// resolution) and ResolutionOperationID are set on a resolved case.
	ResolvedAt            *time.Time    `json:"resolvedAt,omitempty"`
	ResolvedBy            string        `json:"resolvedBy,omitempty"`
	ResolutionOperationID string        `json:"resolutionOperationId,omitempty"`
	Requests              []CaseRequest `json:"requests"`
}

// CaseRequest is one resolution command request of a case and how far its
// chain got: approved by a second principal, then decided by Operations
// when the requester applied it.
type CaseRequest struct {
	RequestRef    string     `json:"requestRef"`
	Requester     string     `json:"requester"`
	Justification string     `json:"justification"`
	RequestedAt   time.Time  `json:"requestedAt"`
	ApprovalRef   string     `json:"approvalRef,omitempty"`
	Approver      string     `json:"approver,omitempty"`
	ApprovedAt    *time.Time `json:"approvedAt,omitempty"`
	DecisionRef   string     `json:"decisionRef,omitempty"`
	DecidedBy     string     `json:"decidedBy,omitempty"`
	DecidedAt     *time.Time `json:"decidedAt,omitempty"`
}

// Request stages (CaseRequest.Stage).
const (
	StageRequested = "requested"
	StageApproved  = "approved"
	StageDecided   = "decided"
)

// Stage is how far the request's chain got: requested, approved or
// decided.
func (q CaseRequest) Stage() string {
	switch {
	case q.DecisionRef != "":
		return StageDecided
	case q.Approver != "":
		return StageApproved
	default:
		return StageRequested
	}
}

// Cases reads the Cases page from the core database in one read-only
// snapshot: the open cases (oldest first, Config.CaseListLimit), the most
// recently resolved ones (as many) and the command chain of each.
func (r *Reader) Cases(ctx context.Context) CasesResult {
	var out CasesResult
	out.SectionStatus = r.ownerSection(ctx, CoreBoundary, casesPresent, func(ctx context.Context, tx pgx.Tx, asOf time.Time) error {
		c, err := readCases(ctx, tx, asOf, r.cfg)
		if err != nil {
			return err
		}
		out = c
		return nil
	})
	out.Open.Limit, out.Resolved.Limit = r.cfg.CaseListLimit, r.cfg.CaseListLimit
	if out.Open.Items == nil {
		out.Open.Items = []Case{}
	}
	if out.Resolved.Items == nil {
		out.Resolved.Items = []Case{}
	}
	out.HowCasesClose = HowCasesClose
	return out
}

// casesPresent answers whether the database holds the case tables and the
// command chain.
func casesPresent(ctx context.Context, tx pgx.Tx) (bool, error) {
	return queries.CaseTablesPresent(ctx, tx)
}

func readCases(ctx context.Context, tx pgx.Tx, asOf time.Time, cfg Config) (CasesResult, error) {
	var c CasesResult
	version, err := queries.CaseProjectionVersion(ctx, tx, projector.ProjectionName)
	if errors.Is(err, pgx.ErrNoRows) {
		return c, nil
	}
	if err != nil {
		return c, fmt.Errorf("read the active %s version: %w", projector.ProjectionName, err)
	}
	c.Projection = fmt.Sprintf("%s@%d", projector.ProjectionName, version)
	limit := int32(cfg.CaseListLimit + 1) // one more than shown says "more"
	if c.OpenTotal, err = queries.CaseOpenTotal(ctx, tx, dbsqlc.CaseOpenTotalParams{
		ProjectionName: projector.ProjectionName, ProjectionVersion: version}); err != nil {
		return c, fmt.Errorf("count open cases: %w", err)
	}
	open, err := queries.CaseOpenList(ctx, tx, dbsqlc.CaseOpenListParams{
		ProjectionName: projector.ProjectionName, ProjectionVersion: version, RowLimit: limit})
	if err != nil {
		return c, fmt.Errorf("list open cases: %w", err)
	}
	for _, o := range open {
		c.Open.Items = append(c.Open.Items, Case{CaseRef: o.ReconciliationCaseRef, Generation: o.ReconciliationGeneration,
			State: "open", FenceID: o.BillingFinalizationFenceID, ReservationID: o.BillingReservationID, RunID: o.RunID,
			ReasonCode: o.ReconciliationReasonCode, PredecessorCaseRef: deref(o.PredecessorReconciliationCaseRef),
			RequestedAt: o.RequestedAt.UTC(), AgeSeconds: ageAt(asOf, o.RequestedAt)})
	}
	resolved, err := queries.CaseResolvedList(ctx, tx, dbsqlc.CaseResolvedListParams{
		ProjectionName: projector.ProjectionName, ProjectionVersion: version, RowLimit: limit})
	if err != nil {
		return c, fmt.Errorf("list resolved cases: %w", err)
	}
	for _, o := range resolved {
		at := o.ResolvedAt.UTC()
		c.Resolved.Items = append(c.Resolved.Items, Case{CaseRef: o.ReconciliationCaseRef, Generation: o.ReconciliationGeneration,
			State: "resolved", FenceID: o.BillingFinalizationFenceID, ReservationID: o.BillingReservationID, RunID: o.RunID,
			ReasonCode: o.ReconciliationReasonCode, PredecessorCaseRef: deref(o.PredecessorReconciliationCaseRef),
			RequestedAt: o.RequestedAt.UTC(), AgeSeconds: ageAt(asOf, o.RequestedAt),
			ResolvedAt: &at, ResolvedBy: o.ResolvedBy, ResolutionOperationID: o.ResolutionOperationID})
	}
	for _, l := range []*CaseList{&c.Open, &c.Resolved} {
		if len(l.Items) > cfg.CaseListLimit {
			l.Items, l.Truncated = l.Items[:cfg.CaseListLimit], true
		}
	}
	c.RequestsTruncated, err = attachRequests(ctx, tx, cfg.CaseRequestLimit, c.Open.Items, c.Resolved.Items)
	return c, err
}

// attachRequests reads the command chain of every case listed in one
// bounded query and attaches each request to its case, in request order.
func attachRequests(ctx context.Context, tx pgx.Tx, limit int, lists ...[]Case) (truncated bool, err error) {
	byRef := map[string]*Case{}
	var refs []string
	for _, l := range lists {
		for i := range l {
			l[i].Requests = []CaseRequest{}
			byRef[l[i].CaseRef] = &l[i]
			refs = append(refs, l[i].CaseRef)
		}
	}
	if len(refs) == 0 {
		return false, nil
	}
	rows, err := queries.RequestsOfCases(ctx, tx, dbsqlc.RequestsOfCasesParams{CaseRefs: refs, RowLimit: int32(limit + 1)})
	if err != nil {
		return false, fmt.Errorf("read case requests: %w", err)
	}
	if len(rows) > limit {
		rows, truncated = rows[:limit], true
	}
	for _, q := range rows {
		c, ok := byRef[q.ReconciliationCaseRef]
		if !ok {
			continue
		}
		c.Requests = append(c.Requests, CaseRequest{RequestRef: q.RequestRef, Requester: q.RequesterWorkforcePrincipalID,
			Justification: q.Justification, RequestedAt: q.RequestedAt.UTC(),
			ApprovalRef: deref(q.ApprovalRef), Approver: deref(q.ApproverWorkforcePrincipalID), ApprovedAt: utc(q.ApprovedAt),
			DecisionRef: deref(q.DecisionRef), DecidedBy: deref(q.DecidedBy), DecidedAt: utc(q.DecidedAt)})
	}
	return truncated, nil
}
