package metering

import (
	"context"
	"embed"
	"errors"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/oceanway/core/contracts/digest"
	"github.com/oceanway/core/contracts/envelope"
	"github.com/oceanway/core/contracts/receipt"
	"github.com/oceanway/core/contracts/route"
	"github.com/oceanway/core/contracts/strict"
	"github.com/oceanway/core/internal/db"
	"github.com/oceanway/core/internal/inbox"
	"github.com/oceanway/core/internal/outbox/transport"
	"github.com/oceanway/core/internal/ownerread"
	"github.com/oceanway/core/internal/ownerread/executionread"
	"github.com/oceanway/core/internal/ownerread/gatewayread"
)

//go:embed sql/*.sql
var sqlFiles embed.FS

var statements = db.MustLoadStatements("metering", sqlFiles, "sql")

var (
	qFenceEnsure  = statements.Get("fence_ensure")
	qFenceSelect  = statements.Get("fence_select")
	qFinishSelect = statements.Get("finish_select")
	qFenceUpdate  = statements.Get("fence_update")
	qUsageSelect  = statements.Get("usage_select")
	qUsageUpsert  = statements.Get("usage_upsert")
	qCostSelect   = statements.Get("cost_select")
	qCostUpsert   = statements.Get("cost_upsert")
	qWorkInsert   = statements.Get("work_insert")
	qWorkLatest   = statements.Get("work_latest")
)

// Config configures the input processor.
type Config struct {
	Inbox inbox.Config
	// Reads are the event-bound owner reads (required).
	Reads OwnerReads
}

// Consumer is the Metering input processor (an inbox.Consumer).
type Consumer struct {
	reads    OwnerReads
	receipts *inbox.Table
	// Inbox gives Consume (a transport.ConsumerFunc) and ConsumeBatch
	// (several deliveries in one transaction, one commit and their acks
	// recorded together; serve and the demo wire it, issue 35). A batch
	// keeps earlier events' fence locks until its commit, and takes them in
	// attempt order (BatchOrderKey), so two batches never wait on each
	// other in a cycle.
	*inbox.Inbox
}

// New builds the input processor over the metering database.
func New(pool db.Beginner, cfg Config) (*Consumer, error) {
	if cfg.Reads == nil {
		return nil, errors.New("metering: owner reads are required")
	}
	c := &Consumer{reads: cfg.Reads, receipts: inbox.NewTable("metering", "input_receipts", false)}
	in, err := inbox.New(pool, c, cfg.Inbox)
	if err != nil {
		return nil, err
	}
	c.Inbox = in
	return c, nil
}

// Destination implements inbox.Consumer.
func (c *Consumer) Destination() route.Destination { return route.MeteringInputProcessor }

// Receipts implements inbox.Consumer.
func (c *Consumer) Receipts() *inbox.Table { return c.receipts }

// ReceiptKey implements inbox.Consumer: (consumerName, eventId).
func (c *Consumer) ReceiptKey(ev *inbox.Event) (inbox.Key, error) {
	return inbox.Key{ConsumerName: route.MeteringInputProcessorConsumer, EventID: ev.Envelope.EventID, Projection: route.NotApplicable}, nil
}

// BatchOrderKey implements inbox.BatchOrder: a batch applies its events in
// the order of their attempts, so two batches lock the attempts' input
// fences in one order (they deadlocked crossing on two attempts, issue 35).
// Both pairs name the attempt in executionAttemptId; a payload without one
// sorts first and fails in ApplyTx.
func (c *Consumer) BatchOrderKey(ev *inbox.Event) string {
	id, _ := ev.Envelope.Payload["executionAttemptId"].(string)
	return id
}

