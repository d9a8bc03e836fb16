package finalization

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	contract "github.com/oceanway/core/contracts/billing"
	"github.com/oceanway/core/contracts/envelope"
	"github.com/oceanway/core/internal/billing"
	"github.com/oceanway/core/internal/billing/catchup"
)

// BillingLedger commits through the Billing core (internal/billing):
// CommitFinalizationTx for the two successes, RecordEvaluationTx for
// blocked and reconciliation_required (recorded as reconciliation_deferred:
// the switch that would enter reconciliation_required stays off while the
// resolution command chain is absent, issue 15).
type BillingLedger struct {
	// Commit are the commit options (tests inject failures after each write).
	Commit billing.CommitOpts
}

// CommitTx commits a success decision and, in the same transaction, opens
// one settlement catch-up fence per manifest dimension at the input it
// settled (ADR-031: the successful finalization creates them; BI-3).
func (l BillingLedger) CommitTx(ctx context.Context, tx pgx.Tx, w Work, ev *Evaluation) error {
	d := ev.Decision
	res, err := billing.CommitFinalizationTx(ctx, tx, billing.Decision{
		FenceID: w.FenceID, WorkGeneration: w.Generation, OperationID: w.OperationID, Outcome: d.Outcome,
		SettledAmount: d.SettledAmount, ReleasedAmount: d.ReleasedAmount,
		InputManifest: ev.Manifest.Manifest, ValidationBundle: ev.Bundle.Bundle, DecisionObject: d.Decision,
	}, l.Commit)
	if err != nil {
		return err
	}
	m := ev.Manifest
	dims := make([]catchup.OpenDimension, 0, len(m.Dimensions))
	for _, x := range m.Dimensions {
		dims = append(dims, catchup.OpenDimension{
			Dimension: contract.SettlementDimension{BillingReservationID: m.BillingReservationID, BillingAccountID: m.BillingAccountID,
				RunID: m.RunID, RunStepID: x.RunStepID, ExecutionAttemptID: x.ExecutionAttemptID, ChargeDimensionKey: x.ChargeDimensionKey,
				EconomicIdentity: envelope.SettlementEconomicIdentityV1{Kind: x.EconomicIdentity.Kind, EntitlementKey: x.EconomicIdentity.EntitlementKey,
					Unit: x.EconomicIdentity.Unit, Currency: x.EconomicIdentity.Currency}},
			SettledInput:  contract.SettlementInput{Snapshot: x.SettlementInput, StateVersion: x.SettlementStateVer},
			SettledAmount: x.TargetAmount,
		})
	}
	if len(dims) == 0 {
		return nil
	}
	return catchup.OpenFencesTx(ctx, tx, catchup.OpenParams{
		Tenant:        catchup.Tenant{Kind: m.Tenant.Kind, ID: m.Tenant.TenantID, WorkspaceID: m.Tenant.WorkspaceID, ProjectID: m.Tenant.ProjectID},
		CorrelationID: ev.CorrelationID, FinalizationCommitted: res.Fact.Committed, FinalizationEventID: res.EventID,
		Dimensions: dims, Now: res.Fact.CommittedAt,
	})
}

// RecordTx records an evaluation-only decision with its visible reason.
func (l BillingLedger) RecordTx(ctx context.Context, tx pgx.Tx, w Work, ev *Evaluation) error {
	d := ev.Decision
	outcome := billing.EvaluationBlocked
	if d.Outcome == contract.DecisionReconciliationRequired {
		outcome = billing.EvaluationReconciliationDeferred
	}
	q := d.Decision
	_, err := billing.RecordEvaluationTx(ctx, tx, billing.Evaluation{
		FenceID: w.FenceID, WorkGeneration: w.Generation, OperationID: w.OperationID, Outcome: outcome,
		ReasonCode: d.ReasonCode, DecisionObject: &q,
		ReasonDetail: fmt.Sprintf("%s over input manifest %s (%d dimensions, target %s of %s reserved)",
			d.Outcome, ev.Manifest.Manifest.Ref, len(ev.Manifest.Dimensions), ev.Manifest.TargetTotal, d.ReservedAmount),
	})
	return err
}
