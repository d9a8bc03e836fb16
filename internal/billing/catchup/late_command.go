package catchup

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgerrcode"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	billingc "github.com/oceanway/core/contracts/billing"
	"github.com/oceanway/core/contracts/envelope"
	"github.com/oceanway/core/contracts/meterfacts"
	"github.com/oceanway/core/contracts/reconciliation"
	"github.com/oceanway/core/contracts/strict"
	"github.com/oceanway/core/internal/boundary"
	"github.com/oceanway/core/internal/db"
	"github.com/oceanway/core/internal/release"
)

// SQLSTATEs of the late settlement command's guards (migration 00048).
const (
	CodeFundingAccountForward = "BC014"
	CodeLateResultOffFence    = "BC015"
	CodeLateResultUnproven    = "BC016"
	CodeLateCaseForward       = "BC017"
)

// storedLate is a committed late result with its applied fact.
type storedLate struct {
	Result  *reconciliation.LateResult
	Applied *reconciliation.CaseResolutionApplied
}

func selectLateResult(ctx context.Context, q db.Executor, op string) (*storedLate, error) {
	var resBody, appBody string
	err := q.QueryRow(ctx, `SELECT r.result_body, x.applied_body FROM billing.late_settlement_command_results r
		JOIN billing.late_settlement_exposure_resolutions x ON x.command_operation_id = r.command_operation_id
		WHERE r.command_operation_id = $1`, op).Scan(&resBody, &appBody)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read late settlement command result: %w", err)
	}
	res, err := reconciliation.DecodeLateResult([]byte(resBody))
	if err != nil {
		return nil, fmt.Errorf("%w: stored late result %s: %w", ErrConflict, op, err)
	}
	app, err := reconciliation.DecodeCaseResolutionApplied([]byte(appBody))
	if err != nil {
		return nil, fmt.Errorf("%w: stored case resolution of %s: %w", ErrConflict, op, err)
	}
	return &storedLate{Result: res, Applied: app}, nil
}

// replay compares a committed result with cmd: the same candidate,
// decision, grant and funding decision is the first outcome (Replayed);
// anything else is ErrLateCommandConflict.
func (s *storedLate) replay(cmd LateSettlementCommand) (LateSettlementOutcome, error) {
	r := s.Result
	if cmd.Candidate == nil || cmd.Funding == nil || r.Candidate != cmd.Candidate.Candidate || r.Decision != cmd.Decision.Decision ||
		r.GrantSHA256 != reconciliation.GrantSHA256(cmd.Grant) || r.FundingDecision != cmd.Funding.Decision ||
		r.FundingDecisionJTI != cmd.Funding.JTI {
		return LateSettlementOutcome{}, fmt.Errorf("%w: operation %s", ErrLateCommandConflict, r.CommandOperationID)
	}
	return LateSettlementOutcome{Result: r, Applied: s.Applied, Replayed: true}, nil
}

