package execution

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgerrcode"
	"github.com/jackc/pgx/v5"

	"github.com/oceanway/core/contracts/envelope"
	contract "github.com/oceanway/core/contracts/execution"
	"github.com/oceanway/core/contracts/strict"
	"github.com/oceanway/core/internal/boundary"
	"github.com/oceanway/core/internal/db"
	"github.com/oceanway/core/internal/execution/dbsqlc"
	"github.com/oceanway/core/internal/outbox"
	"github.com/oceanway/core/internal/ownerread"
	"github.com/oceanway/core/internal/ownerread/gatewayread"
	"github.com/oceanway/core/internal/release"
)

// Errors of FinalizeEligibility.
var (
	ErrInvalidEligibility = errors.New("execution: invalid eligibility request")
	// ErrEligibilityExists: the attempt has its eligibility fact already
	// with another disposition (the fact is unique per attempt).
	ErrEligibilityExists = errors.New("execution: attempt eligibility already finalized differently")
	// ErrNotProvenRejected: not_dispatched was asked but the Gateway does not
	// prove the slot terminal_rejected (a bound or reserved slot, or an
	// unknown one, may have a provider side effect: never not_dispatched).
	ErrNotProvenRejected = errors.New("execution: gateway does not prove the slot terminal_rejected")
	// ErrGatewayReadUnavailable: the Gateway owner read failed (retry).
	ErrGatewayReadUnavailable = errors.New("execution: gateway slot read unavailable")
)

// GatewayReads is the Gateway's readDispatchSlot@1 as Execution calls it.
type GatewayReads interface {
	ReadDispatchSlot(ctx context.Context, req gatewayread.DispatchSlotRead) (gatewayread.SlotResult, error)
}

// SetGatewayReads wires the Gateway owner read (needed for not_dispatched).
func (s *Service) SetGatewayReads(g GatewayReads) { s.gateway = g }

// Eligibility is a finalized eligibility.
type Eligibility struct {
	Fact          *contract.ExecutionEligibilityFact
	Body          []byte
	NotDispatched *contract.AttemptNotDispatchedFact
	EventID       string
	// Replayed is true when the same eligibility existed already.
	Replayed bool
}

// derivations of the eligibility and closure operation ids.
const (
	derivationEligibilityOperation = "execution_attempt_eligibility_operation@1"
	derivationClosureOperation     = "execution_run_closure_operation@1"
)

// FinalizeEligibility appends the unique ExecutionEligibilityFact@1 of an
// attempt (EX-3) with execution.attempt-eligibility.finalized@1 and its
// metering delivery in one transaction. dispatched needs no proof (the
// provider side effect may have happened); not_dispatched is written only
// after the Gateway owner read answers found with the slot
// terminal_rejected, and first appends AttemptNotDispatchedFact@1 (GW-1).
// The same request again returns the original fact.
func (s *Service) FinalizeEligibility(ctx context.Context, attemptID, disposition string) (Eligibility, error) {
	if !strict.IsUUID(attemptID) || (disposition != contract.DispositionDispatched && disposition != contract.DispositionNotDispatched) {
		return Eligibility{}, fmt.Errorf("%w: attempt %q disposition %q", ErrInvalidEligibility, attemptID, disposition)
	}
	m, _, err := AttemptByID(ctx, s.pool, attemptID)
	if err != nil {
		if errors.Is(err, db.ErrNotFound) {
			return Eligibility{}, fmt.Errorf("%w: attempt %s not found", ErrInvalidEligibility, attemptID)
		}
		return Eligibility{}, err
	}
	var slot gatewayread.DispatchSlot
	if disposition == contract.DispositionNotDispatched {
		if slot, err = s.provenRejected(ctx, m); err != nil {
			return Eligibility{}, err
		}
	}
	res, err := db.WithTxV(ctx, s.pool, func(ctx context.Context, tx pgx.Tx) (Eligibility, error) {
		return s.finalizeTx(ctx, tx, m, disposition, slot)
	})
	if err != nil {
		return Eligibility{}, outbox.TranslateError(err)
	}
	return res, nil
}

