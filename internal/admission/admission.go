// Package admission is the Core admission producer (ADR-031, EX-1): one
// local transaction in the core database creates
//
//   - the admission request record (idempotency by admission operation id),
//   - the Run and its content-addressed RunAdmissionManifest@1 (quadruple),
//   - the credits Reservation (integer credits, never a float),
//   - the unique BillingFinalizationFence with its first durable Work
//     (generation 1, waiting: closure_event_not_applied) and that Work's
//     content-addressed trigger snapshot,
//   - run.created@2.0 and wallet.reserved@2.0, appended with
//     release.AppendTx (event ids allocated first, wallet.reserved caused by
//     run.created, both under the admission operation id and one
//     correlation id),
//
// and commits all of it or nothing: any failure — validation, a constraint,
// a missing active Delivery Set Definition or pair (DS-9), the deferred
// delivery-set proof at COMMIT — rolls every row back. The same operation
// id with the same request returns the same run; with another request it is
// ErrAdmissionConflict. Before the append, the Run's stored manifest
// quadruple is read back and compared with both event payloads (ADR-031:
// run.created@2.0 and the manifest are equal by the producer's guarantee).
//
// RunAdmissionManifest@1, AdmissionRequest@1, BillingFinalizationTriggerSnapshot@1
// and BillingFinalizationWork@1 are this project's definitions (the
// documents name them without a field list); objects.go and
// docs/operations.md spell them out. Only organization tenants are admitted
// (ADR-031: "Organization-backed 受控 Admission").
package admission

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/oceanway/core/contracts/digest"
	"github.com/oceanway/core/contracts/envelope"
	"github.com/oceanway/core/contracts/jcs"
	"github.com/oceanway/core/contracts/strict"
	"github.com/oceanway/core/internal/db"
	"github.com/oceanway/core/internal/outbox"
	"github.com/oceanway/core/internal/release"
)

//go:embed sql/*.sql
var queries embed.FS

func query(name string) string {
	b, err := queries.ReadFile("sql/" + name + ".sql")
	if err != nil {
		panic("admission: missing query " + name)
	}
	return strings.TrimSpace(string(b))
}

var (
	qRequestClaim      = query("request_claim")
	qRequestExisting   = query("request_existing")
	qManifestInsert    = query("manifest_insert")
	qRunInsert         = query("run_insert")
	qReservationInsert = query("reservation_insert")
	qFenceInsert       = query("fence_insert")
	qTriggerInsert     = query("trigger_insert")
	qWorkInsert        = query("work_insert")
	qRunManifest       = query("run_manifest")
	qAdmitted          = query("admitted")
)

// Errors of Admit. Outbox failures (no active definition, pair or member
// missing, delivery-set proof at commit) come back wrapped as they are, so
// errors.Is works with the outbox sentinels.
var (
	ErrInvalidRequest    = errors.New("admission: invalid request")
	ErrUnsupportedTenant = errors.New("admission: only organization tenants are admitted")
	// ErrAdmissionConflict: the admission operation id was used for another request.
	ErrAdmissionConflict = errors.New("admission: admission operation id already used for another request")
	// ErrManifestMismatch: an event payload does not carry the Run's stored manifest quadruple.
	ErrManifestMismatch = errors.New("admission: event does not carry the run's admission manifest")
)

// ConflictError is ErrAdmissionConflict with the two request digests.
type ConflictError struct {
	AdmissionOperationID string
	StoredRequest        digest.Digest
	Request              digest.Digest
	RunID                string
}

func (e *ConflictError) Error() string {
	return fmt.Sprintf("%v: %s was admitted as run %s with request %s, not %s",
		ErrAdmissionConflict, e.AdmissionOperationID, e.RunID, e.StoredRequest, e.Request)
}

func (e *ConflictError) Unwrap() error { return ErrAdmissionConflict }

// MaxCredits is the largest reservation (a safe integer, exact in JSON and
// every runtime).
const MaxCredits = 1<<53 - 1