// ApplyLateSettlementCommand applies a granted, funded late settlement
// command (ADR-031), operation first: a result already committed under the
// decision's command operation is compared in full and returned (Replayed;
// an expired grant or funding decision does not matter then), another
// command under it is ErrLateCommandConflict. Otherwise the grant must
// verify (Core's key, strict late claims, valid now) and bind exactly the
// candidate and decision, the funding decision must be Billing's stored
// one for the operation and fund exactly the exposure (valid now), and
// Metering must answer the exposure's settlement input current for purpose
// late_settlement_command under the command operation
// (ErrSettlementInputNotCurrent, nothing written). Then one transaction,
// under the dimension's catch-up lock: the exposure still the latest open
// one, its generation resolving, both JTIs consumed (ErrJTIConsumed), the
// account's funding source revision moved (a stale decision is
// ErrFundingRefused), LateSettlementCommandResult@1, the post-release
// adjustment (billing.post_late_settlement_adjustment), the exposure's
// BillingCaseResolutionApplied@1, the generation resolved, both events, and
// the fence's settled state advanced one revision with a successor catch-up
// Work (an in-flight worker attempt is superseded).
func (l *LateCommands) ApplyLateSettlementCommand(ctx context.Context, cmd LateSettlementCommand) (LateSettlementOutcome, error) {
	if err := sealedDecision(cmd.Decision); err != nil {
		return LateSettlementOutcome{}, err
	}
	if cmd.Candidate == nil || cmd.Funding == nil || cmd.Grant == "" {
		return LateSettlementOutcome{}, fmt.Errorf("%w: the late command needs a grant, a candidate and a funding decision", ErrInvalid)
	}
	if l.Grants == nil || l.Metering == nil {
		return LateSettlementOutcome{}, errors.New("billing: late commands need the grant verifier and Metering")
	}
	now := cmd.Now
	if now.IsZero() {
		now = l.now()
	}
	op := cmd.Decision.CommandOperationID()
	var first *storedLate
	var exposure *billingc.LateSettlementExposure
	if err := db.WithTx(ctx, l.Pool, func(ctx context.Context, tx pgx.Tx) error {
		var err error
		if first, err = selectLateResult(ctx, tx, op); err != nil || first != nil {
			return err
		}
		exposure, err = readExposure(ctx, tx, cmd.Decision.Exposure.LateSettlementExposureID)
		return err
	}); err != nil {
		return LateSettlementOutcome{}, err
	}
	if first != nil {
		return first.replay(cmd)
	}
	claims, err := l.Grants.VerifyLateGrant(cmd.Grant)
	if err != nil {
		return LateSettlementOutcome{}, fmt.Errorf("%w: %w", ErrLateGrant, err)
	}
	if now.Before(claims.NotBefore) || !now.Before(claims.ExpiresAt) {
		return LateSettlementOutcome{}, fmt.Errorf("%w: not valid at %s", ErrLateGrant, strict.FormatTimestamp(now))
	}
	if err := reconciliation.CheckLateGrant(claims, cmd.Candidate, cmd.Decision); err != nil {
		return LateSettlementOutcome{}, fmt.Errorf("%w: %w", ErrLateGrant, err)
	}
	if claims.JTI == cmd.Funding.JTI {
		return LateSettlementOutcome{}, fmt.Errorf("%w: the grant and the funding decision share jti %s", ErrJTIConsumed, claims.JTI)
	}
	if err := reconciliation.CheckFundingDecision(cmd.Funding, cmd.Decision, exposure, now); err != nil {
		return LateSettlementOutcome{}, fmt.Errorf("%w: %w", ErrFundingRefused, err)
	}
	v, err := l.Metering.ValidateSettlementInputCurrent(ctx, ValidationRequest{Purpose: meterfacts.PurposeLateSettlementCommand,
		OperationID: op, SettlementDimensionID: exposure.Dimension.SettlementDimensionID(), Input: exposure.SettlementInput,
		BasisDigest: exposure.Exposure.Digested()})
	if err != nil {
		return LateSettlementOutcome{}, fmt.Errorf("late settlement command %s: validate settlement input: %w", op, err)
	}
	if !v.Current {
		return LateSettlementOutcome{}, fmt.Errorf("%w: exposure %s validated v%d, current is v%d", ErrSettlementInputNotCurrent,
			exposure.ExposureID(), exposure.SettlementInput.StateVersion, v.CurrentInput.StateVersion)
	}
	out, err := db.WithTxV(ctx, l.Pool, func(ctx context.Context, tx pgx.Tx) (LateSettlementOutcome, error) {
		return l.commit(ctx, tx, cmd, claims, v.Receipt, now)
	})
	var pg *pgconn.PgError
	if errors.As(err, &pg) && pg.Code == pgerrcode.UniqueViolation {
		// A concurrent command consumed a jti first (the operation's own
		// replay is found under the lock, so only another command's
		// consumption gets here).
		return LateSettlementOutcome{}, fmt.Errorf("%w: %s", ErrJTIConsumed, pg.ConstraintName)
	}
	return out, err
}

