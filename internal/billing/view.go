package billing

import (
	"context"
	"fmt"
	"time"

	billingc "github.com/oceanway/core/contracts/billing"
	"github.com/oceanway/core/internal/db"
)

// ReservationView is one reservation's billing state as `inspect` and the
// admin page show it: the reservation, its fence (with the visible waiting
// reason), the evaluations that ended generations without effect, and the
// ledger lines.
type ReservationView struct {
	BillingReservationID string
	BillingAccountID     string
	RunID                string
	EconomicIdentity     string
	ReservedAmount       string
	State                string // reserved | settled | released
	SettledAmount        string // "" while reserved
	ReleasedAmount       string
	CommittedRef         string
	FenceID              string
	FenceState           string
	FenceRevision        int64
	ActiveGeneration     int64 // 0: none
	LatestGeneration     int64
	ClosureWatermark     string // none | applied
	SettlementWatermark  string // none | advanced
	WaitingReason        string
	Evaluations          []EvaluationView
	Postings             []PostingView
}

// EvaluationView is one recorded evaluation.
type EvaluationView struct {
	WorkGeneration int64
	OperationID    string
	Outcome        string
	ReasonCode     string
	ReasonDetail   string
	RecordedAt     time.Time
}

// PostingView is one ledger line.
type PostingView struct {
	GroupKind   string
	GroupID     string
	LineNo      int32
	AccountKind string
	Direction   string
	Amount      string
	PostedAt    time.Time
}

// LookupReservation reads one reservation's billing state by exact id
// (db.ErrNotFound). Read only; index-backed.
func LookupReservation(ctx context.Context, q db.Executor, reservationID string) (ReservationView, error) {
	r, err := queries.ViewReservation(ctx, q, reservationID)
	if err != nil {
		return ReservationView{}, db.NotFound(err)
	}
	v := ReservationView{
		BillingReservationID: r.BillingReservationID, BillingAccountID: r.BillingAccountID, RunID: r.RunID,
		EconomicIdentity: r.EconomicIdentity, ReservedAmount: r.ReservedAmount, State: r.State,
		SettledAmount: r.SettledAmount, ReleasedAmount: r.ReleasedAmount, CommittedRef: deref(r.CommittedRef),
		FenceID: r.BillingFinalizationFenceID, FenceState: r.CoordinationState, FenceRevision: r.FinalizationFenceRevision,
		LatestGeneration: r.LatestWorkGeneration, ClosureWatermark: r.ClosureWatermarkState,
		SettlementWatermark: r.SettlementInputWatermarkState, WaitingReason: deref(r.WaitingReason),
	}
	if r.ActiveWorkGeneration != nil {
		v.ActiveGeneration = *r.ActiveWorkGeneration
	}
	evs, err := queries.ViewEvaluations(ctx, q, r.BillingFinalizationFenceID)
	if err != nil {
		return ReservationView{}, fmt.Errorf("read evaluations: %w", err)
	}
	for _, e := range evs {
		v.Evaluations = append(v.Evaluations, EvaluationView{WorkGeneration: e.WorkGeneration, OperationID: e.BillingFinalizationOperationID,
			Outcome: e.Outcome, ReasonCode: e.ReasonCode, ReasonDetail: e.ReasonDetail, RecordedAt: e.RecordedAt.UTC()})
	}
	ps, err := queries.ViewPostings(ctx, q, reservationID)
	if err != nil {
		return ReservationView{}, fmt.Errorf("read postings: %w", err)
	}
	for _, p := range ps {
		v.Postings = append(v.Postings, PostingView{GroupKind: p.GroupKind, GroupID: p.PostingGroupID, LineNo: p.LineNo,
			AccountKind: p.AccountKind, Direction: p.Direction, Amount: p.Amount, PostedAt: p.PostedAt.UTC()})
	}
	return v, nil
}

// CommittedOf reads a finalized reservation's
// BillingFinalizationCommitted@1 and decodes it strictly (its digest
// recomputes); db.ErrNotFound before finality.
func CommittedOf(ctx context.Context, q db.Executor, reservationID string) (*billingc.Committed, []byte, error) {
	row, err := queries.CommittedByReservation(ctx, q, reservationID)
	if err != nil {
		return nil, nil, db.NotFound(err)
	}
	c, err := billingc.DecodeCommitted([]byte(row.CommittedBody))
	if err != nil {
		return nil, nil, fmt.Errorf("committed of %s: %w", reservationID, err)
	}
	return c, []byte(row.CommittedBody), nil
}
