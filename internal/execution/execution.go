// Package execution is the Execution owner (ADR-031, EX-2, EX-3) over the
// execution database:
//
//   - a Run's execution state is entered only through Core's
//     RunExecutionToken@1, verified against Core's readRunAdmissionManifest@1
//     (the manifest's digest is recomputed from its body and every identity
//     of the token must equal the manifest's); states accepting_attempts →
//     attempts_closed by CAS, never back;
//   - attempts are immutable and carry a content-addressed
//     AttemptExecutionManifest@1 (run manifest quadruple, model deployment,
//     gateway deployment, routing policy revision, output contract
//     quadruple). An attempt never changes its route: rerouting is a new
//     attempt.
//
// The manifest read is an interface (ManifestReads), wired by the caller
// (admission.Reads over the core database in process): nothing here imports
// Core or assumes the Execution owner shares a process or a database with it.
package execution

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgerrcode"
	"github.com/jackc/pgx/v5"

	"github.com/oceanway/core/contracts/digest"
	contract "github.com/oceanway/core/contracts/execution"
	"github.com/oceanway/core/contracts/settlement"
	"github.com/oceanway/core/contracts/strict"
	"github.com/oceanway/core/internal/db"
	"github.com/oceanway/core/internal/execution/dbsqlc"
	"github.com/oceanway/core/internal/ownerread"
	"github.com/oceanway/core/internal/ownerread/coreread"
)

var queries = dbsqlc.New()

// Run states.
const (
	StateAcceptingAttempts = "accepting_attempts"
	StateAttemptsClosed    = "attempts_closed"
)

// SQLSTATEs the execution schema raises (schema/migrations); tests assert
// them as the least-privileged role would meet them.
const (
	CodeImmutable         = "EX001" // update, delete or truncate of an immutable execution fact (truncate: 00006, every role)
	CodeIllegalState      = "EX002" // a run state change other than accepting_attempts → attempts_closed
	CodeRunNotAccepting   = "EX003" // an attempt on a run that no longer accepts attempts
	CodeClosureIncomplete = "EX004" // a closed run without its complete attempt set and fact at COMMIT
	// Finality guards (migration 00006, issue 30).
	CodeClosureOutsideCAS     = "EX005" // attempt set or finalization fact without the run moving accepting_attempts → attempts_closed in its transaction
	CodeClosureContent        = "EX006" // attempt set or finalization fact that does not describe the run's attempts, set, token or its own columns
	CodeNotDispatchedEvidence = "EX007" // not-dispatched fact without matching stored Gateway rejection evidence for the attempt's slot
	CodeNotDispatchedOrphan   = "EX008" // not-dispatched fact or evidence without the attempt's not_dispatched eligibility fact at COMMIT
	CodeEligibilityContent    = "EX009" // eligibility fact whose body does not describe its row, attempt and run
	CodeFactWithoutEvent      = "EX010" // eligibility or finalization fact without its event in the same transaction
	// Issue 32 part 4 (migration 00010).
	CodeAttemptDimensions = "EX011" // attempt whose manifest freezes no (or an unsorted, duplicated) charge dimension set
	// Issue 32 part 3 (migrations 00012, 00013).
	CodeConflictFactForged        = "EX013" // a run finalization conflict fact whose body differs from its row or names another closure than its run's
	CodeEligibilityConflictForged = "EX014" // an eligibility conflict fact whose body differs from its row or names another fact than its attempt's
)

// Errors. Bad input is refused with nothing written.
var (
	ErrInvalidToken = errors.New("execution: invalid run execution token")
	// ErrManifestNotReadable: Core answered not_found (retry later).
	ErrManifestNotReadable = errors.New("execution: run admission manifest not readable")
	// ErrManifestConflict: Core answered conflicting, or the manifest does
	// not carry the token's identities.
	ErrManifestConflict = errors.New("execution: token conflicts with the run admission manifest")
	// ErrTokenConflict: the run was opened with another token.
	ErrTokenConflict  = errors.New("execution: run already opened with another token")
	ErrRunNotFound    = errors.New("execution: run execution state not found")
	ErrRunClosed      = errors.New("execution: run is not accepting attempts")
	ErrInvalidAttempt = errors.New("execution: invalid attempt")
	// ErrAttemptConflict: the attempt id exists with another manifest
	// (an attempt never changes route: reroute with a new attempt).
	ErrAttemptConflict = errors.New("execution: attempt exists with another manifest")
)