// provenRejected asks the Gateway owner for the attempt's slot and accepts
// only found + terminal_rejected with a rejection quadruple.
func (s *Service) provenRejected(ctx context.Context, m *contract.AttemptExecutionManifest) (gatewayread.DispatchSlot, error) {
	if s.gateway == nil {
		return gatewayread.DispatchSlot{}, fmt.Errorf("%w: readDispatchSlot is not wired", ErrGatewayReadUnavailable)
	}
	ans, err := s.gateway.ReadDispatchSlot(ctx, gatewayread.DispatchSlotRead{
		ContractVersion: gatewayread.ReadDispatchSlotV1, Audience: gatewayread.AudienceExecutionEligibility,
		ExecutionAttemptID: m.ExecutionAttemptID, GatewayDeploymentID: m.GatewayDeploymentID, AttemptManifest: m.Manifest,
	})
	switch {
	case err != nil:
		return gatewayread.DispatchSlot{}, fmt.Errorf("%w: %w", ErrGatewayReadUnavailable, err)
	case ans.Answer != ownerread.Found:
		return gatewayread.DispatchSlot{}, fmt.Errorf("%w: slot read answered %s %s", ErrNotProvenRejected, ans.Answer, ans.Reason)
	case ans.Value.State != gatewayread.SlotTerminalRejected:
		return gatewayread.DispatchSlot{}, fmt.Errorf("%w: slot is %s", ErrNotProvenRejected, ans.Value.State)
	}
	if err := ans.Value.Rejection.Validate(); err != nil {
		return gatewayread.DispatchSlot{}, fmt.Errorf("%w: rejection quadruple: %w", ErrNotProvenRejected, err)
	}
	// The rejection fact itself is the evidence Execution stores with its
	// not-dispatched fact: it must recompute and name this attempt's slot.
	f, err := contract.DecodeGatewayPreBindingRejectionFact(ans.Value.RejectionBody)
	if err != nil {
		return gatewayread.DispatchSlot{}, fmt.Errorf("%w: rejection fact: %w", ErrNotProvenRejected, err)
	}
	want := contract.SlotKey{ExecutionAttemptID: m.ExecutionAttemptID, GatewayDeploymentID: m.GatewayDeploymentID, AttemptManifest: m.Manifest}
	if f.SlotKey != want || f.Fact != ans.Value.Rejection || f.ReasonCode != ans.Value.RejectionReasonCode {
		return gatewayread.DispatchSlot{}, fmt.Errorf("%w: rejection fact names another slot or differs from the answer", ErrNotProvenRejected)
	}
	return ans.Value, nil
}