// ApplyTx implements inbox.Consumer.
func (c *Consumer) ApplyTx(ctx context.Context, tx pgx.Tx, ev *inbox.Event) (inbox.Outcome, error) {
	env := ev.Envelope
	var (
		r   *receipt.MeteringInputProcessorConsumerReceipt
		err error
	)
	switch {
	case env.EventType == receipt.EventExecutionAttemptEligibilityFinalized && env.EventSchemaVersion == "1":
		r, err = c.applyEligibility(ctx, tx, ev)
	case env.EventType == receipt.EventGatewayAvailabilityCurrentChanged && env.EventSchemaVersion == "1":
		r, err = c.applyAvailability(ctx, tx, ev)
	default:
		return inbox.Outcome{}, transport.NonRetryable(CodePairNotConsumed, fmt.Errorf("%w: %s (%s)", ErrPairNotConsumed, env.EventType, env.EventSchemaVersion))
	}
	if err != nil {
		return inbox.Outcome{}, err
	}
	r.Header = receipt.Header{Receipt: strict.Quadruple{Ref: "mipr-" + uuid.Must(uuid.NewV7()).String()},
		EventID: env.EventID, EventEnvelopeDigest: ev.Delivery.EnvelopeDigest}
	r.CommittedAt = ev.Now
	if err := r.Seal(); err != nil {
		return inbox.Outcome{}, transport.NonRetryable(inbox.CodeReceiptInvariant, fmt.Errorf("seal metering receipt: %w", err))
	}
	return inbox.Applied(r), nil
}

// ownerError classifies a failed owner read: an invalid request is the
// event's fault (non_retryable), anything else is the owner being
// unavailable (retryable, nothing written).
func ownerError(err error) error {
	if errors.Is(err, ownerread.ErrInvalidRequest) {
		return transport.NonRetryable(CodeOwnerReadInvalid, err)
	}
	return transport.Retryable(CodeOwnerReadUnavailable, fmt.Errorf("%w: %w", ErrOwnerUnavailable, err))
}

// ownerAnswer turns not_found (retryable: the owner's read side is behind
// the event) and conflicting (non_retryable) into delivery errors.
func ownerAnswer(a ownerread.Answer, reason string) error {
	switch a {
	case ownerread.Found:
		return nil
	case ownerread.NotFound:
		return transport.Retryable(CodeOwnerFactNotFound, ErrOwnerNotFound)
	default:
		return transport.NonRetryable(CodeOwnerConflict, fmt.Errorf("%w: %s", ErrOwnerConflict, reason))
	}
}

// --- eligibility lane ------------------------------------------------------

// fenceRow is the attempt's input fence (eligibility lane) under its lock.
type fenceRow struct {
	EligibilityFenceRevision              int64   `db:"eligibility_fence_revision"`
	EligibilityFactRef                    *string `db:"eligibility_fact_ref"`
	EligibilityFactSchemaVersion          *string `db:"eligibility_fact_schema_version"`
	EligibilityFactDigestAlgorithmVersion *string `db:"eligibility_fact_digest_algorithm_version"`
	EligibilityFactDigest                 *string `db:"eligibility_fact_digest"`
	DispatchDisposition                   *string `db:"dispatch_disposition"`
	LatestEligibilityWorkGeneration       int64   `db:"latest_eligibility_work_generation"`
	EligibilityTriggerDigest              *string `db:"eligibility_trigger_digest"`
	EligibilitySource                     *string `db:"eligibility_source"`
}

func (f *fenceRow) fact() (strict.Quadruple, bool) {
	if f.EligibilityFactRef == nil {
		return strict.Quadruple{}, false
	}
	return strict.Quadruple{Ref: *f.EligibilityFactRef, SchemaVersion: *f.EligibilityFactSchemaVersion,
		DigestAlgorithmVersion: digest.Algorithm(*f.EligibilityFactDigestAlgorithmVersion), Digest: *f.EligibilityFactDigest}, true
}

type usageRow struct {
	GatewayDeploymentID       string `db:"gateway_deployment_id"`
	EvidenceDimensionKey      string `db:"evidence_dimension_key"`
	StateVersion              int64  `db:"state_version"`
	CurrentAvailabilityRef    string `db:"current_availability_ref"`
	CurrentAvailabilityDigest string `db:"current_availability_digest"`
	AvailabilityState         string `db:"availability_state"`
}

// lockFence locks the attempt's input fence, creating it on first use.
// The lock comes first: an attempt's fence exists after its first input,
// and the insert it would otherwise try every time was 8 of the 10 fence
// statements per run (issue 35). Two first uses at once both find none,
// both insert (one waits on the key, then does nothing) and lock in turn.
func lockFence(ctx context.Context, tx pgx.Tx, attemptID string) (*fenceRow, error) {
	f, err := selectFence(ctx, tx, attemptID)
	if !errors.Is(err, pgx.ErrNoRows) {
		return f, err
	}
	if _, err := tx.Exec(ctx, qFenceEnsure, pgx.NamedArgs{"attempt_id": attemptID}); err != nil {
		return nil, fmt.Errorf("ensure input fence: %w", err)
	}
	return selectFence(ctx, tx, attemptID)
}

