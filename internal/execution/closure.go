package execution

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/oceanway/core/contracts/digest"
	"github.com/oceanway/core/contracts/envelope"
	contract "github.com/oceanway/core/contracts/execution"
	"github.com/oceanway/core/contracts/strict"
	"github.com/oceanway/core/internal/boundary"
	"github.com/oceanway/core/internal/db"
	"github.com/oceanway/core/internal/execution/dbsqlc"
	"github.com/oceanway/core/internal/outbox"
	"github.com/oceanway/core/internal/release"
)

// Errors of CloseRun.
var (
	// ErrAlreadyClosed: the run's attempt set is closed; a second closure is refused.
	ErrAlreadyClosed = errors.New("execution: run attempts already closed")
	// ErrEligibilityMissing: an attempt has no eligibility fact yet.
	ErrEligibilityMissing = errors.New("execution: attempt without eligibility fact")
)

// Closure is a committed closure.
type Closure struct {
	AttemptSet     *contract.RunAttemptSetManifest
	AttemptSetBody []byte
	Fact           *contract.RunExecutionFinalizationFact
	FactBody       []byte
	EventID        string
}

// ClosureOperationID is the run's one closure operation id.
func ClosureOperationID(runID string) string {
	return envelope.DeriveID(derivationClosureOperation, map[string]any{"runId": runID})
}

// CloseRun closes a run's attempt set (EX-2), ADR-031's linearization point,
// in one transaction: lock the run (FOR UPDATE: attempt creation and
// eligibility hold a share lock, so they either committed before or see
// the closed run), lock every attempt and its eligibility fact (each attempt
// must have one), write RunAttemptSetManifest@1 sorted by (runStepId,
// executionAttemptId), CAS accepting_attempts → attempts_closed, write
// RunExecutionFinalizationFact@1 and append execution.run-finalization.closed@1
// with its billing_finalization_coordinator delivery. Any failure rolls all
// of it back. A second closure is ErrAlreadyClosed.
func (s *Service) CloseRun(ctx context.Context, runID string) (Closure, error) {
	if !strict.IsUUID(runID) {
		return Closure{}, fmt.Errorf("close run: %w: %q", ErrRunNotFound, runID)
	}
	res, err := db.WithTxV(ctx, s.pool, func(ctx context.Context, tx pgx.Tx) (Closure, error) {
		return s.closeTx(ctx, tx, runID)
	})
	if err != nil {
		return Closure{}, outbox.TranslateError(err)
	}
	return res, nil
}