// Request is one admission request.
type Request struct {
	// AdmissionOperationID is the idempotency key (lowercase UUID).
	AdmissionOperationID string
	// TenantKind must be organization.
	TenantKind  string
	TenantID    string
	WorkspaceID string
	ProjectID   string // optional
	// BillingAccountID is the account the credits are reserved on.
	BillingAccountID string
	// ReservedCredits is the integer credit amount to reserve (> 0).
	ReservedCredits int64
	// CorrelationID of the events; default AdmissionOperationID.
	CorrelationID string
}

func (r Request) correlationID() string {
	if r.CorrelationID == "" {
		return r.AdmissionOperationID
	}
	return r.CorrelationID
}

func isUUID(s string) bool {
	u, err := uuid.Parse(s)
	return err == nil && u.String() == s
}

// Validate checks the request's shape.
func (r Request) Validate() error {
	var bad []string
	for name, v := range map[string]string{
		"admissionOperationId": r.AdmissionOperationID, "tenantId": r.TenantID,
		"workspaceId": r.WorkspaceID, "billingAccountId": r.BillingAccountID, "correlationId": r.correlationID(),
	} {
		if !isUUID(v) {
			bad = append(bad, name)
		}
	}
	if r.ProjectID != "" && !isUUID(r.ProjectID) {
		bad = append(bad, "projectId")
	}
	if r.ReservedCredits <= 0 || r.ReservedCredits > MaxCredits {
		bad = append(bad, "reservedCredits")
	}
	if len(bad) > 0 {
		return fmt.Errorf("%w: %s", ErrInvalidRequest, strings.Join(bad, ", "))
	}
	if r.TenantKind != envelope.TenantOrganization {
		return fmt.Errorf("%w: tenantKind %q", ErrUnsupportedTenant, r.TenantKind)
	}
	return nil
}

// Result is what an admission created (or, Replayed, had created before).
type Result struct {
	AdmissionOperationID  string
	RunID                 string
	BillingAccountID      string
	BillingReservationID  string
	ReservedCredits       int64
	CorrelationID         string
	Manifest              strict.Quadruple
	RunCreatedEventID     string
	WalletReservedEventID string
	FenceID               string
	WorkGeneration        int64
	Work                  strict.Quadruple
	// FinalizationOperationID is the first Work's billingFinalizationOperationId.
	FinalizationOperationID string
	WorkState               string // waiting
	WorkWaitingReason       string // closure_event_not_applied
	AdmittedAt              time.Time
	// Replayed is true when this operation id was admitted before with the
	// same request: nothing new was written.
	Replayed bool
}

// Hooks let tests fail the admission transaction after a given step.
type Hooks struct {
	// AfterStep runs after each step inside the transaction (steps:
	// request, manifest, run, reservation, fence, trigger, work, append);
	// an error aborts and rolls back the admission.
	AfterStep func(ctx context.Context, tx pgx.Tx, step string) error
}

// Steps of the admission transaction, in order (for Hooks.AfterStep).
var Steps = []string{"request", "manifest", "run", "reservation", "fence", "trigger", "work", "append"}

// Service admits runs into the core database.
type Service struct {
	pool  db.Beginner
	hooks Hooks
}

// New builds the admission service over the core database.
func New(pool db.Beginner) *Service { return &Service{pool: pool} }

// SetHooks installs test hooks.
func (s *Service) SetHooks(h Hooks) { s.hooks = h }

func (s *Service) step(ctx context.Context, tx pgx.Tx, name string) error {
	if s.hooks.AfterStep == nil {
		return nil
	}
	if err := s.hooks.AfterStep(ctx, tx, name); err != nil {
		return fmt.Errorf("admission step %s: %w", name, err)
	}
	return nil
}