func readExposure(ctx context.Context, tx pgx.Tx, id string) (*billingc.LateSettlementExposure, error) {
	var body string
	err := tx.QueryRow(ctx, `SELECT exposure_body FROM billing.late_settlement_exposures
		WHERE late_settlement_exposure_id = $1`, id).Scan(&body)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("%w: exposure %s is unknown", ErrExposureNotOpen, id)
	}
	if err != nil {
		return nil, fmt.Errorf("read late settlement exposure: %w", err)
	}
	e, err := billingc.DecodeLateSettlementExposure([]byte(body))
	if err != nil {
		return nil, fmt.Errorf("%w: stored exposure %s: %w", ErrConflict, id, err)
	}
	return e, nil
}

// commit is the command's one ledger transaction.
func (l *LateCommands) commit(ctx context.Context, tx pgx.Tx, cmd LateSettlementCommand, claims *reconciliation.LateGrantClaims,
	receipt strict.Quadruple, now time.Time) (LateSettlementOutcome, error) {
	dec, fd := cmd.Decision, cmd.Funding
	op := dec.CommandOperationID()
	dimID := dec.Case.Dimension.SettlementDimensionID()
	if err := lockCatchUpDimension(ctx, tx, dimID); err != nil {
		return LateSettlementOutcome{}, err
	}
	f, err := selectCatchUpFence(ctx, tx, dimID)
	if err != nil {
		return LateSettlementOutcome{}, err
	}
	if s, err := selectLateResult(ctx, tx, op); err != nil || s != nil {
		if err != nil {
			return LateSettlementOutcome{}, err
		}
		return s.replay(cmd)
	}
	var consumed bool
	if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM billing.late_consumed_grants WHERE grant_jti = $1)
		OR EXISTS (SELECT 1 FROM billing.late_consumed_funding_jtis WHERE funding_decision_jti = $2)
		OR EXISTS (SELECT 1 FROM billing.consumed_command_grants WHERE grant_jti = $1)`, claims.JTI, fd.JTI).Scan(&consumed); err != nil {
		return LateSettlementOutcome{}, fmt.Errorf("look up consumed jtis: %w", err)
	}
	if consumed {
		return LateSettlementOutcome{}, fmt.Errorf("%w: grant %s or funding decision %s", ErrJTIConsumed, claims.JTI, fd.JTI)
	}
	stored, err := storedFunding(ctx, tx, op)
	if err != nil {
		return LateSettlementOutcome{}, err
	}
	if stored == nil || stored.Decision != fd.Decision || stored.JTI != fd.JTI {
		return LateSettlementOutcome{}, fmt.Errorf("%w: not Billing's funding decision for operation %s", ErrFundingRefused, op)
	}
	s, state, err := openExposureOf(ctx, tx, dec.Case, dec.Exposure)
	if err != nil {
		return LateSettlementOutcome{}, err
	}
	if state != LateCaseResolving {
		return LateSettlementOutcome{}, fmt.Errorf("%w: case generation %d is %s", ErrLateCaseGeneration, dec.Case.CaseGeneration, state)
	}
	e := s.Exposure
	tag, err := tx.Exec(ctx, `UPDATE billing.funding_accounts SET source_revision = source_revision + 1, updated_at = $3
		WHERE billing_account_id = $1 AND source_revision = $2`, e.Dimension.BillingAccountID, fd.BillingAccountSourceRevision, now)
	if err != nil {
		return LateSettlementOutcome{}, fmt.Errorf("move funding account: %w", err)
	}
	if tag.RowsAffected() != 1 {
		return LateSettlementOutcome{}, fmt.Errorf("%w: the account's funding source moved past revision %d", ErrFundingRefused,
			fd.BillingAccountSourceRevision)
	}
	grantSHA := reconciliation.GrantSHA256(cmd.Grant)
	if _, err := tx.Exec(ctx, `INSERT INTO billing.late_consumed_grants (grant_jti, grant_sha256, command_operation_id, consumed_at)
		VALUES ($1, $2, $3, $4)`, claims.JTI, grantSHA, op, now); err != nil {
		return LateSettlementOutcome{}, fmt.Errorf("consume grant jti: %w", err)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO billing.late_consumed_funding_jtis (funding_decision_jti, command_operation_id, consumed_at)
		VALUES ($1, $2, $3)`, fd.JTI, op, now); err != nil {
		return LateSettlementOutcome{}, fmt.Errorf("consume funding decision jti: %w", err)
	}
	after, err := addAmounts(f.SettledAmount, fd.FundingAmount)
	if err != nil {
		return LateSettlementOutcome{}, fmt.Errorf("%w: settled amount: %w", ErrConflict, err)
	}
	group := LatePostingGroupID(op)
	res := &reconciliation.LateResult{CommandOperationID: op, CommandRequest: claims.CommandRequest, Candidate: claims.Candidate,
		Decision: claims.Decision, ActorWorkforcePrincipalID: claims.Subject, GrantSHA256: grantSHA, GrantJTI: claims.JTI,
		FundingDecisionJTI: fd.JTI, FundingDecision: fd.Decision, FundingPolicyRevision: fd.FundingPolicyRevision,
		BillingAccountSourceRevision: fd.BillingAccountSourceRevision, ValidationReceipt: receipt, SettlementInput: e.SettlementInput,
		Case: dec.Case, Exposure: dec.Exposure, LedgerPostingGroupID: group, AdjustmentAmount: fd.FundingAmount,
		LedgerEconomicIdentity: fd.EconomicIdentity, FromSettlementStateRevision: f.SettlementStateRevision,
		SettledAmountBefore: f.SettledAmount, SettledAmountAfter: after, CommittedAt: now}
	resBody, err := reconciliation.SealAddressed(res, "lscres-")
	if err != nil {
		return LateSettlementOutcome{}, fmt.Errorf("seal late settlement command result: %w", err)
	}
	app := &reconciliation.CaseResolutionApplied{Exposure: res.Exposure, Case: res.Case,
		ResolutionOperationID: reconciliation.CaseResolutionOperationID(res.Exposure.LateSettlementExposureID, res.Case.CaseGeneration),
		ResolutionSource:      reconciliation.ResolutionSourceLateCommand, Source: res.Result, CommandOperationID: op,
		ActorWorkforcePrincipalID: res.ActorWorkforcePrincipalID, AppliedAt: now}
	appBody, err := reconciliation.SealAddressed(app, "bcra-")
	if err != nil {
		return LateSettlementOutcome{}, fmt.Errorf("seal case resolution applied: %w", err)
	}
	tenant := f.tenant()
	resEventID, appEventID := uuid.Must(uuid.NewV7()).String(), uuid.Must(uuid.NewV7()).String()
	resEvent, err := envelope.Build(envelope.Envelope{EventID: resEventID, EventType: envelope.BillingLateCommandResultCommittedV1,
		EventSchemaVersion: "1", AggregateType: envelope.AggregateBillingSettlementDimension, AggregateID: dimID,
		AggregateRevision: res.FromSettlementStateRevision, TenantKind: tenant.Kind, TenantID: tenant.ID, WorkspaceID: tenant.WorkspaceID,
		ProjectID: tenant.ProjectID, CorrelationID: f.CorrelationID, CausationID: f.LastEventID, OperationID: op,
		Actor:      &envelope.Actor{Kind: envelope.ActorWorkforcePrincipal, WorkforcePrincipalID: res.ActorWorkforcePrincipalID},
		OccurredAt: now, Payload: res.CommittedPayload().Map()})
	if err != nil {
		return LateSettlementOutcome{}, fmt.Errorf("build late settlement command result event: %w", err)
	}
	appEvent, err := envelope.Build(envelope.Envelope{EventID: appEventID, EventType: envelope.BillingCaseResolutionAppliedV1,
		EventSchemaVersion: "1", AggregateType: envelope.AggregateBillingLateSettlementExposure,
		AggregateID: res.Exposure.LateSettlementExposureID, AggregateRevision: 2, TenantKind: tenant.Kind, TenantID: tenant.ID,
		WorkspaceID: tenant.WorkspaceID, ProjectID: tenant.ProjectID, CorrelationID: f.CorrelationID, CausationID: resEventID,
		OperationID: app.ResolutionOperationID, OccurredAt: now, Payload: app.AppliedPayload().Map()})
	if err != nil {
		return LateSettlementOutcome{}, fmt.Errorf("build case resolution applied event: %w", err)
	}
	resDigest, err := resEvent.Digest()
	if err != nil {
		return LateSettlementOutcome{}, err
	}
	appDigest, err := appEvent.Digest()
	if err != nil {
		return LateSettlementOutcome{}, err
	}
	rq, aq := res.Result, app.Applied
	if _, err := tx.Exec(ctx, `INSERT INTO billing.late_settlement_command_results (command_operation_id, settlement_dimension_id,
		    from_settlement_state_revision, to_settlement_state_revision, billing_reservation_id, billing_account_id,
		    late_settlement_exposure_id, case_generation, settled_amount_before, settled_amount_after, adjustment_amount, grant_jti,
		    funding_decision_jti, posting_group_id, result_ref, result_schema_version, result_digest_algorithm_version, result_digest,
		    result_body, event_id, event_envelope_sha256, committed_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9::numeric, $10::numeric, $11::numeric, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22)`,
		op, dimID, res.FromSettlementStateRevision, res.ToSettlementStateRevision(), e.Dimension.BillingReservationID,
		e.Dimension.BillingAccountID, res.Exposure.LateSettlementExposureID, res.Case.CaseGeneration, res.SettledAmountBefore,
		res.SettledAmountAfter, res.AdjustmentAmount, res.GrantJTI, res.FundingDecisionJTI, group, rq.Ref, rq.SchemaVersion,
		string(rq.DigestAlgorithmVersion), rq.Digest, string(resBody), resEventID, resDigest.Value, now); err != nil {
		return LateSettlementOutcome{}, fmt.Errorf("insert late settlement command result: %w", err)
	}
	if _, err := tx.Exec(ctx, `SELECT billing.post_late_settlement_adjustment($1, $2)`, op, group); err != nil {
		return LateSettlementOutcome{}, fmt.Errorf("post late settlement adjustment: %w", err)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO billing.late_settlement_exposure_resolutions (late_settlement_exposure_id,
		    settlement_dimension_id, case_generation, resolution_operation_id, resolution_source, command_operation_id,
		    applied_ref, applied_schema_version, applied_digest_algorithm_version, applied_digest, applied_body, event_id,
		    event_envelope_sha256, applied_at)
		VALUES ($1, $2, $3, $4, 'late_settlement_command', $5, $6, $7, $8, $9, $10, $11, $12, $13)`,
		res.Exposure.LateSettlementExposureID, dimID, res.Case.CaseGeneration, app.ResolutionOperationID, op, aq.Ref,
		aq.SchemaVersion, string(aq.DigestAlgorithmVersion), aq.Digest, string(appBody), appEventID, appDigest.Value, now); err != nil {
		return LateSettlementOutcome{}, fmt.Errorf("insert case resolution applied: %w", err)
	}
	if _, err := tx.Exec(ctx, `UPDATE billing.late_settlement_cases SET state = 'resolved'
		WHERE settlement_dimension_id = $1 AND case_generation = $2`, dimID, res.Case.CaseGeneration); err != nil {
		return LateSettlementOutcome{}, fmt.Errorf("resolve late settlement case: %w", err)
	}
	for _, ev := range []*envelope.Envelope{resEvent, appEvent} {
		if _, err := release.ForProducer(boundary.Core).AppendTx(ctx, tx, *ev); err != nil {
			return LateSettlementOutcome{}, fmt.Errorf("append %s: %w", ev.EventType, err)
		}
	}
	c := f.change()
	c.StateRevision, c.SettledAmount, c.LastEventID = res.ToSettlementStateRevision(), res.SettledAmountAfter, resEventID
	if _, err := successorCatchUpWork(ctx, tx, f, &c, now); err != nil {
		return LateSettlementOutcome{}, err
	}
	if _, err := updateCatchUpFence(ctx, tx, f, c, now); err != nil {
		return LateSettlementOutcome{}, err
	}
	return LateSettlementOutcome{Result: res, Applied: app}, nil
}
