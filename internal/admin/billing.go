package admin

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

var (
	qReservationBillingPresent   = stmts.Get("reservation_billing_present")
	qReservationBillingState     = stmts.Get("reservation_billing_state")
	qReservationBillingPostings  = stmts.Get("reservation_billing_postings")
	qReservationBillingDecisions = stmts.Get("reservation_billing_decisions")
)

// ReservationBilling is what Billing holds for one reservation: its state,
// its finalization fence (with the visible reason of a waiting fence), the
// ledger postings and the decision chain of every evaluation (input
// manifest → bundle → decision).
type ReservationBilling struct {
	State             string            `json:"state"`
	ReservedAmount    string            `json:"reservedAmount"`
	SettledAmount     *string           `json:"settledAmount"`
	ReleasedAmount    *string           `json:"releasedAmount"`
	CommittedRef      *string           `json:"committedRef"`
	FinalizedAt       *time.Time        `json:"finalizedAt"`
	FenceState        *string           `json:"fenceState"`
	FenceWaitReason   *string           `json:"fenceWaitingReason"`
	FenceRevision     *int64            `json:"fenceRevision"`
	Postings          []LedgerPosting   `json:"postings"`
	Decisions         []BillingDecision `json:"decisions"`
	FinalizationCount int               `json:"finalizations"`
}

// LedgerPosting is one line of a posting group.
type LedgerPosting struct {
	GroupKind        string    `json:"groupKind" db:"group_kind"`
	PostingGroupID   string    `json:"postingGroupId" db:"posting_group_id"`
	LineNo           int32     `json:"lineNo" db:"line_no"`
	AccountKind      string    `json:"account" db:"account_kind"`
	Direction        string    `json:"direction" db:"direction"`
	Amount           string    `json:"amount" db:"amount"`
	EconomicIdentity string    `json:"economicIdentity" db:"economic_identity"`
	PostedAt         time.Time `json:"postedAt" db:"posted_at"`
}

// BillingDecision is one evaluation of the decision chain.
type BillingDecision struct {
	DecisionRef    string    `json:"decisionRef" db:"decision_ref"`
	DecisionDigest string    `json:"decisionDigest" db:"decision_digest"`
	Decision       string    `json:"decision" db:"decision"`
	ReasonCode     *string   `json:"reasonCode" db:"reason_code"`
	SettledAmount  *string   `json:"settledAmount" db:"settled_amount"`
	ReleasedAmount *string   `json:"releasedAmount" db:"released_amount"`
	ManifestRef    string    `json:"inputManifestRef" db:"manifest_ref"`
	ManifestDigest string    `json:"inputManifestDigest" db:"manifest_digest"`
	Dimensions     int32     `json:"dimensions" db:"dimension_count"`
	TargetTotal    string    `json:"targetTotal" db:"target_total"`
	BundleRef      *string   `json:"validationBundleRef" db:"bundle_ref"`
	RecordedAt     time.Time `json:"recordedAt" db:"recorded_at"`
}

// reservationBilling reads the reservation's billing rows, or nil when the
// database has no billing line or no such reservation.
func reservationBilling(ctx context.Context, tx pgx.Tx, reservationID string) (*ReservationBilling, error) {
	var present bool
	if err := tx.QueryRow(ctx, qReservationBillingPresent).Scan(&present); err != nil || !present {
		return nil, err
	}
	args := pgx.NamedArgs{"reservation_id": reservationID}
	b := &ReservationBilling{}
	err := tx.QueryRow(ctx, qReservationBillingState, args).Scan(&b.State, &b.ReservedAmount, &b.SettledAmount, &b.ReleasedAmount,
		&b.CommittedRef, &b.FinalizedAt, &b.FenceState, &b.FenceWaitReason, &b.FenceRevision)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read reservation billing state: %w", err)
	}
	rows, err := tx.Query(ctx, qReservationBillingPostings, args)
	if err != nil {
		return nil, fmt.Errorf("read ledger postings: %w", err)
	}
	if b.Postings, err = pgx.CollectRows(rows, pgx.RowToStructByName[LedgerPosting]); err != nil {
		return nil, fmt.Errorf("read ledger postings: %w", err)
	}
	rows, err = tx.Query(ctx, qReservationBillingDecisions, args)
	if err != nil {
		return nil, fmt.Errorf("read decision chain: %w", err)
	}
	if b.Decisions, err = pgx.CollectRows(rows, pgx.RowToStructByName[BillingDecision]); err != nil {
		return nil, fmt.Errorf("read decision chain: %w", err)
	}
	for _, d := range b.Decisions {
		if d.BundleRef != nil {
			b.FinalizationCount++
		}
	}
	return b, nil
}