// Admit admits one run (EX-1). See the package documentation.
func (s *Service) Admit(ctx context.Context, req Request) (Result, error) {
	if err := req.Validate(); err != nil {
		return Result{}, err
	}
	reqBody, err := jcs.Marshal(req.doc())
	if err != nil {
		return Result{}, fmt.Errorf("%w: %w", ErrInvalidRequest, err)
	}
	reqDigest, err := digest.OfCanonical(digest.JCSSHA256V1, reqBody)
	if err != nil {
		return Result{}, err
	}
	res, err := db.WithTxV(ctx, s.pool, func(ctx context.Context, tx pgx.Tx) (Result, error) {
		return s.admitTx(ctx, tx, req, reqBody, reqDigest)
	})
	if err != nil {
		return Result{}, outbox.TranslateError(err)
	}
	return res, nil
}

func newID() string { return uuid.Must(uuid.NewV7()).String() }

func (s *Service) admitTx(ctx context.Context, tx pgx.Tx, req Request, reqBody []byte, reqDigest digest.Digest) (Result, error) {
	runID, reservationID, fenceID := newID(), newID(), newID()
	eventIDs := outbox.NewEventIDs(2) // run.created, wallet.reserved: allocated before any envelope (OB-APPEND-3)

	// 1. Idempotency.
	var now time.Time
	err := tx.QueryRow(ctx, qRequestClaim, req.AdmissionOperationID, string(reqDigest.Algorithm), reqDigest.Value,
		string(reqBody), runID).Scan(&now)
	if errors.Is(err, pgx.ErrNoRows) {
		return s.replay(ctx, tx, req, reqDigest)
	}
	if err != nil {
		return Result{}, fmt.Errorf("claim admission operation: %w", err)
	}
	now = now.UTC().Truncate(time.Microsecond)
	if err := s.step(ctx, tx, "request"); err != nil {
		return Result{}, err
	}

	// 2. RunAdmissionManifest@1.
	m := &RunAdmissionManifest{
		Manifest:             strict.Quadruple{Ref: "ram-" + newID()},
		AdmissionOperationID: req.AdmissionOperationID, RequestDigest: reqDigest, RunID: runID,
		TenantKind: req.TenantKind, TenantID: req.TenantID, WorkspaceID: req.WorkspaceID, ProjectID: req.ProjectID,
		BillingAccountID: req.BillingAccountID, BillingReservationID: reservationID,
		ReservedCredits: req.ReservedCredits, AdmittedAt: now,
	}
	body, err := seal(manifestSelf, &m.Manifest, m.ToJSON)
	if err != nil {
		return Result{}, err
	}
	mq := m.Manifest
	if _, err := tx.Exec(ctx, qManifestInsert, mq.Ref, mq.SchemaVersion, string(mq.DigestAlgorithmVersion), mq.Digest,
		runID, string(body), now); err != nil {
		return Result{}, fmt.Errorf("insert run admission manifest: %w", err)
	}
	if err := s.step(ctx, tx, "manifest"); err != nil {
		return Result{}, err
	}

	// 3. Run and Reservation.
	if _, err := tx.Exec(ctx, qRunInsert, runID, req.AdmissionOperationID, req.TenantKind, req.TenantID, req.WorkspaceID,
		nullable(req.ProjectID), req.correlationID(), req.BillingAccountID, reservationID,
		mq.Ref, mq.SchemaVersion, string(mq.DigestAlgorithmVersion), mq.Digest, eventIDs[0], now); err != nil {
		return Result{}, fmt.Errorf("insert run: %w", err)
	}
	if err := s.step(ctx, tx, "run"); err != nil {
		return Result{}, err
	}
	if _, err := tx.Exec(ctx, qReservationInsert, reservationID, req.BillingAccountID, runID, req.ReservedCredits,
		eventIDs[1], now); err != nil {
		return Result{}, fmt.Errorf("insert reservation: %w", err)
	}
	if err := s.step(ctx, tx, "reservation"); err != nil {
		return Result{}, err
	}

	// 4. The unique fence and its first durable Work.
	if _, err := tx.Exec(ctx, qFenceInsert, fenceID, reservationID, runID, now); err != nil {
		return Result{}, fmt.Errorf("insert billing finalization fence: %w", err)
	}
	if err := s.step(ctx, tx, "fence"); err != nil {
		return Result{}, err
	}
	trig := &TriggerSnapshot{
		Snapshot: strict.Quadruple{Ref: "bft-" + newID()}, FenceID: fenceID, BillingReservationID: reservationID,
		BillingAccountID: req.BillingAccountID, RunID: runID, FenceRevision: 1, WorkGeneration: 1, Manifest: mq, CapturedAt: now,
	}
	trigBody, err := seal(triggerSelf, &trig.Snapshot, trig.ToJSON)
	if err != nil {
		return Result{}, err
	}
	tq := trig.Snapshot
	if _, err := tx.Exec(ctx, qTriggerInsert, tq.Ref, tq.SchemaVersion, string(tq.DigestAlgorithmVersion), tq.Digest,
		fenceID, int64(1), string(trigBody), now); err != nil {
		return Result{}, fmt.Errorf("insert trigger snapshot: %w", err)
	}
	if err := s.step(ctx, tx, "trigger"); err != nil {
		return Result{}, err
	}
	w := &Work{
		Work: strict.Quadruple{Ref: "bfw-" + newID()}, FenceID: fenceID, BillingReservationID: reservationID,
		BillingAccountID: req.BillingAccountID, RunID: runID, Generation: 1,
		OperationID: FinalizationOperationID(reservationID, runID, 1, tq.Digested()), Trigger: tq, CreatedAt: now,
	}
	workBody, err := seal(workSelf, &w.Work, w.ToJSON)
	if err != nil {
		return Result{}, err
	}
	wq := w.Work
	if _, err := tx.Exec(ctx, qWorkInsert, fenceID, int64(1), wq.Ref, wq.SchemaVersion, string(wq.DigestAlgorithmVersion),
		wq.Digest, w.OperationID, tq.Ref, string(workBody), now); err != nil {
		return Result{}, fmt.Errorf("insert billing finalization work: %w", err)
	}
	if err := s.step(ctx, tx, "work"); err != nil {
		return Result{}, err
	}

	// 5. Both admission events, equal to the stored manifest, appended in
	// this transaction.
	runEvent, walletEvent := admissionEvents(req, eventIDs, runID, reservationID, mq, now)
	if err := checkManifest(ctx, tx, runID, runEvent, walletEvent); err != nil {
		return Result{}, err
	}
	if _, err := release.AppendTx(ctx, tx, runEvent, walletEvent); err != nil {
		return Result{}, fmt.Errorf("append admission events: %w", err)
	}
	if err := s.step(ctx, tx, "append"); err != nil {
		return Result{}, err
	}
	return Result{
		AdmissionOperationID: req.AdmissionOperationID, RunID: runID, BillingAccountID: req.BillingAccountID,
		BillingReservationID: reservationID, ReservedCredits: req.ReservedCredits, CorrelationID: req.correlationID(),
		Manifest: mq, RunCreatedEventID: eventIDs[0], WalletReservedEventID: eventIDs[1],
		FenceID: fenceID, WorkGeneration: 1, Work: wq, FinalizationOperationID: w.OperationID,
		WorkState: "waiting", WorkWaitingReason: "closure_event_not_applied", AdmittedAt: now,
	}, nil
}

