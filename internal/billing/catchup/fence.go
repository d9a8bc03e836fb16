package catchup

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	billingc "github.com/oceanway/core/contracts/billing"
	"github.com/oceanway/core/contracts/digest"
	"github.com/oceanway/core/contracts/envelope"
	"github.com/oceanway/core/contracts/jcs"
	"github.com/oceanway/core/contracts/strict"
	"github.com/oceanway/core/internal/db"
)

//go:embed sql/*.sql
var catchUpSQL embed.FS

var catchUpStatements = db.MustLoadStatements("billing/catchup", catchUpSQL, "sql")

var (
	qCatchUpLock               = catchUpStatements.Get("lock")
	qCatchUpWatermarkSelect    = catchUpStatements.Get("watermark_select")
	qCatchUpWatermarkInsert    = catchUpStatements.Get("watermark_insert")
	qCatchUpWatermarkAdvance   = catchUpStatements.Get("watermark_advance")
	qCatchUpFenceSelect        = catchUpStatements.Get("fence_select")
	qCatchUpFenceExists        = catchUpStatements.Get("fence_exists")
	qCatchUpFinishInsert       = catchUpStatements.Get("finish_insert")
	qCatchUpViewFences         = catchUpStatements.Get("view_fences")
	qCatchUpViewTransitions    = catchUpStatements.Get("view_transitions")
	qCatchUpViewExposures      = catchUpStatements.Get("view_exposures")
	qCatchUpViewOpenExposures  = catchUpStatements.Get("view_open_exposures")
	qCatchUpTransitionByRef    = catchUpStatements.Get("transition_by_ref")
	qCatchUpTransitionAt       = catchUpStatements.Get("transition_at")
	qCatchUpReservationState   = catchUpStatements.Get("reservation_state")
	qCatchUpFenceInsert        = catchUpStatements.Get("fence_insert")
	qCatchUpFenceUpdate        = catchUpStatements.Get("fence_update")
	qCatchUpBlockInsert        = catchUpStatements.Get("block_insert")
	qCatchUpBlockCount         = catchUpStatements.Get("block_count")
	qCatchUpWorkInsert         = catchUpStatements.Get("work_insert")
	qCatchUpWorkSelect         = catchUpStatements.Get("work_select")
	qCatchUpTransitionInsert   = catchUpStatements.Get("transition_insert")
	qCatchUpExposureInsert     = catchUpStatements.Get("exposure_insert")
	qCatchUpTransitionSelectTo = catchUpStatements.Get("transition_select_to")
	errCatchUpFenceRaceLost    = errors.New("billing: catch-up fence moved under the caller")
	errCatchUpNoFence          = errors.New("billing: dimension has no catch-up fence")
	errCatchUpNoWatermark      = errors.New("billing: dimension has no watermark")
	catchUpEconomicIdentities  = map[string]bool{"credits": true, "entitlement": true, "money": true}
)

// Errors of the catch-up API.
var (
	// ErrInvalid: a caller handed an open request that is not whole
	// (no dimension, a derived id or amount that does not hold).
	ErrInvalid = errors.New("billing: invalid settlement catch-up request")
	// ErrConflict: the stored fence or watermark contradicts the
	// request (another finalization, the same state version bound to
	// another snapshot).
	ErrConflict = errors.New("billing: settlement catch-up conflict")
)

// SQLSTATEs of the catch-up guards (migration 00020).
const (
	CodeInsertOnly        = "BC001"
	CodeWatermarkBackward = "BC002"
	CodeFenceGraph        = "BC003"
	CodeCaughtUpAhead     = "BC004"
	CodeExposureMissing   = "BC005"
	// CodeFenced (00024): a worker write whose fencing token is not
	// the latest attempt of its Work generation, or a token-less fence
	// update that is not the consumer's reopen.
	CodeFenced = "BC006"
	// CodeAttemptGraph (00024): an attempt that is not the next of
	// the fence's active, claimable generation.
	CodeAttemptGraph = "BC007"
	// CodeAttemptFinished (00040): a write with the token of an attempt
	// whose Work generation already finished: a spent token writes nothing.
	CodeAttemptFinished = "BC008"
	// CodeSettledWithoutTransition (00040): a fence's settled amount or
	// state revision moved without the transition that moves it.
	CodeSettledWithoutTransition = "BC009"
	// CodeTransitionOffFence (00040): a transition whose from revision,
	// settled amount before or Work is not its fence's current one.
	CodeTransitionOffFence = "BC010"
	// CodeTransitionUnproven (00040): a transition that does not commit
	// with its fence move (its revision, settled amount and event) and its
	// event.
	CodeTransitionUnproven = "BC011"
	// CodeClaimMoved (00042): a claim row moved in a way no claim, release,
	// renewal or fence follow moves it: parked at 'infinity' while its
	// fence is not caught up, made claimable while it is, a generation that
	// is not the fence's active one, an attempt number that is not the
	// generation's latest attempt (the Work would never be claimed again).
	CodeClaimMoved = "BC012"
)