func (s *Service) closeTx(ctx context.Context, tx pgx.Tx, runID string) (Closure, error) {
	row, err := queries.RunStateForUpdate(ctx, tx, runID)
	if err != nil {
		if errors.Is(db.NotFound(err), db.ErrNotFound) {
			return Closure{}, fmt.Errorf("close run: %w: %s", ErrRunNotFound, runID)
		}
		return Closure{}, fmt.Errorf("close run: lock run: %w", err)
	}
	run := runStateOf(row)
	if run.State != StateAcceptingAttempts {
		return Closure{}, fmt.Errorf("close run %s: %w", runID, ErrAlreadyClosed)
	}
	rows, err := queries.ClosureAttempts(ctx, tx, runID)
	if err != nil {
		return Closure{}, fmt.Errorf("close run: lock attempts: %w", err)
	}
	if _, err := queries.EligibilityLockByRun(ctx, tx, runID); err != nil {
		return Closure{}, fmt.Errorf("close run: lock eligibility facts: %w", err)
	}
	items := make([]contract.AttemptSetItem, 0, len(rows))
	for _, r := range rows {
		if r.ExecutionEligibilityFactRef == nil {
			return Closure{}, fmt.Errorf("close run %s: %w: %s", runID, ErrEligibilityMissing, r.ExecutionAttemptID)
		}
		items = append(items, contract.AttemptSetItem{
			RunStepID: r.RunStepID, ExecutionAttemptID: r.ExecutionAttemptID,
			AttemptManifest: quadOf(r.AttemptExecutionManifestRef, r.AttemptExecutionManifestSchemaVersion,
				r.AttemptExecutionManifestDigestAlgorithmVersion, r.AttemptExecutionManifestDigest),
			EligibilityFact: quadOf(*r.ExecutionEligibilityFactRef, *r.ExecutionEligibilityFactSchemaVersion,
				*r.ExecutionEligibilityFactDigestAlgorithmVersion, *r.ExecutionEligibilityFactDigest),
			DispatchDisposition: *r.DispatchDisposition,
		})
	}
	contract.SortAttempts(items)
	now := time.Now().UTC().Truncate(time.Microsecond)
	closure := contract.RunClosure{Tenant: run.Tenant, BillingAccountID: run.BillingAccountID,
		BillingReservationID: run.BillingReservationID, RunID: runID, RunAdmissionManifest: run.Manifest}

	set := &contract.RunAttemptSetManifest{Manifest: strict.Quadruple{Ref: "ras-" + runID}, RunClosure: closure, Attempts: items, ClosedAt: now}
	setBody, err := contract.Seal(set)
	if err != nil {
		return Closure{}, fmt.Errorf("seal attempt set: %w", err)
	}
	sq := set.Manifest
	if err := queries.AttemptSetInsert(ctx, tx, dbsqlc.AttemptSetInsertParams{
		RunID: runID, AttemptSetManifestRef: sq.Ref, AttemptSetManifestSchemaVersion: sq.SchemaVersion,
		AttemptSetManifestDigestAlgorithmVersion: string(sq.DigestAlgorithmVersion), AttemptSetManifestDigest: sq.Digest,
		AttemptCount: int64(len(items)), ManifestBody: string(setBody), ClosedAt: now,
	}); err != nil {
		return Closure{}, fmt.Errorf("insert attempt set: %w", err)
	}
	if err := s.step(ctx, tx, "attempt_set"); err != nil {
		return Closure{}, err
	}
	n, err := queries.RunCloseCAS(ctx, tx, dbsqlc.RunCloseCASParams{RunID: runID, ClosedAt: &now})
	if err != nil {
		return Closure{}, fmt.Errorf("close run: CAS: %w", err)
	}
	if n != 1 {
		return Closure{}, fmt.Errorf("close run %s: %w (CAS matched %d rows)", runID, ErrAlreadyClosed, n)
	}
	if err := s.step(ctx, tx, "cas"); err != nil {
		return Closure{}, err
	}
	opID := ClosureOperationID(runID)
	fact := &contract.RunExecutionFinalizationFact{
		Fact: strict.Quadruple{Ref: "ref-" + runID}, RunClosure: closure, Token: run.Token, ClosureOperationID: opID,
		StateVersion: run.StateVersion + 1, AttemptSet: sq, Attempts: items, ClosedAt: now,
	}
	factBody, err := contract.Seal(fact)
	if err != nil {
		return Closure{}, fmt.Errorf("seal finalization fact: %w", err)
	}
	eventID := outbox.NewEventIDs(1)[0]
	fq := fact.Fact
	if err := queries.FinalizationInsert(ctx, tx, dbsqlc.FinalizationInsertParams{
		RunID: runID, RunExecutionFinalizationRef: fq.Ref, RunExecutionFinalizationSchemaVersion: fq.SchemaVersion,
		RunExecutionFinalizationDigestAlgorithmVersion: string(fq.DigestAlgorithmVersion), RunExecutionFinalizationDigest: fq.Digest,
		RunExecutionFinalizationStateVersion: fact.StateVersion, ClosureOperationID: opID, AttemptCount: int64(len(items)),
		FactBody: string(factBody), EventID: eventID, ClosedAt: now,
	}); err != nil {
		return Closure{}, fmt.Errorf("insert finalization fact: %w", err)
	}
	if err := s.step(ctx, tx, "finalization"); err != nil {
		return Closure{}, err
	}
	p := envelope.ExecutionRunFinalizationClosedV1Payload{
		BillingReservationID: run.BillingReservationID, BillingAccountID: run.BillingAccountID, RunID: runID,
		ClosureOperationID: opID, RunExecutionFinalizationStateVersion: fact.StateVersion, AttemptCount: int64(len(items)),
	}
	p.SetRunAdmissionManifest(run.Manifest)
	p.SetRunExecutionFinalization(fq)
	p.SetAttemptSetManifest(sq)
	ev := runEnvelope(run, eventID, envelope.ExecutionRunFinalizationClosedV1, envelope.AggregateRun, runID, opID, now, p.Map())
	if _, err := releaseAppend(ctx, tx, ev); err != nil {
		return Closure{}, fmt.Errorf("append closure event: %w", err)
	}
	if err := s.step(ctx, tx, "append"); err != nil {
		return Closure{}, err
	}
	return Closure{AttemptSet: set, AttemptSetBody: setBody, Fact: fact, FactBody: factBody, EventID: eventID}, nil
}

func quadOf(ref, schemaVersion, alg, value string) strict.Quadruple {
	return strict.Quadruple{Ref: ref, SchemaVersion: schemaVersion, DigestAlgorithmVersion: digestAlg(alg), Digest: value}
}

func digestAlg(s string) digest.Algorithm { return digest.Algorithm(s) }

// releaseAppend appends under the release policy in the caller's transaction.
var releaseAppend = release.ForProducer(boundary.Execution).AppendTx