// admissionEvents builds run.created@2.0 and wallet.reserved@2.0 with the
// exact payload fields contracts/envelope defines.
func admissionEvents(req Request, ids []string, runID, reservationID string, mq strict.Quadruple, at time.Time) (envelope.Envelope, envelope.Envelope) {
	base := func(id, eventType, schemaVersion, aggType, aggID, causation string, payload map[string]any) envelope.Envelope {
		return envelope.Envelope{
			EventID: id, EventType: eventType, EventSchemaVersion: schemaVersion,
			AggregateType: aggType, AggregateID: aggID, AggregateRevision: 1,
			TenantKind: req.TenantKind, TenantID: req.TenantID, WorkspaceID: req.WorkspaceID, ProjectID: req.ProjectID,
			CorrelationID: req.correlationID(), CausationID: causation, OperationID: req.AdmissionOperationID,
			OccurredAt: at, Payload: payload,
		}
	}
	run := envelope.RunCreatedV2_0Payload{RunID: runID, BillingAccountID: req.BillingAccountID, BillingReservationID: reservationID}
	run.SetRunAdmissionManifest(mq)
	wallet := envelope.WalletReservedV2_0Payload{
		BillingReservationID: reservationID, BillingAccountID: req.BillingAccountID, RunID: runID,
		ReservationEconomicIdentity: envelope.SettlementEconomicIdentityV1{Kind: "credits"}, ReservedAmount: strconv.FormatInt(req.ReservedCredits, 10),
	}
	wallet.SetRunAdmissionManifest(mq)
	return base(ids[0], envelope.RunCreatedV2, "2.0", envelope.AggregateRun, runID, "", run.Map()),
		base(ids[1], envelope.WalletReservedV2, "2.0", envelope.AggregateBillingReservation, reservationID, ids[0], wallet.Map())
}