// selectFence locks the attempt's input fence (pgx.ErrNoRows, wrapped,
// when it does not exist yet).
func selectFence(ctx context.Context, tx pgx.Tx, attemptID string) (*fenceRow, error) {
	rows, err := tx.Query(ctx, qFenceSelect, pgx.NamedArgs{"attempt_id": attemptID})
	if err != nil {
		return nil, fmt.Errorf("lock input fence: %w", err)
	}
	f, err := pgx.CollectExactlyOneRow(rows, pgx.RowToAddrOfStructByName[fenceRow])
	if err != nil {
		return nil, fmt.Errorf("lock input fence: %w", err)
	}
	return f, nil
}

func usageOf(ctx context.Context, tx pgx.Tx, attemptID string) ([]usageRow, error) {
	rows, err := tx.Query(ctx, qUsageSelect, pgx.NamedArgs{"attempt_id": attemptID})
	if err != nil {
		return nil, fmt.Errorf("read usage watermarks: %w", err)
	}
	u, err := pgx.CollectRows(rows, pgx.RowToStructByName[usageRow])
	if err != nil {
		return nil, fmt.Errorf("read usage watermarks: %w", err)
	}
	return u, nil
}

// eligibilityTrigger is the eligibility lane's trigger digest: the attempt,
// its eligibility fact (or none) and every usage watermark, sorted.
func eligibilityTrigger(attemptID string, f *fenceRow, usage []usageRow) (digest.Digest, error) {
	doc := map[string]any{"executionAttemptId": attemptID, "lane": receipt.LaneEligibility}
	if q, ok := f.fact(); ok {
		m := map[string]any{"dispatchDisposition": *f.DispatchDisposition}
		q.Put(m, "executionEligibilityFact")
		doc["eligibility"] = m
	} else {
		doc["eligibility"] = "none"
	}
	items := make([]any, 0, len(usage))
	for _, u := range usage {
		items = append(items, map[string]any{
			"gatewayDeploymentId": u.GatewayDeploymentID, "evidenceDimensionKey": u.EvidenceDimensionKey,
			"stateVersion": u.StateVersion, "currentAvailabilityRef": u.CurrentAvailabilityRef,
			"currentAvailabilityDigest": u.CurrentAvailabilityDigest, "availabilityState": u.AvailabilityState,
		})
	}
	doc["usage"] = items
	return digest.Of(digest.JCSSHA256V1, doc)
}