// Tenant is the tenant the transition events carry.
type Tenant struct {
	Kind, ID, WorkspaceID, ProjectID string // ProjectID optional
}

// OpenDimension is one dimension the successful finalization settled.
type OpenDimension struct {
	Dimension billingc.SettlementDimension
	// SettledInput is the settlement input five-tuple the finalization
	// validated and settled for this dimension.
	SettledInput billingc.SettlementInput
	// SettledAmount is the dimension's settled target net amount (exact decimal).
	SettledAmount string
}

// OpenParams is what the successful finalization hands over.
type OpenParams struct {
	Tenant        Tenant
	CorrelationID string
	// FinalizationCommitted is the BillingFinalizationCommitted@1 quadruple
	// and FinalizationEventID the id of its billing.finalization.committed@1
	// event: the causation of each dimension's first transition.
	FinalizationCommitted strict.Quadruple
	FinalizationEventID   string
	Dimensions            []OpenDimension
	Now                   time.Time
}

// OpenFencesTx creates, inside the successful finalization's
// transaction, one catch-up fence per settled dimension with its first
// Work generation (cause finalization_committed), locking the dimension's
// watermark: the first Work verifies the highest input observed so far, or
// the settled one. Calling it again for the same finalization is a no-op;
// for another finalization it is ErrConflict.
func OpenFencesTx(ctx context.Context, tx pgx.Tx, p OpenParams) error {
	if err := p.validate(); err != nil {
		return err
	}
	dims := append([]OpenDimension(nil), p.Dimensions...)
	sort.Slice(dims, func(i, j int) bool {
		return dims[i].Dimension.SettlementDimensionID() < dims[j].Dimension.SettlementDimensionID()
	})
	for _, d := range dims {
		if err := openDimension(ctx, tx, p, d); err != nil {
			return fmt.Errorf("open settlement catch-up %s: %w", d.Dimension.SettlementDimensionID(), err)
		}
	}
	return nil
}

func (p OpenParams) validate() error {
	var problem string
	switch {
	case len(p.Dimensions) == 0:
		problem = "no dimension"
	case !strict.IsUUID(p.FinalizationEventID) || !strict.IsUUID(p.CorrelationID):
		problem = "finalization event and correlation ids must be UUIDs"
	case p.FinalizationCommitted.Validate() != nil:
		problem = "finalization committed quadruple is not whole"
	case !strict.IsUUID(p.Tenant.ID) || !strict.IsUUID(p.Tenant.WorkspaceID) || p.Tenant.Kind == "":
		problem = "tenant is not whole"
	case p.Now.IsZero():
		problem = "no time"
	}
	for _, d := range p.Dimensions {
		if problem != "" {
			break
		}
		if a, err := billingc.ParseAmount(d.SettledAmount); err != nil || a.Sign() < 0 {
			problem = "settled amount " + d.SettledAmount + " is not a non-negative decimal"
		} else if d.SettledInput.Snapshot.Validate() != nil || d.SettledInput.StateVersion < 1 {
			problem = "settled input is not a whole five-tuple"
		} else if !catchUpEconomicIdentities[d.Dimension.EconomicIdentity.Kind] {
			problem = "unknown economic identity " + d.Dimension.EconomicIdentity.Kind
		}
	}
	if problem != "" {
		return fmt.Errorf("%w: %s", ErrInvalid, problem)
	}
	return nil
}