func (s *Service) finalizeTx(ctx context.Context, tx pgx.Tx, m *contract.AttemptExecutionManifest, disposition string, slot gatewayread.DispatchSlot) (Eligibility, error) {
	row, err := queries.RunStateForShare(ctx, tx, m.RunID)
	if err != nil {
		return Eligibility{}, fmt.Errorf("finalize eligibility: lock run: %w", err)
	}
	run := runStateOf(row)
	if _, err := queries.AttemptForShare(ctx, tx, m.ExecutionAttemptID); err != nil {
		return Eligibility{}, fmt.Errorf("finalize eligibility: lock attempt: %w", err)
	}
	if existing, err := queries.EligibilityByAttempt(ctx, tx, m.ExecutionAttemptID); err == nil {
		// guard EX-3.eligibility-disposition-conflict
		if existing.DispatchDisposition != disposition {
			return Eligibility{}, fmt.Errorf("finalize eligibility %s: %w (%s)", m.ExecutionAttemptID, ErrEligibilityExists, existing.DispatchDisposition)
		}
		f, err := contract.DecodeExecutionEligibilityFact([]byte(existing.FactBody))
		if err != nil {
			return Eligibility{}, fmt.Errorf("stored eligibility %s: %w", m.ExecutionAttemptID, err)
		}
		return Eligibility{Fact: f, Body: []byte(existing.FactBody), EventID: existing.EventID, Replayed: true}, nil
	} else if !errors.Is(db.NotFound(err), db.ErrNotFound) {
		return Eligibility{}, fmt.Errorf("finalize eligibility: %w", err)
	}
	if run.State != StateAcceptingAttempts {
		// Unreachable through the service: closure requires every attempt's fact.
		return Eligibility{}, fmt.Errorf("finalize eligibility %s: %w", m.ExecutionAttemptID, ErrRunClosed)
	}
	now := time.Now().UTC().Truncate(time.Microsecond)
	out := Eligibility{}
	var notDispatchedID *string
	fact := &contract.ExecutionEligibilityFact{
		Fact: strict.Quadruple{Ref: "eef-" + m.ExecutionAttemptID}, BillingAccountID: run.BillingAccountID,
		BillingReservationID: run.BillingReservationID, RunID: m.RunID, RunStepID: m.RunStepID,
		ExecutionAttemptID: m.ExecutionAttemptID, RunAdmissionManifest: run.Manifest, AttemptManifest: m.Manifest,
		Disposition: disposition, FinalizedAt: now,
	}
	if disposition == contract.DispositionNotDispatched {
		nd := &contract.AttemptNotDispatchedFact{
			Fact: strict.Quadruple{Ref: "and-" + m.ExecutionAttemptID}, RunID: m.RunID, RunStepID: m.RunStepID,
			ExecutionAttemptID: m.ExecutionAttemptID, AttemptManifest: m.Manifest, GatewayDeploymentID: m.GatewayDeploymentID,
			Rejection: slot.Rejection, RejectionReasonCode: slot.RejectionReasonCode, RecordedAt: now,
		}
		body, err := contract.Seal(nd)
		if err != nil {
			return Eligibility{}, fmt.Errorf("seal not-dispatched fact: %w", err)
		}
		rq := slot.Rejection
		if err := queries.RejectionEvidenceInsert(ctx, tx, dbsqlc.RejectionEvidenceInsertParams{
			ExecutionAttemptID: m.ExecutionAttemptID, ReadContractVersion: gatewayread.ReadDispatchSlotV1, SlotState: slot.State,
			GatewayPreBindingRejectionFactRef: rq.Ref, GatewayPreBindingRejectionFactSchemaVersion: rq.SchemaVersion,
			GatewayPreBindingRejectionFactDigestAlgorithmVersion: string(rq.DigestAlgorithmVersion), GatewayPreBindingRejectionFactDigest: rq.Digest,
			RejectionReasonCode: slot.RejectionReasonCode, RejectionFactBody: string(slot.RejectionBody), ReceivedAt: now,
		}); err != nil {
			return Eligibility{}, fmt.Errorf("insert gateway rejection evidence: %w", err)
		}
		q := nd.Fact
		if err := queries.NotDispatchedInsert(ctx, tx, dbsqlc.NotDispatchedInsertParams{
			ExecutionAttemptID: m.ExecutionAttemptID, AttemptNotDispatchedFactRef: q.Ref, AttemptNotDispatchedFactSchemaVersion: q.SchemaVersion,
			AttemptNotDispatchedFactDigestAlgorithmVersion: string(q.DigestAlgorithmVersion), AttemptNotDispatchedFactDigest: q.Digest,
			GatewayPreBindingRejectionFactRef: slot.Rejection.Ref, FactBody: string(body), RecordedAt: now,
		}); err != nil {
			return Eligibility{}, fmt.Errorf("insert not-dispatched fact: %w", err)
		}
		if err := s.step(ctx, tx, "not_dispatched"); err != nil {
			return Eligibility{}, err
		}
		fact.NotDispatched = q
		out.NotDispatched = nd
		notDispatchedID = &m.ExecutionAttemptID
	}
	body, err := contract.Seal(fact)
	if err != nil {
		return Eligibility{}, fmt.Errorf("seal eligibility fact: %w", err)
	}
	eventID := outbox.NewEventIDs(1)[0]
	q := fact.Fact
	if err := queries.EligibilityInsert(ctx, tx, dbsqlc.EligibilityInsertParams{
		ExecutionAttemptID: m.ExecutionAttemptID, RunID: m.RunID, ExecutionEligibilityFactRef: q.Ref,
		ExecutionEligibilityFactSchemaVersion: q.SchemaVersion, ExecutionEligibilityFactDigestAlgorithmVersion: string(q.DigestAlgorithmVersion),
		ExecutionEligibilityFactDigest: q.Digest, DispatchDisposition: disposition, NotDispatchedExecutionAttemptID: notDispatchedID,
		FactBody: string(body), EventID: eventID, FinalizedAt: now,
	}); err != nil {
		if db.SQLState(err) == pgerrcode.UniqueViolation {
			return Eligibility{}, fmt.Errorf("finalize eligibility %s: %w: %w", m.ExecutionAttemptID, ErrEligibilityExists, err)
		}
		return Eligibility{}, fmt.Errorf("insert eligibility fact: %w", err)
	}
	if err := s.step(ctx, tx, "eligibility"); err != nil {
		return Eligibility{}, err
	}
	p := envelope.ExecutionAttemptEligibilityFinalizedV1Payload{
		BillingReservationID: run.BillingReservationID, BillingAccountID: run.BillingAccountID, RunID: m.RunID,
		RunStepID: m.RunStepID, ExecutionAttemptID: m.ExecutionAttemptID,
	}
	p.SetAttemptExecutionManifest(m.Manifest)
	p.SetExecutionEligibilityFact(q)
	ev := runEnvelope(run, eventID, envelope.ExecutionAttemptEligibilityFinalizedV1, envelope.AggregateExecutionAttempt, m.ExecutionAttemptID,
		envelope.DeriveID(derivationEligibilityOperation, map[string]any{"executionAttemptId": m.ExecutionAttemptID}), now, p.Map())
	if _, err := release.ForProducer(boundary.Execution).AppendTx(ctx, tx, ev); err != nil {
		return Eligibility{}, fmt.Errorf("append eligibility event: %w", err)
	}
	if err := s.step(ctx, tx, "append"); err != nil {
		return Eligibility{}, err
	}
	out.Fact, out.Body, out.EventID = fact, body, eventID
	return out, nil
}

// runEnvelope builds an Execution event of a run (tenant of the run,
// correlation = the run).
func runEnvelope(run RunState, eventID, eventType, aggType, aggID, operationID string, at time.Time, payload map[string]any) envelope.Envelope {
	return envelope.Envelope{
		EventID: eventID, EventType: eventType, EventSchemaVersion: "1",
		AggregateType: aggType, AggregateID: aggID, AggregateRevision: 1,
		TenantKind: run.Tenant.Kind, TenantID: run.Tenant.TenantID, WorkspaceID: run.Tenant.WorkspaceID, ProjectID: run.Tenant.ProjectID,
		CorrelationID: run.RunID, OperationID: operationID, OccurredAt: at, Payload: payload,
	}
}