// ManifestReads is Core's readRunAdmissionManifest@1 as the Execution owner
// calls it.
type ManifestReads interface {
	ReadRunAdmissionManifest(ctx context.Context, req coreread.RunAdmissionManifestRead) (coreread.ManifestResult, error)
}

// Hooks let tests fail a transaction after a given step.
type Hooks struct {
	// AfterStep runs after each write inside a transaction; an error aborts
	// and rolls back the whole transaction.
	AfterStep func(ctx context.Context, tx pgx.Tx, step string) error
}

// Service is the Execution owner over the execution database.
type Service struct {
	pool    Pool
	core    ManifestReads
	gateway GatewayReads
	hooks   Hooks
}

// Pool is the execution database (a *pgxpool.Pool).
type Pool interface {
	db.Beginner
	db.Executor
}

// New builds the Execution owner.
func New(pool Pool, core ManifestReads) *Service { return &Service{pool: pool, core: core} }

// SetHooks installs test hooks.
func (s *Service) SetHooks(h Hooks) { s.hooks = h }

func (s *Service) step(ctx context.Context, tx pgx.Tx, name string) error {
	if s.hooks.AfterStep == nil {
		return nil
	}
	if err := s.hooks.AfterStep(ctx, tx, name); err != nil {
		return fmt.Errorf("execution step %s: %w", name, err)
	}
	return nil
}

// RunState is a run's execution state.
type RunState struct {
	RunID                string
	Tenant               contract.Tenant
	BillingAccountID     string
	BillingReservationID string
	Manifest             strict.Quadruple
	Token                strict.Quadruple
	State                string
	StateVersion         int64
	// Reopened is true when OpenRun found the run already open with the same token.
	Reopened bool
}

func runStateOf(r dbsqlc.ExecutionRunExecutionState) RunState {
	project := ""
	if r.ProjectID != nil {
		project = *r.ProjectID
	}
	return RunState{
		RunID:            r.RunID,
		Tenant:           contract.Tenant{Kind: r.TenantKind, TenantID: r.TenantID, WorkspaceID: r.WorkspaceID, ProjectID: project},
		BillingAccountID: r.BillingAccountID, BillingReservationID: r.BillingReservationID,
		Manifest: strict.Quadruple{Ref: r.RunAdmissionManifestRef, SchemaVersion: r.RunAdmissionManifestSchemaVersion,
			DigestAlgorithmVersion: digest.Algorithm(r.RunAdmissionManifestDigestAlgorithmVersion), Digest: r.RunAdmissionManifestDigest},
		Token: strict.Quadruple{Ref: r.RunExecutionTokenRef, SchemaVersion: r.RunExecutionTokenSchemaVersion,
			DigestAlgorithmVersion: digest.Algorithm(r.RunExecutionTokenDigestAlgorithmVersion), Digest: r.RunExecutionTokenDigest},
		State: r.State, StateVersion: r.StateVersion,
	}
}