func openDimension(ctx context.Context, tx pgx.Tx, p OpenParams, d OpenDimension) error {
	dimID := d.Dimension.SettlementDimensionID()
	if err := lockCatchUpDimension(ctx, tx, dimID); err != nil {
		return err
	}
	existing, err := selectCatchUpFence(ctx, tx, dimID)
	switch {
	case err == nil:
		if existing.finalizationCommitted() != p.FinalizationCommitted {
			return fmt.Errorf("%w: fence opened by finalization %s", ErrConflict, existing.FinalizationCommittedRef)
		}
		return nil
	case !errors.Is(err, errCatchUpNoFence):
		return err
	}
	toVerify := d.SettledInput
	wm, err := selectCatchUpWatermark(ctx, tx, d.Dimension.BillingReservationID, dimID)
	switch {
	case err == nil:
		switch w := wm.input(); {
		case w.StateVersion > toVerify.StateVersion:
			toVerify = w
		// guard BI-3.finalization-watermark-other-snapshot
		case w.StateVersion == toVerify.StateVersion && w.Snapshot != toVerify.Snapshot:
			return fmt.Errorf("%w: state version %d is %s in the watermark, %s in the finalization",
				ErrConflict, w.StateVersion, w.Snapshot.Ref, toVerify.Snapshot.Ref)
		}
	case !errors.Is(err, errCatchUpNoWatermark):
		return err
	}
	basis := billingc.CatchUpBasis{SettlementDimensionID: dimID, SettlementCatchUpFenceRevision: 1, WorkGeneration: 1,
		SettlementStateRevision: 1, LastEvaluatedInput: d.SettledInput, InputToVerify: toVerify}
	if _, err := insertCatchUpWork(ctx, tx, d.Dimension, basis, billingc.CatchUpCauseFinalization, p.Now); err != nil {
		return err
	}
	identity, err := jcs.Marshal(d.Dimension.EconomicIdentity.Map())
	if err != nil {
		return fmt.Errorf("%w: economic identity: %w", ErrInvalid, err)
	}
	dim, fq, si := d.Dimension, p.FinalizationCommitted, d.SettledInput.Snapshot
	_, err = tx.Exec(ctx, qCatchUpFenceInsert, pgx.NamedArgs{
		"settlement_dimension_id": dimID, "billing_reservation_id": dim.BillingReservationID, "billing_account_id": dim.BillingAccountID,
		"run_id": dim.RunID, "run_step_id": dim.RunStepID, "execution_attempt_id": dim.ExecutionAttemptID,
		"charge_dimension_key": dim.ChargeDimensionKey, "economic_identity": string(identity),
		"tenant_kind": p.Tenant.Kind, "tenant_id": p.Tenant.ID, "workspace_id": p.Tenant.WorkspaceID, "project_id": p.Tenant.ProjectID,
		"correlation_id": p.CorrelationID, "finalization_committed_ref": fq.Ref, "finalization_committed_schema_version": fq.SchemaVersion,
		"finalization_committed_digest_algorithm_version": string(fq.DigestAlgorithmVersion), "finalization_committed_digest": fq.Digest,
		"finalization_event_id": p.FinalizationEventID, "settled_amount": d.SettledAmount,
		"last_evaluated_ref": si.Ref, "last_evaluated_schema_version": si.SchemaVersion,
		"last_evaluated_digest_algorithm_version": string(si.DigestAlgorithmVersion), "last_evaluated_digest": si.Digest,
		"last_evaluated_state_version": d.SettledInput.StateVersion, "now": p.Now,
	})
	if err != nil {
		return fmt.Errorf("insert catch-up fence: %w", err)
	}
	return nil
}

// --- rows and helpers ------------------------------------------------------

func lockCatchUpDimension(ctx context.Context, tx pgx.Tx, dimID string) error {
	if _, err := tx.Exec(ctx, qCatchUpLock, pgx.NamedArgs{"settlement_dimension_id": dimID}); err != nil {
		return fmt.Errorf("lock settlement dimension: %w", err)
	}
	return nil
}

type catchUpWatermarkRow struct {
	InboxRevision                  int64  `db:"inbox_revision"`
	SnapshotRef                    string `db:"settlement_input_snapshot_ref"`
	SnapshotSchemaVersion          string `db:"settlement_input_snapshot_schema_version"`
	SnapshotDigestAlgorithmVersion string `db:"settlement_input_snapshot_digest_algorithm_version"`
	SnapshotDigest                 string `db:"settlement_input_snapshot_digest"`
	StateVersion                   int64  `db:"settlement_input_state_version"`
}