func (c *Consumer) applyEligibility(ctx context.Context, tx pgx.Tx, ev *inbox.Event) (*receipt.MeteringInputProcessorConsumerReceipt, error) {
	env := ev.Envelope
	p, err := envelope.PayloadOf[envelope.ExecutionAttemptEligibilityFinalizedV1Payload](env)
	if err != nil {
		return nil, transport.NonRetryable(CodePayloadInvalid, err)
	}
	if env.AggregateID != p.ExecutionAttemptID {
		return nil, transport.NonRetryable(CodeEnvelopeIdentity, fmt.Errorf("%w: aggregate %s, attempt %s", ErrEnvelopeIdentity, env.AggregateID, p.ExecutionAttemptID))
	}
	factQ := p.ExecutionEligibilityFact()
	res, err := c.reads.ReadEligibilityFact(ctx, executionread.EligibilityFactRead{
		ContractVersion: executionread.ReadEligibilityFactV1, Audience: executionread.AudienceMeteringInput,
		BillingReservationID: p.BillingReservationID, BillingAccountID: p.BillingAccountID, RunID: p.RunID,
		RunStepID: p.RunStepID, ExecutionAttemptID: p.ExecutionAttemptID, AttemptManifest: p.AttemptExecutionManifest(), Fact: factQ,
	})
	if err != nil {
		return nil, ownerError(err)
	}
	if err := ownerAnswer(res.Answer, res.Reason); err != nil {
		return nil, err
	}
	disposition := res.Value.Disposition

	f, err := lockFence(ctx, tx, p.ExecutionAttemptID)
	if err != nil {
		return nil, err
	}
	usage, err := usageOf(ctx, tx, p.ExecutionAttemptID)
	if err != nil {
		return nil, err
	}
	outcome := receipt.OutcomeAdvanced
	if q, ok := f.fact(); ok {
		// guard ME-1.eligibility-fact-conflict
		if q != factQ {
			return nil, transport.NonRetryable(CodeEligibilityConflict, fmt.Errorf("%w: %s has %s, event %s", ErrEligibilityConflict, p.ExecutionAttemptID, q.Ref, factQ.Ref))
		}
		outcome = receipt.OutcomeAlreadyObserved
	} else {
		alg := string(factQ.DigestAlgorithmVersion)
		f.EligibilityFactRef, f.EligibilityFactSchemaVersion, f.EligibilityFactDigestAlgorithmVersion, f.EligibilityFactDigest =
			&factQ.Ref, &factQ.SchemaVersion, &alg, &factQ.Digest
		f.DispatchDisposition = &disposition
		src, err := encodeSource(eligibilitySource{
			TenantKind: env.TenantKind, TenantID: env.TenantID, WorkspaceID: env.WorkspaceID, ProjectID: env.ProjectID,
			BillingReservationID: p.BillingReservationID, BillingAccountID: p.BillingAccountID, RunID: p.RunID,
			RunStepID: p.RunStepID, ExecutionAttemptID: p.ExecutionAttemptID, AttemptManifest: p.AttemptExecutionManifest(), Fact: factQ,
		})
		if err != nil {
			return nil, err
		}
		f.EligibilitySource = &src
		// not_dispatched never waits for the gateway; dispatched waits for usage.
		schedule := disposition == "not_dispatched" || len(usage) > 0
		if err := advanceEligibility(ctx, tx, p.ExecutionAttemptID, f, usage, schedule); err != nil {
			return nil, err
		}
	}
	lane, err := eligibilityLane(ctx, tx, p.ExecutionAttemptID, f, usage)
	if err != nil {
		return nil, err
	}
	return &receipt.MeteringInputProcessorConsumerReceipt{
		Source: receipt.MeteringSource{Kind: receipt.SourceExecutionEligibility, ExecutionEligibility: &receipt.ExecutionEligibilitySource{
			Tenant:               receipt.Tenant{Kind: env.TenantKind, ID: env.TenantID, WorkspaceID: env.WorkspaceID, ProjectID: env.ProjectID},
			BillingReservationID: p.BillingReservationID, BillingAccountID: p.BillingAccountID, RunID: p.RunID,
			RunStepID: p.RunStepID, ExecutionAttemptID: p.ExecutionAttemptID,
			AttemptExecutionManifest: p.AttemptExecutionManifest(), ExecutionEligibilityFact: factQ,
		}},
		Outcome: outcome,
		Lane:    lane,
	}, nil
}

// advanceEligibility moves the eligibility lane one fence revision forward,
// recomputes its trigger and, when schedule, inserts the next Work generation.
func advanceEligibility(ctx context.Context, tx pgx.Tx, attemptID string, f *fenceRow, usage []usageRow, schedule bool) error {
	trig, err := eligibilityTrigger(attemptID, f, usage)
	if err != nil {
		return fmt.Errorf("eligibility trigger: %w", err)
	}
	f.EligibilityFenceRevision++
	tv := trig.Value
	f.EligibilityTriggerDigest = &tv
	if schedule {
		f.LatestEligibilityWorkGeneration++
		if _, err := insertWork(ctx, tx, workSpec{AttemptID: attemptID, Lane: receipt.LaneEligibility,
			Generation: f.LatestEligibilityWorkGeneration, FenceRevision: f.EligibilityFenceRevision, Trigger: trig}); err != nil {
			return err
		}
	}
	_, err = tx.Exec(ctx, qFenceUpdate, pgx.NamedArgs{
		"attempt_id": attemptID, "fence_revision": f.EligibilityFenceRevision,
		"fact_ref": f.EligibilityFactRef, "fact_schema_version": f.EligibilityFactSchemaVersion,
		"fact_digest_algorithm_version": f.EligibilityFactDigestAlgorithmVersion, "fact_digest": f.EligibilityFactDigest,
		"disposition": f.DispatchDisposition, "latest_generation": f.LatestEligibilityWorkGeneration,
		"trigger_digest": f.EligibilityTriggerDigest, "source": f.EligibilitySource,
	})
	if err != nil {
		return fmt.Errorf("advance input fence: %w", err)
	}
	return nil
}