func nullable(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// OpenRun enters a run's execution state with Core's token: the token
// decodes strictly (its digest recomputes), Core's manifest read answers
// found for its exact quadruple, tenant and run, and the manifest carries
// the token's account and reservation. The same token again returns the
// open state; another token for the run is ErrTokenConflict.
func (s *Service) OpenRun(ctx context.Context, tokenBody []byte) (RunState, error) {
	tok, err := contract.DecodeRunExecutionToken(tokenBody)
	if err != nil {
		return RunState{}, fmt.Errorf("%w: %w", ErrInvalidToken, err)
	}
	ans, err := s.core.ReadRunAdmissionManifest(ctx, coreread.RunAdmissionManifestRead{
		ContractVersion: coreread.ReadRunAdmissionManifestV1, Audience: contract.AudienceRunExecutionState,
		Tenant: tok.Tenant, RunID: tok.RunID, Manifest: tok.Manifest,
	})
	if err != nil {
		return RunState{}, fmt.Errorf("open run %s: readRunAdmissionManifest: %w", tok.RunID, err)
	}
	switch ans.Answer {
	case ownerread.Found:
	case ownerread.NotFound:
		return RunState{}, fmt.Errorf("open run %s: %w", tok.RunID, ErrManifestNotReadable)
	default:
		return RunState{}, fmt.Errorf("open run %s: %w: %s", tok.RunID, ErrManifestConflict, ans.Reason)
	}
	m := ans.Value
	// Recompute the digest of the body Core answered with (never trust the answer's claim).
	if _, err := contract.DecodeRunAdmissionManifest(ans.Body); err != nil {
		return RunState{}, fmt.Errorf("open run %s: %w: %w", tok.RunID, ErrManifestConflict, err)
	}
	// guard EX-2.token-manifest-mismatch
	if m.Manifest != tok.Manifest || m.RunID != tok.RunID || m.Tenant != tok.Tenant ||
		m.BillingAccountID != tok.BillingAccountID || m.BillingReservationID != tok.BillingReservationID {
		return RunState{}, fmt.Errorf("open run %s: %w: identities differ", tok.RunID, ErrManifestConflict)
	}
	canonical, err := contract.Seal(tok) // canonical bytes of the verified token (same digest)
	if err != nil {
		return RunState{}, fmt.Errorf("%w: %w", ErrInvalidToken, err)
	}
	return db.WithTxV(ctx, s.pool, func(ctx context.Context, tx pgx.Tx) (RunState, error) {
		n, err := queries.RunStateInsert(ctx, tx, dbsqlc.RunStateInsertParams{
			RunID: tok.RunID, TenantKind: tok.Tenant.Kind, TenantID: tok.Tenant.TenantID, WorkspaceID: tok.Tenant.WorkspaceID,
			ProjectID: nullable(tok.Tenant.ProjectID), BillingAccountID: tok.BillingAccountID, BillingReservationID: tok.BillingReservationID,
			RunAdmissionManifestRef: tok.Manifest.Ref, RunAdmissionManifestSchemaVersion: tok.Manifest.SchemaVersion,
			RunAdmissionManifestDigestAlgorithmVersion: string(tok.Manifest.DigestAlgorithmVersion), RunAdmissionManifestDigest: tok.Manifest.Digest,
			RunExecutionTokenRef: tok.Token.Ref, RunExecutionTokenSchemaVersion: tok.Token.SchemaVersion,
			RunExecutionTokenDigestAlgorithmVersion: string(tok.Token.DigestAlgorithmVersion), RunExecutionTokenDigest: tok.Token.Digest,
			RunExecutionTokenBody: string(canonical),
		})
		if err != nil {
			if db.SQLState(err) == pgerrcode.UniqueViolation {
				return RunState{}, fmt.Errorf("open run %s: %w: %w", tok.RunID, ErrTokenConflict, err)
			}
			return RunState{}, fmt.Errorf("open run %s: %w", tok.RunID, err)
		}
		if err := s.step(ctx, tx, "run_state"); err != nil {
			return RunState{}, err
		}
		row, err := queries.RunStateByID(ctx, tx, tok.RunID)
		if n == 0 && errors.Is(db.NotFound(err), db.ErrNotFound) {
			// Another run holds the token, manifest or reservation.
			return RunState{}, fmt.Errorf("open run %s: %w", tok.RunID, ErrTokenConflict)
		}
		if err != nil {
			return RunState{}, fmt.Errorf("open run %s: read back: %w", tok.RunID, err)
		}
		st := runStateOf(row)
		if n == 0 {
			// guard EX-2.run-token-conflict
			if st.Token != tok.Token {
				return RunState{}, fmt.Errorf("open run %s: %w (%s)", tok.RunID, ErrTokenConflict, st.Token.Ref)
			}
			st.Reopened = true
		}
		return st, nil
	})
}

// Run reads a run's execution state (ErrRunNotFound).
func Run(ctx context.Context, q db.Executor, runID string) (RunState, error) {
	if !strict.IsUUID(runID) {
		return RunState{}, fmt.Errorf("%w: %q", ErrRunNotFound, runID)
	}
	r, err := queries.RunStateByID(ctx, q, runID)
	if err != nil {
		if errors.Is(db.NotFound(err), db.ErrNotFound) {
			return RunState{}, fmt.Errorf("%w: %s", ErrRunNotFound, runID)
		}
		return RunState{}, fmt.Errorf("read run %s: %w", runID, err)
	}
	return runStateOf(r), nil
}

// AttemptRequest asks for one attempt of a run step on one route.
type AttemptRequest struct {
	RunID                 string
	RunStepID             string
	ExecutionAttemptID    string
	ModelDeploymentID     string
	GatewayDeploymentID   string
	RoutingPolicyRevision int64
	OutputContract        strict.Quadruple
}

// Attempt is a created attempt.
type Attempt struct {
	Manifest *contract.AttemptExecutionManifest
	Body     []byte
	// Replayed is true when the same attempt existed with the same content.
	Replayed bool
}

// CreateAttempt creates an immutable attempt with its content-addressed
// manifest while the run accepts attempts. The same id with the same route
// returns the original attempt; with another route it is
// ErrAttemptConflict; a closed run is ErrRunClosed.
func (s *Service) CreateAttempt(ctx context.Context, req AttemptRequest) (Attempt, error) {
	if !strict.IsUUID(req.RunID) || !strict.IsUUID(req.RunStepID) || !strict.IsUUID(req.ExecutionAttemptID) {
		return Attempt{}, fmt.Errorf("%w: run, step and attempt ids must be UUIDs", ErrInvalidAttempt)
	}
	return db.WithTxV(ctx, s.pool, func(ctx context.Context, tx pgx.Tx) (Attempt, error) {
		row, err := queries.RunStateForShare(ctx, tx, req.RunID)
		if err != nil {
			if errors.Is(db.NotFound(err), db.ErrNotFound) {
				return Attempt{}, fmt.Errorf("create attempt: %w: %s", ErrRunNotFound, req.RunID)
			}
			return Attempt{}, fmt.Errorf("create attempt: lock run: %w", err)
		}
		run := runStateOf(row)
		// The expected charge dimension set: the Contracts registry's set of
		// the output contract, frozen in the manifest (an unknown output
		// contract is refused, never an empty set).
		keys, err := settlement.RegisteredDimensions(req.OutputContract.Ref)
		if err != nil {
			return Attempt{}, fmt.Errorf("%w: %w", ErrInvalidAttempt, err)
		}
		m := &contract.AttemptExecutionManifest{
			Manifest: strict.Quadruple{Ref: "aem-" + req.ExecutionAttemptID}, RunID: req.RunID, RunStepID: req.RunStepID,
			ExecutionAttemptID: req.ExecutionAttemptID, RunAdmissionManifest: run.Manifest,
			ModelDeploymentID: req.ModelDeploymentID, GatewayDeploymentID: req.GatewayDeploymentID,
			RoutingPolicyRevision: req.RoutingPolicyRevision, OutputContract: req.OutputContract,
			ChargeDimensionRegistryVersion: settlement.ChargeDimensionRegistryVersion, ChargeDimensionKeys: keys,
			CreatedAt: time.Now().UTC().Truncate(time.Microsecond),
		}
		if existing, err := queries.AttemptByID(ctx, tx, req.ExecutionAttemptID); err == nil {
			return replayAttempt(existing, m)
		} else if !errors.Is(db.NotFound(err), db.ErrNotFound) {
			return Attempt{}, fmt.Errorf("create attempt: %w", err)
		}
		if run.State != StateAcceptingAttempts {
			return Attempt{}, fmt.Errorf("create attempt %s: %w (%s)", req.ExecutionAttemptID, ErrRunClosed, run.State)
		}
		body, err := contract.Seal(m)
		if err != nil {
			return Attempt{}, fmt.Errorf("%w: %w", ErrInvalidAttempt, err)
		}
		q := m.Manifest
		n, err := queries.AttemptInsert(ctx, tx, dbsqlc.AttemptInsertParams{
			ExecutionAttemptID: req.ExecutionAttemptID, RunID: req.RunID, RunStepID: req.RunStepID,
			AttemptExecutionManifestRef: q.Ref, AttemptExecutionManifestSchemaVersion: q.SchemaVersion,
			AttemptExecutionManifestDigestAlgorithmVersion: string(q.DigestAlgorithmVersion), AttemptExecutionManifestDigest: q.Digest,
			ManifestBody: string(body), ModelDeploymentID: req.ModelDeploymentID, GatewayDeploymentID: req.GatewayDeploymentID,
			RoutingPolicyRevision: req.RoutingPolicyRevision, CreatedAt: m.CreatedAt,
		})
		if err != nil {
			if db.SQLState(err) == CodeRunNotAccepting {
				return Attempt{}, fmt.Errorf("create attempt %s: %w: %w", req.ExecutionAttemptID, ErrRunClosed, err)
			}
			return Attempt{}, fmt.Errorf("create attempt %s: %w", req.ExecutionAttemptID, err)
		}
		if n == 0 { // created concurrently (or its manifest ref is taken): compare
			existing, err := queries.AttemptByID(ctx, tx, req.ExecutionAttemptID)
			if err != nil {
				return Attempt{}, fmt.Errorf("create attempt %s: %w: %w", req.ExecutionAttemptID, ErrAttemptConflict, db.NotFound(err))
			}
			return replayAttempt(existing, m)
		}
		if err := s.step(ctx, tx, "attempt"); err != nil {
			return Attempt{}, err
		}
		return Attempt{Manifest: m, Body: body}, nil
	})
}

// replayAttempt compares a stored attempt with a request's manifest: every
// field but the time must be equal.
func replayAttempt(existing dbsqlc.ExecutionAttempt, want *contract.AttemptExecutionManifest) (Attempt, error) {
	stored, err := contract.DecodeAttemptExecutionManifest([]byte(existing.ManifestBody))
	if err != nil {
		return Attempt{}, fmt.Errorf("stored attempt manifest %s: %w", existing.ExecutionAttemptID, err)
	}
	cmp := *want
	cmp.Manifest, cmp.CreatedAt = stored.Manifest, stored.CreatedAt
	// guard EX-2.attempt-route-conflict
	if !cmp.SameAs(stored) {
		return Attempt{}, fmt.Errorf("create attempt %s: %w (an attempt never changes its route; reroute with a new attempt)", existing.ExecutionAttemptID, ErrAttemptConflict)
	}
	return Attempt{Manifest: stored, Body: []byte(existing.ManifestBody), Replayed: true}, nil
}

// AttemptByID reads an attempt's manifest.
func AttemptByID(ctx context.Context, q db.Executor, attemptID string) (*contract.AttemptExecutionManifest, []byte, error) {
	row, err := queries.AttemptByID(ctx, q, attemptID)
	if err != nil {
		return nil, nil, fmt.Errorf("read attempt %s: %w", attemptID, db.NotFound(err))
	}
	m, err := contract.DecodeAttemptExecutionManifest([]byte(row.ManifestBody))
	if err != nil {
		return nil, nil, fmt.Errorf("read attempt %s: %w", attemptID, err)
	}
	return m, []byte(row.ManifestBody), nil
}