func (w *catchUpWatermarkRow) input() billingc.SettlementInput {
	return billingc.SettlementInput{StateVersion: w.StateVersion, Snapshot: strict.Quadruple{Ref: w.SnapshotRef,
		SchemaVersion: w.SnapshotSchemaVersion, DigestAlgorithmVersion: digest.Algorithm(w.SnapshotDigestAlgorithmVersion), Digest: w.SnapshotDigest}}
}

func selectCatchUpWatermark(ctx context.Context, tx pgx.Tx, reservationID, dimID string) (*catchUpWatermarkRow, error) {
	rows, err := tx.Query(ctx, qCatchUpWatermarkSelect, pgx.NamedArgs{"billing_reservation_id": reservationID, "settlement_dimension_id": dimID})
	if err != nil {
		return nil, fmt.Errorf("lock watermark: %w", err)
	}
	w, err := pgx.CollectExactlyOneRow(rows, pgx.RowToAddrOfStructByName[catchUpWatermarkRow])
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, errCatchUpNoWatermark
	}
	if err != nil {
		return nil, fmt.Errorf("lock watermark: %w", err)
	}
	return w, nil
}

type catchUpFenceRow struct {
	SettlementDimensionID                       string  `db:"settlement_dimension_id"`
	BillingReservationID                        string  `db:"billing_reservation_id"`
	BillingAccountID                            string  `db:"billing_account_id"`
	RunID                                       string  `db:"run_id"`
	RunStepID                                   string  `db:"run_step_id"`
	ExecutionAttemptID                          string  `db:"execution_attempt_id"`
	ChargeDimensionKey                          string  `db:"charge_dimension_key"`
	EconomicIdentity                            string  `db:"economic_identity"`
	TenantKind                                  string  `db:"tenant_kind"`
	TenantID                                    string  `db:"tenant_id"`
	WorkspaceID                                 string  `db:"workspace_id"`
	ProjectID                                   *string `db:"project_id"`
	CorrelationID                               string  `db:"correlation_id"`
	FinalizationCommittedRef                    string  `db:"finalization_committed_ref"`
	FinalizationCommittedSchemaVersion          string  `db:"finalization_committed_schema_version"`
	FinalizationCommittedDigestAlgorithmVersion string  `db:"finalization_committed_digest_algorithm_version"`
	FinalizationCommittedDigest                 string  `db:"finalization_committed_digest"`
	FinalizationEventID                         string  `db:"finalization_event_id"`
	FenceRevision                               int64   `db:"fence_revision"`
	SettlementStateRevision                     int64   `db:"settlement_state_revision"`
	SettledAmount                               string  `db:"settled_amount"`
	LastEvaluatedRef                            string  `db:"last_evaluated_ref"`
	LastEvaluatedSchemaVersion                  string  `db:"last_evaluated_schema_version"`
	LastEvaluatedDigestAlgorithmVersion         string  `db:"last_evaluated_digest_algorithm_version"`
	LastEvaluatedDigest                         string  `db:"last_evaluated_digest"`
	LastEvaluatedStateVersion                   int64   `db:"last_evaluated_state_version"`
	LastEventID                                 string  `db:"last_event_id"`
	CoordinationState                           string  `db:"coordination_state"`
	ActiveWorkGeneration                        int64   `db:"active_work_generation"`
}

func (f *catchUpFenceRow) finalizationCommitted() strict.Quadruple {
	return strict.Quadruple{Ref: f.FinalizationCommittedRef, SchemaVersion: f.FinalizationCommittedSchemaVersion,
		DigestAlgorithmVersion: digest.Algorithm(f.FinalizationCommittedDigestAlgorithmVersion), Digest: f.FinalizationCommittedDigest}
}

func (f *catchUpFenceRow) lastEvaluated() billingc.SettlementInput {
	return billingc.SettlementInput{StateVersion: f.LastEvaluatedStateVersion, Snapshot: strict.Quadruple{Ref: f.LastEvaluatedRef,
		SchemaVersion: f.LastEvaluatedSchemaVersion, DigestAlgorithmVersion: digest.Algorithm(f.LastEvaluatedDigestAlgorithmVersion),
		Digest: f.LastEvaluatedDigest}}
}

func (f *catchUpFenceRow) tenant() Tenant {
	t := Tenant{Kind: f.TenantKind, ID: f.TenantID, WorkspaceID: f.WorkspaceID}
	if f.ProjectID != nil {
		t.ProjectID = *f.ProjectID
	}
	return t
}