// eligibilityLane is the lane state after this transaction's effect.
func eligibilityLane(ctx context.Context, tx pgx.Tx, attemptID string, f *fenceRow, usage []usageRow) (receipt.MeteringLane, error) {
	e := &receipt.EligibilityLane{
		FenceRevision: f.EligibilityFenceRevision, LatestWorkGeneration: f.LatestEligibilityWorkGeneration,
		TriggerDigest: digest.Digest{Algorithm: digest.JCSSHA256V1, Value: *f.EligibilityTriggerDigest},
	}
	_, hasFact := f.fact()
	switch {
	case f.LatestEligibilityWorkGeneration > 0:
		w, err := latestWork(ctx, tx, attemptID, receipt.LaneEligibility, "", "", f.LatestEligibilityWorkGeneration)
		if err != nil {
			return receipt.MeteringLane{}, err
		}
		e.Coordination = receipt.EligibilityCoordination{State: receipt.StatePending, ActiveWork: &w}
		// pending binds only an active Work: a latest generation that already
		// applied is the applied state with its finish and snapshot set.
		applied, err := appliedWork(ctx, tx, w)
		if err != nil {
			return receipt.MeteringLane{}, err
		}
		if applied != nil {
			e.Coordination = receipt.EligibilityCoordination{State: receipt.StateApplied, Applied: applied}
			break
		}
		// An active Work whose latest attempt is blocked on an owner's
		// conflict fact: the lane is blocked_on_owner_conflict (issue 32).
		blocked, err := ownerBlocked(ctx, tx, w.Work.Ref)
		if err != nil {
			return receipt.MeteringLane{}, err
		}
		if blocked != nil {
			e.Coordination = receipt.EligibilityCoordination{State: receipt.StateBlockedOnOwnerConflict, ActiveWork: &w, Blocked: blocked}
		}
	case !hasFact:
		e.Coordination = receipt.EligibilityCoordination{State: receipt.StateWaitingForExecution}
	case len(usage) == 0:
		e.Coordination = receipt.EligibilityCoordination{State: receipt.StateWaitingForGatewayUsage}
	default:
		return receipt.MeteringLane{}, fmt.Errorf("metering: eligibility lane of %s has both inputs but no work", attemptID)
	}
	return receipt.MeteringLane{Kind: receipt.LaneEligibility, Eligibility: e}, nil
}

// appliedWork is the applied binding of w (generation, operation, Work and
// Finish quadruples, snapshot set) when w finished applied; nil otherwise
// (unfinished, including blocked Work, which stays pending).
func appliedWork(ctx context.Context, tx pgx.Tx, w receipt.WorkBinding) (*receipt.AppliedWork, error) {
	var state, body string
	err := tx.QueryRow(ctx, qFinishSelect, pgx.NamedArgs{"work_ref": w.Work.Ref}).Scan(&state, &body)
	if errors.Is(err, pgx.ErrNoRows) || (err == nil && state != receipt.FinishApplied) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read work finish: %w", err)
	}
	f, err := receipt.DecodeMeteringInputWorkAttemptFinished([]byte(body))
	if err != nil {
		return nil, fmt.Errorf("stored work finish %s: %w", w.Work.Ref, err)
	}
	if f.Outcome.Snapshots == nil {
		return nil, fmt.Errorf("metering: applied finish %s has no snapshot set", f.Finished.Ref)
	}
	return &receipt.AppliedWork{Work: w, Finished: f.Finished, Snapshots: *f.Outcome.Snapshots}, nil
}

// --- gateway availability --------------------------------------------------

