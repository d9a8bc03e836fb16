package finalization

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	contract "github.com/oceanway/core/contracts/billing"
	"github.com/oceanway/core/contracts/envelope"
	"github.com/oceanway/core/contracts/strict"
	"github.com/oceanway/core/internal/billing"
	"github.com/oceanway/core/internal/billing/catchup"
	"github.com/oceanway/core/internal/ownerread/operationsread"
)

// BillingLedger commits through the Billing core (internal/billing):
// CommitFinalizationTx for the two successes, RecordEvaluationTx for
// blocked, and for reconciliation_required either
// RecordReconciliationTx (with Cases: the fence enters the case generation
// Operations reserved) or, without Cases, RecordEvaluationTx as
// reconciliation_deferred (the fence waits with its reason).
type BillingLedger struct {
	// Commit are the commit options (tests inject failures after each write).
	Commit billing.CommitOpts
	// Cases is Operations' case identity primitive; nil keeps
	// reconciliation_required off (ADR-031 rollout gate 5: only with the
	// resolution chain that is its exit).
	Cases operationsread.CaseIdentities
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
	q := d.Decision
	detail := fmt.Sprintf("%s over input manifest %s (%d dimensions, target %s of %s reserved)",
		d.Outcome, ev.Manifest.Manifest.Ref, len(ev.Manifest.Dimensions), ev.Manifest.TargetTotal, d.ReservedAmount)
	if d.Outcome == contract.DecisionReconciliationRequired && l.Cases != nil {
		return l.enterCase(ctx, tx, w, q, d.ReasonCode, detail)
	}
	outcome := billing.EvaluationBlocked
	if d.Outcome == contract.DecisionReconciliationRequired {
		outcome = billing.EvaluationReconciliationDeferred
	}
	_, err := billing.RecordEvaluationTx(ctx, tx, billing.Evaluation{
		FenceID: w.FenceID, WorkGeneration: w.Generation, OperationID: w.OperationID, Outcome: outcome,
		ReasonCode: d.ReasonCode, DecisionObject: &q, ReasonDetail: detail,
	})
	return err
}

// enterCase reserves the fence's next case identity with Operations (its
// own transaction there: a lost response re-reads the same identity, and a
// generation that loses the fence leaves it to the winner), then enters
// reconciliation_required in the worker's transaction.
func (l BillingLedger) enterCase(ctx context.Context, tx pgx.Tx, w Work, decision strict.Quadruple, reason, detail string) error {
	scope, err := billing.NextCaseScopeTx(ctx, tx, w.FenceID)
	if err != nil {
		return err
	}
	id, err := l.Cases.ReserveFinalizationCaseIdentity(ctx, scope)
	if err != nil {
		return fmt.Errorf("reserve case identity of fence %s generation %d: %w", w.FenceID, scope.Generation, err)
	}
	_, err = billing.RecordReconciliationTx(ctx, tx, billing.Reconciliation{
		FenceID: w.FenceID, WorkGeneration: w.Generation, OperationID: w.OperationID,
		ReasonCode: reason, ReasonDetail: detail, Decision: decision, Case: id,
	})
	return err
}