func (f *catchUpFenceRow) dimension() (billingc.SettlementDimension, error) {
	v, err := jcs.Parse([]byte(f.EconomicIdentity))
	m, ok := v.(map[string]any)
	if err != nil || !ok {
		return billingc.SettlementDimension{}, fmt.Errorf("%w: stored economic identity of %s", ErrConflict, f.SettlementDimensionID)
	}
	s := func(k string) string { x, _ := m[k].(string); return x }
	return billingc.SettlementDimension{
		BillingReservationID: f.BillingReservationID, BillingAccountID: f.BillingAccountID, RunID: f.RunID, RunStepID: f.RunStepID,
		ExecutionAttemptID: f.ExecutionAttemptID, ChargeDimensionKey: f.ChargeDimensionKey,
		EconomicIdentity: envelope.SettlementEconomicIdentityV1{Kind: s("kind"), EntitlementKey: s("entitlementKey"), Unit: s("unit"), Currency: s("currency")},
	}, nil
}

func selectCatchUpFence(ctx context.Context, tx pgx.Tx, dimID string) (*catchUpFenceRow, error) {
	rows, err := tx.Query(ctx, qCatchUpFenceSelect, pgx.NamedArgs{"settlement_dimension_id": dimID})
	if err != nil {
		return nil, fmt.Errorf("lock catch-up fence: %w", err)
	}
	f, err := pgx.CollectExactlyOneRow(rows, pgx.RowToAddrOfStructByName[catchUpFenceRow])
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, errCatchUpNoFence
	}
	if err != nil {
		return nil, fmt.Errorf("lock catch-up fence: %w", err)
	}
	return f, nil
}

// catchUpFenceChange is the next revision of a fence.
type catchUpFenceChange struct {
	StateRevision   int64
	SettledAmount   string
	LastEvaluated   billingc.SettlementInput
	LastEventID     string
	State           string
	Generation      int64
	CaughtUpReceipt strict.Quadruple
	// AttemptToken is the worker attempt's fencing token (empty for the
	// consumer's reopen): the database refuses it unless it is the latest
	// attempt of the generation the fence had.
	AttemptToken string
}

// from starts a change that keeps everything of f.
func (f *catchUpFenceRow) change() catchUpFenceChange {
	return catchUpFenceChange{StateRevision: f.SettlementStateRevision, SettledAmount: f.SettledAmount, LastEvaluated: f.lastEvaluated(),
		LastEventID: f.LastEventID, State: f.CoordinationState, Generation: f.ActiveWorkGeneration}
}

// updateCatchUpFence moves f one revision; a fence that moved since it was
// read is errCatchUpFenceRaceLost (the caller holds the lock, so only a bug
// gets there).
func updateCatchUpFence(ctx context.Context, tx pgx.Tx, f *catchUpFenceRow, c catchUpFenceChange, now time.Time) (int64, error) {
	le, r := c.LastEvaluated.Snapshot, c.CaughtUpReceipt
	rows, err := tx.Query(ctx, qCatchUpFenceUpdate, pgx.NamedArgs{
		"settlement_dimension_id": f.SettlementDimensionID, "expected_fence_revision": f.FenceRevision,
		"settlement_state_revision": c.StateRevision, "settled_amount": c.SettledAmount,
		"last_evaluated_ref": le.Ref, "last_evaluated_schema_version": le.SchemaVersion,
		"last_evaluated_digest_algorithm_version": string(le.DigestAlgorithmVersion), "last_evaluated_digest": le.Digest,
		"last_evaluated_state_version": c.LastEvaluated.StateVersion, "last_event_id": c.LastEventID,
		"coordination_state": c.State, "active_work_generation": c.Generation,
		"caught_up_receipt_ref": r.Ref, "caught_up_receipt_schema_version": r.SchemaVersion,
		"caught_up_receipt_digest_algorithm_version": string(r.DigestAlgorithmVersion), "caught_up_receipt_digest": r.Digest,
		"attempt_fencing_token": c.AttemptToken, "now": now,
	})
	if err != nil {
		return 0, fmt.Errorf("update catch-up fence: %w", err)
	}
	rev, err := pgx.CollectExactlyOneRow(rows, pgx.RowTo[int64])
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, errCatchUpFenceRaceLost
	}
	if err != nil {
		return 0, fmt.Errorf("update catch-up fence: %w", err)
	}
	return rev, nil
}