func (c *Consumer) applyAvailability(ctx context.Context, tx pgx.Tx, ev *inbox.Event) (*receipt.MeteringInputProcessorConsumerReceipt, error) {
	env := ev.Envelope
	p, err := envelope.PayloadOf[envelope.GatewayEvidenceAvailabilityCurrentChangedV1Payload](env)
	if err != nil {
		return nil, transport.NonRetryable(CodePayloadInvalid, err)
	}
	chainID := envelope.GatewayAvailabilityChainID(p.ExecutionAttemptID, p.GatewayDeploymentID, p.ProviderEvidenceKind, p.EvidenceDimensionKey)
	if env.AggregateID != chainID || env.AggregateRevision != p.CurrentAvailabilityStateVersion {
		return nil, transport.NonRetryable(CodeEnvelopeIdentity, fmt.Errorf("%w: aggregate %s@%d, chain %s@%d", ErrEnvelopeIdentity,
			env.AggregateID, env.AggregateRevision, chainID, p.CurrentAvailabilityStateVersion))
	}
	cur := p.CurrentAvailability()
	res, err := c.reads.ReadAvailabilitySnapshot(ctx, gatewayread.AvailabilitySnapshotRead{
		ContractVersion: gatewayread.ReadAvailabilitySnapshotV1, Audience: gatewayread.AudienceMeteringInput,
		ExecutionAttemptID: p.ExecutionAttemptID, GatewayDeploymentID: p.GatewayDeploymentID, AttemptManifest: p.AttemptExecutionManifest(),
		EvidenceKind: p.ProviderEvidenceKind, DimensionKey: p.EvidenceDimensionKey, StateVersion: p.CurrentAvailabilityStateVersion, Snapshot: cur,
	})
	if err != nil {
		return nil, ownerError(err)
	}
	if err := ownerAnswer(res.Answer, res.Reason); err != nil {
		return nil, err
	}
	obs := observed{StateVersion: p.CurrentAvailabilityStateVersion, Snapshot: cur, State: res.Value.State}
	src := receipt.MeteringSource{Kind: receipt.SourceGatewayAvailability, GatewayAvailability: &receipt.GatewayAvailabilitySource{
		ExecutionAttemptID: p.ExecutionAttemptID, GatewayDeploymentID: p.GatewayDeploymentID,
		AttemptExecutionManifest: p.AttemptExecutionManifest(), ProviderEvidenceKind: p.ProviderEvidenceKind,
		EvidenceDimensionKey: p.EvidenceDimensionKey, CurrentAvailability: cur, CurrentAvailabilityStateVersion: p.CurrentAvailabilityStateVersion,
	}}
	f, err := lockFence(ctx, tx, p.ExecutionAttemptID)
	if err != nil {
		return nil, err
	}
	r := &receipt.MeteringInputProcessorConsumerReceipt{Source: src}
	switch p.ProviderEvidenceKind {
	case receipt.EvidenceProviderUsage:
		r.Outcome, r.Lane, err = applyUsage(ctx, tx, p.ExecutionAttemptID, p.GatewayDeploymentID, p.EvidenceDimensionKey, f, obs)
	case receipt.EvidenceProviderCost:
		r.Outcome, r.Lane, err = applyCost(ctx, tx, p.ExecutionAttemptID, p.GatewayDeploymentID, p.EvidenceDimensionKey, p.AttemptExecutionManifest(), obs)
	default:
		err = transport.NonRetryable(CodePayloadInvalid, fmt.Errorf("provider evidence kind %q", p.ProviderEvidenceKind))
	}
	if err != nil {
		return nil, err
	}
	return r, nil
}

// observed is one verified availability snapshot of an event.
type observed struct {
	StateVersion int64
	Snapshot     strict.Quadruple
	State        string
}

// compareWatermark decides advanced / already_observed / conflict for an
// observation against a lane watermark (0 = none).
func compareWatermark(wmVersion int64, wmRef, wmDigest string, o observed) (advance bool, err error) {
	switch {
	case o.StateVersion > wmVersion:
		return true, nil
	case o.StateVersion < wmVersion:
		return false, nil
	// guard ME-1.availability-conflict
	case wmRef != o.Snapshot.Ref || wmDigest != o.Snapshot.Digest:
		return false, transport.NonRetryable(CodeAvailabilityConflict, fmt.Errorf("%w: state version %d is %s, event %s",
			ErrAvailabilityConflict, o.StateVersion, wmRef, o.Snapshot.Ref))
	default:
		return false, nil
	}
}