// checkManifest reads the Run's stored manifest quadruple back and compares
// it with both event payloads.
func checkManifest(ctx context.Context, tx pgx.Tx, runID string, events ...envelope.Envelope) error {
	var (
		stored strict.Quadruple
		alg    string
	)
	if err := tx.QueryRow(ctx, qRunManifest, runID).Scan(&stored.Ref, &stored.SchemaVersion, &alg, &stored.Digest); err != nil {
		return fmt.Errorf("read run manifest: %w", err)
	}
	stored.DigestAlgorithmVersion = digest.Algorithm(alg)
	for _, e := range events {
		p, err := envelope.TypedPayload(&e)
		if err != nil {
			return fmt.Errorf("admission event payload: %w", err)
		}
		got := p.(interface{ RunAdmissionManifest() strict.Quadruple }).RunAdmissionManifest()
		if got != stored {
			return fmt.Errorf("%w: %s carries %+v, run %s has %+v", ErrManifestMismatch, e.EventType, got, runID, stored)
		}
	}
	return nil
}

// replay answers an operation id that was claimed before.
func (s *Service) replay(ctx context.Context, tx pgx.Tx, req Request, reqDigest digest.Digest) (Result, error) {
	var (
		stored digest.Digest
		alg    string
		runID  string
	)
	if err := tx.QueryRow(ctx, qRequestExisting, req.AdmissionOperationID).Scan(&alg, &stored.Value, &runID); err != nil {
		return Result{}, fmt.Errorf("read admission request: %w", err)
	}
	stored.Algorithm = digest.Algorithm(alg)
	if stored != reqDigest {
		return Result{}, &ConflictError{AdmissionOperationID: req.AdmissionOperationID, StoredRequest: stored, Request: reqDigest, RunID: runID}
	}
	res, err := Lookup(ctx, tx, runID)
	if err != nil {
		return Result{}, err
	}
	res.Replayed = true
	return res, nil
}

// Lookup reads what the admission of runID created (db.ErrNotFound).
func Lookup(ctx context.Context, q db.Executor, runID string) (Result, error) {
	var (
		r          Result
		malg, walg string
	)
	err := q.QueryRow(ctx, qAdmitted, runID).Scan(&r.RunID, &r.AdmissionOperationID, &r.BillingAccountID, &r.BillingReservationID,
		&r.Manifest.Ref, &r.Manifest.SchemaVersion, &malg, &r.Manifest.Digest,
		&r.RunCreatedEventID, &r.WalletReservedEventID, &r.ReservedCredits,
		&r.FenceID, &r.WorkGeneration, &r.FinalizationOperationID,
		&r.Work.Ref, &r.Work.SchemaVersion, &walg, &r.Work.Digest, &r.WorkState, &r.WorkWaitingReason,
		&r.CorrelationID, &r.AdmittedAt)
	if err != nil {
		return Result{}, db.NotFound(err)
	}
	r.Manifest.DigestAlgorithmVersion = digest.Algorithm(malg)
	r.Work.DigestAlgorithmVersion = digest.Algorithm(walg)
	r.AdmittedAt = r.AdmittedAt.UTC()
	return r, nil
}

func nullable(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