// insertCatchUpWork seals and inserts one Work generation.
func insertCatchUpWork(ctx context.Context, tx pgx.Tx, dim billingc.SettlementDimension, basis billingc.CatchUpBasis, cause string, now time.Time) (*billingc.BillingSettlementCatchUpWork, error) {
	w := &billingc.BillingSettlementCatchUpWork{Work: strict.Quadruple{Ref: "bscw-" + uuid.Must(uuid.NewV7()).String()},
		Dimension: dim, Basis: basis, WorkCause: cause, CreatedAt: now}
	body, err := billingc.SealSettlement(w)
	if err != nil {
		return nil, fmt.Errorf("seal catch-up work: %w", err)
	}
	q := w.Work
	if _, err := tx.Exec(ctx, qCatchUpWorkInsert, pgx.NamedArgs{
		"settlement_dimension_id": basis.SettlementDimensionID, "work_generation": basis.WorkGeneration,
		"work_ref": q.Ref, "work_schema_version": q.SchemaVersion, "work_digest_algorithm_version": string(q.DigestAlgorithmVersion),
		"work_digest": q.Digest, "validation_operation_id": w.ValidationOperationID(), "work_cause": cause,
		"fence_revision": basis.SettlementCatchUpFenceRevision, "settlement_state_revision": basis.SettlementStateRevision,
		"to_verify_state_version": basis.InputToVerify.StateVersion, "work_body": string(body), "created_at": now,
	}); err != nil {
		return nil, fmt.Errorf("insert catch-up work: %w", err)
	}
	return w, nil
}

// selectCatchUpWork reads one generation back, verified.
func selectCatchUpWork(ctx context.Context, tx pgx.Tx, dimID string, generation int64) (*billingc.BillingSettlementCatchUpWork, error) {
	rows, err := tx.Query(ctx, qCatchUpWorkSelect, pgx.NamedArgs{"settlement_dimension_id": dimID, "work_generation": generation})
	if err != nil {
		return nil, fmt.Errorf("read catch-up work: %w", err)
	}
	body, err := pgx.CollectExactlyOneRow(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("read catch-up work %s/%d: %w", dimID, generation, err)
	}
	w, err := billingc.DecodeBillingSettlementCatchUpWork([]byte(body))
	if err != nil {
		return nil, fmt.Errorf("%w: stored catch-up work %s/%d: %w", ErrConflict, dimID, generation, err)
	}
	return w, nil
}

// selectPredecessorStep returns the causation kind and quadruple of the
// step whose to revision is rev: a transition (causation
// settlement_transition) or a late settlement command result (causation
// late_settlement_command_result; ADR-031 F → T → Late Result → T).
func selectPredecessorStep(ctx context.Context, tx pgx.Tx, dimID string, rev int64) (string, strict.Quadruple, error) {
	rows, err := tx.Query(ctx, qCatchUpTransitionSelectTo, pgx.NamedArgs{"settlement_dimension_id": dimID, "to_settlement_state_revision": rev})
	if err != nil {
		return "", strict.Quadruple{}, fmt.Errorf("read settlement step: %w", err)
	}
	type row struct {
		Kind                   string `db:"step_kind"`
		Ref                    string `db:"transition_ref"`
		SchemaVersion          string `db:"transition_schema_version"`
		DigestAlgorithmVersion string `db:"transition_digest_algorithm_version"`
		Digest                 string `db:"transition_digest"`
	}
	r, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[row])
	if err != nil {
		return "", strict.Quadruple{}, fmt.Errorf("read settlement step %s to %d: %w", dimID, rev, err)
	}
	kind := billingc.TransitionCausedByTransition
	if r.Kind == billingc.TransitionCausedByLateResult {
		kind = billingc.TransitionCausedByLateResult
	}
	return kind, strict.Quadruple{Ref: r.Ref, SchemaVersion: r.SchemaVersion, DigestAlgorithmVersion: digest.Algorithm(r.DigestAlgorithmVersion), Digest: r.Digest}, nil
}

func catchUpFenceExists(ctx context.Context, tx pgx.Tx, dimID string) (bool, error) {
	var ok bool
	if err := tx.QueryRow(ctx, qCatchUpFenceExists, pgx.NamedArgs{"settlement_dimension_id": dimID}).Scan(&ok); err != nil {
		return false, fmt.Errorf("look up catch-up fence: %w", err)
	}
	return ok, nil
}