func applyUsage(ctx context.Context, tx pgx.Tx, attemptID, deploymentID, dimension string, f *fenceRow, o observed) (string, receipt.MeteringLane, error) {
	usage, err := usageOf(ctx, tx, attemptID)
	if err != nil {
		return "", receipt.MeteringLane{}, err
	}
	var wm usageRow
	idx := -1
	for i, u := range usage {
		if u.GatewayDeploymentID == deploymentID && u.EvidenceDimensionKey == dimension {
			wm, idx = u, i
		}
	}
	advance, err := compareWatermark(wm.StateVersion, wm.CurrentAvailabilityRef, wm.CurrentAvailabilityDigest, o)
	if err != nil {
		return "", receipt.MeteringLane{}, err
	}
	outcome := receipt.OutcomeAlreadyObserved
	if advance {
		outcome = receipt.OutcomeAdvanced
		row := usageRow{GatewayDeploymentID: deploymentID, EvidenceDimensionKey: dimension, StateVersion: o.StateVersion,
			CurrentAvailabilityRef: o.Snapshot.Ref, CurrentAvailabilityDigest: o.Snapshot.Digest, AvailabilityState: o.State}
		if _, err := tx.Exec(ctx, qUsageUpsert, pgx.NamedArgs{"attempt_id": attemptID, "deployment_id": deploymentID,
			"dimension_key": dimension, "state_version": o.StateVersion, "ref": o.Snapshot.Ref, "digest": o.Snapshot.Digest,
			"availability_state": o.State}); err != nil {
			return "", receipt.MeteringLane{}, fmt.Errorf("advance usage watermark: %w", err)
		}
		if idx >= 0 {
			usage[idx] = row
		} else {
			usage = insertSorted(usage, row)
		}
		_, hasFact := f.fact()
		if err := advanceEligibility(ctx, tx, attemptID, f, usage, hasFact); err != nil {
			return "", receipt.MeteringLane{}, err
		}
	}
	lane, err := eligibilityLane(ctx, tx, attemptID, f, usage)
	return outcome, lane, err
}

func insertSorted(us []usageRow, row usageRow) []usageRow {
	for i, u := range us {
		if u.GatewayDeploymentID > row.GatewayDeploymentID ||
			(u.GatewayDeploymentID == row.GatewayDeploymentID && u.EvidenceDimensionKey > row.EvidenceDimensionKey) {
			return append(us[:i], append([]usageRow{row}, us[i:]...)...)
		}
	}
	return append(us, row)
}

type costRow struct {
	FenceRevision             int64  `db:"fence_revision"`
	StateVersion              int64  `db:"state_version"`
	CurrentAvailabilityRef    string `db:"current_availability_ref"`
	CurrentAvailabilityDigest string `db:"current_availability_digest"`
	AvailabilityState         string `db:"availability_state"`
	LatestWorkGeneration      int64  `db:"latest_work_generation"`
	TriggerDigest             string `db:"trigger_digest"`
}

