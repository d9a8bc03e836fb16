package catchup

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	billingc "github.com/oceanway/core/contracts/billing"
	"github.com/oceanway/core/contracts/digest"
	"github.com/oceanway/core/internal/db"
	"github.com/oceanway/core/internal/ownerread"
	"github.com/oceanway/core/internal/ownerread/coreread"
)

// Reads is the catch-up's directed owner read over the core database (as
// the billing role): readBillingSettlementTransition, which the Operations
// projector calls for billing.settlement-transition.committed@1
// (billing.Reads answers the finalization's).
type Reads struct {
	DB db.Executor
}

// ReadBillingSettlementTransition is readBillingSettlementTransition: by the
// exact BillingSettlementTransition@1 quadruple the event carries, it
// answers found when the stored transition recomputes to that quadruple and
// every identity and amount the event states (event id and envelope digest,
// reservation, account, run, step, attempt, dimension, kind, amount, from/to
// revisions, logical operation, basis digest, validation operation) equals
// it; not_found when Billing has no transition under that ref and none from
// the same revision of the dimension; conflicting otherwise. No list, no
// latest, no bare-ref read.
func (r Reads) ReadBillingSettlementTransition(ctx context.Context, req coreread.SettlementTransitionRead) (ownerread.Answer, error) {
	if err := req.Transition.Validate(); err != nil || req.EventID == "" || req.SettlementDimensionID == "" {
		return "", fmt.Errorf("%w: readBillingSettlementTransition needs the full quadruple, the event and the dimension", ownerread.ErrInvalidRequest)
	}
	type row struct {
		DimensionID  string `db:"settlement_dimension_id"`
		From         int64  `db:"from_settlement_state_revision"`
		EventID      string `db:"event_id"`
		EventSHA256  string `db:"event_envelope_sha256"`
		TransitionJS string `db:"transition_body"`
	}
	rows, err := r.DB.Query(ctx, qCatchUpTransitionByRef, pgx.NamedArgs{"transition_ref": req.Transition.Ref})
	if err != nil {
		return "", fmt.Errorf("read settlement transition: %w", err)
	}
	got, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[row])
	if errors.Is(err, pgx.ErrNoRows) {
		var taken bool
		if err := r.DB.QueryRow(ctx, qCatchUpTransitionAt, pgx.NamedArgs{"settlement_dimension_id": req.SettlementDimensionID,
			"from_settlement_state_revision": req.FromSettlementStateRevision}).Scan(&taken); err != nil {
			return "", fmt.Errorf("read settlement transition by revision: %w", err)
		}
		if taken {
			return ownerread.Conflicting, nil
		}
		return ownerread.NotFound, nil
	}
	if err != nil {
		return "", fmt.Errorf("read settlement transition: %w", err)
	}
	t, err := billingc.DecodeBillingSettlementTransition([]byte(got.TransitionJS))
	if err != nil {
		// A stored transition that no longer recomputes is never "found".
		return ownerread.Conflicting, nil
	}
	d := t.Dimension
	same := t.Transition == req.Transition && got.EventID == req.EventID &&
		(digest.Digest{Algorithm: digest.JCSSHA256V1, Value: got.EventSHA256}) == req.EventEnvelopeDigest &&
		d.BillingReservationID == req.BillingReservationID && d.BillingAccountID == req.BillingAccountID && d.RunID == req.RunID &&
		d.RunStepID == req.RunStepID && d.ExecutionAttemptID == req.ExecutionAttemptID && d.ChargeDimensionKey == req.ChargeDimensionKey &&
		d.SettlementDimensionID() == req.SettlementDimensionID && got.DimensionID == req.SettlementDimensionID &&
		t.TransitionKind == req.TransitionKind && t.TransitionAmount == req.TransitionAmount &&
		t.FromSettlementStateRevision == req.FromSettlementStateRevision && got.From == req.FromSettlementStateRevision &&
		t.ToSettlementStateRevision() == req.ToSettlementStateRevision && t.LogicalOperationID == req.LogicalOperationID &&
		t.SettlementBasis == req.SettlementBasis && t.ValidationOperationID() == req.ValidationOperationID
	if !same {
		return ownerread.Conflicting, nil
	}
	return ownerread.Found, nil
}

// ReadLateSettlementExposureForOperations is
// readLateSettlementExposureForOperations: by the exposure id the
// case-requested event names, it answers found when Billing's exposure
// recomputes to the event's quadruple and asks for exactly the event's
// case (ref, generation, identity, case request operation), its dimension
// and amount equal the event's, and the stored case-requested event is this
// event (id and envelope digest); not_found when Billing has no such
// exposure; conflicting otherwise (an exposure recorded without a case
// request included). No list, no latest.
func (r Reads) ReadLateSettlementExposureForOperations(ctx context.Context, req coreread.LateExposureCaseRequestRead) (ownerread.Answer, error) {
	if err := req.Exposure.Validate(); err != nil || req.CaseIdentity.Validate() != nil || req.EventID == "" ||
		req.LateSettlementExposureID == "" || req.CaseGeneration < 1 {
		return "", fmt.Errorf("%w: readLateSettlementExposureForOperations needs the event, the exposure, the case generation and both quadruples", ownerread.ErrInvalidRequest)
	}
	var body string
	var eventID, eventSHA256 *string
	err := r.DB.QueryRow(ctx, `SELECT exposure_body, case_event_id::text, case_event_envelope_sha256
		FROM billing.late_settlement_exposures WHERE late_settlement_exposure_id = $1`, req.LateSettlementExposureID).Scan(&body, &eventID, &eventSHA256)
	if errors.Is(err, pgx.ErrNoRows) {
		return ownerread.NotFound, nil
	}
	if err != nil {
		return "", fmt.Errorf("read late settlement exposure: %w", err)
	}
	e, err := billingc.DecodeLateSettlementExposure([]byte(body))
	if err != nil || e.Case == nil || eventID == nil || eventSHA256 == nil {
		return ownerread.Conflicting, nil
	}
	d, c := e.Dimension, e.Case
	same := e.Exposure == req.Exposure && e.ExposureID() == req.LateSettlementExposureID && *eventID == req.EventID &&
		(digest.Digest{Algorithm: digest.JCSSHA256V1, Value: *eventSHA256}) == req.EventEnvelopeDigest &&
		d.SettlementDimensionID() == req.SettlementDimensionID && d.BillingReservationID == req.BillingReservationID &&
		d.BillingAccountID == req.BillingAccountID && d.RunID == req.RunID && d.RunStepID == req.RunStepID &&
		d.ExecutionAttemptID == req.ExecutionAttemptID && d.ChargeDimensionKey == req.ChargeDimensionKey &&
		c.ReconciliationCaseRef == req.CaseRef && c.CaseGeneration == req.CaseGeneration && c.Identity == req.CaseIdentity &&
		c.CaseRequestOperationID == req.CaseRequestOperationID && e.ExposureAmount == req.ExposureAmount
	if !same {
		return ownerread.Conflicting, nil
	}
	return ownerread.Found, nil
}