// applyCost runs under the attempt's fence lock and the cost lane's row lock.
// The lane keeps the manifest quadruple for the worker's event-bound reads;
// the receipt freezes the coordination the worker committed for the latest
// generation (pending when none yet).
func applyCost(ctx context.Context, tx pgx.Tx, attemptID, deploymentID, dimension string, manifest strict.Quadruple, o observed) (string, receipt.MeteringLane, error) {
	args := pgx.NamedArgs{"attempt_id": attemptID, "deployment_id": deploymentID, "dimension_key": dimension}
	rows, err := tx.Query(ctx, qCostSelect, args)
	if err != nil {
		return "", receipt.MeteringLane{}, fmt.Errorf("lock cost lane: %w", err)
	}
	lane, err := pgx.CollectRows(rows, pgx.RowToStructByName[costRow])
	if err != nil {
		return "", receipt.MeteringLane{}, fmt.Errorf("lock cost lane: %w", err)
	}
	var cur costRow
	if len(lane) == 1 {
		cur = lane[0]
	}
	advance, err := compareWatermark(cur.StateVersion, cur.CurrentAvailabilityRef, cur.CurrentAvailabilityDigest, o)
	if err != nil {
		return "", receipt.MeteringLane{}, err
	}
	outcome := receipt.OutcomeAlreadyObserved
	if advance {
		outcome = receipt.OutcomeAdvanced
		trig, err := digest.Of(digest.JCSSHA256V1, map[string]any{
			"executionAttemptId": attemptID, "lane": receipt.LaneProviderCost, "gatewayDeploymentId": deploymentID,
			"sourceEvidenceDimensionKey": dimension, "stateVersion": o.StateVersion, "availabilityState": o.State,
			"currentAvailabilityRef": o.Snapshot.Ref, "currentAvailabilityDigest": o.Snapshot.Digest,
		})
		if err != nil {
			return "", receipt.MeteringLane{}, fmt.Errorf("cost trigger: %w", err)
		}
		cur = costRow{FenceRevision: cur.FenceRevision + 1, StateVersion: o.StateVersion, CurrentAvailabilityRef: o.Snapshot.Ref,
			CurrentAvailabilityDigest: o.Snapshot.Digest, AvailabilityState: o.State, LatestWorkGeneration: cur.LatestWorkGeneration + 1,
			TriggerDigest: trig.Value}
		if _, err := insertWork(ctx, tx, workSpec{AttemptID: attemptID, Lane: receipt.LaneProviderCost, DeploymentID: deploymentID,
			DimensionKey: dimension, Generation: cur.LatestWorkGeneration, FenceRevision: cur.FenceRevision, Trigger: trig}); err != nil {
			return "", receipt.MeteringLane{}, err
		}
		if _, err := tx.Exec(ctx, qCostUpsert, pgx.NamedArgs{"attempt_id": attemptID, "deployment_id": deploymentID,
			"dimension_key": dimension, "fence_revision": cur.FenceRevision, "state_version": cur.StateVersion,
			"ref": cur.CurrentAvailabilityRef, "digest": cur.CurrentAvailabilityDigest, "availability_state": cur.AvailabilityState,
			"latest_generation": cur.LatestWorkGeneration, "trigger_digest": cur.TriggerDigest,
			"manifest_ref": manifest.Ref, "manifest_schema_version": manifest.SchemaVersion,
			"manifest_digest_algorithm_version": string(manifest.DigestAlgorithmVersion), "manifest_digest": manifest.Digest}); err != nil {
			return "", receipt.MeteringLane{}, fmt.Errorf("advance cost lane: %w", err)
		}
	}
	w, err := latestWork(ctx, tx, attemptID, receipt.LaneProviderCost, deploymentID, dimension, cur.LatestWorkGeneration)
	if err != nil {
		return "", receipt.MeteringLane{}, err
	}
	coord, err := costCoordinationOf(ctx, tx, attemptID, deploymentID, dimension, w)
	if err != nil {
		return "", receipt.MeteringLane{}, err
	}
	return outcome, receipt.MeteringLane{Kind: receipt.LaneProviderCost, ProviderCost: &receipt.ProviderCostLane{
		GatewayDeploymentID: deploymentID, SourceEvidenceDimensionKey: dimension,
		FenceRevision: cur.FenceRevision, LatestWorkGeneration: cur.LatestWorkGeneration,
		TriggerDigest: digest.Digest{Algorithm: digest.JCSSHA256V1, Value: cur.TriggerDigest},
		Coordination:  coord,
	}}, nil
}

// ownerBlocked is the quadruple of the Work's latest Blocked@1 when it names
// an owner's conflict fact (the lane is then blocked_on_owner_conflict);
// nil when the Work has no block or its latest block is Metering's own
// processing conflict.
func ownerBlocked(ctx context.Context, tx pgx.Tx, workRef string) (*strict.Quadruple, error) {
	var body string
	var kind, ref, dg *string
	err := tx.QueryRow(ctx, qOwnerBlockLatest, pgx.NamedArgs{"work_ref": workRef}).Scan(&body, &kind, &ref, &dg)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("read latest block of %s: %w", workRef, err)
	case kind == nil:
		return nil, nil
	}
	b, err := receipt.DecodeMeteringInputWorkAttemptBlocked([]byte(body))
	if err != nil {
		return nil, fmt.Errorf("stored blocked of %s: %w", workRef, err)
	}
	q := b.Blocked
	return &q, nil
}
