package cutover

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/oceanway/core/contracts/deliveryset"
	"github.com/oceanway/core/contracts/digest"
	"github.com/oceanway/core/contracts/jcs"
	"github.com/oceanway/core/internal/db"
	"github.com/oceanway/core/internal/operations/cutover/dbsqlc"
	"github.com/oceanway/core/internal/operations/projector"
	"github.com/oceanway/core/internal/outbox"
)

// ProofType and ProofSchemaVersion name the readiness proof body.
const (
	ProofType          = "OperationsProjectionReadinessProof"
	ProofSchemaVersion = "1"
)

// ProofRef is the content address a readiness proof is referenced by (the
// projection version's ready mark in the outbox registry).
func ProofRef(d digest.Digest) string {
	return "operations.readiness_proofs:" + string(d.Algorithm) + ":" + d.Value
}

// Hooks let tests act between the steps of a cutover; nil fields do nothing.
type Hooks struct {
	// AfterFreeze runs after the candidate is frozen, before the catch-up.
	AfterFreeze func(ctx context.Context, candidateID, token string) error
	// BeforeFinal runs after the catch-up, before the final transaction.
	BeforeFinal func(ctx context.Context) error
}

// Result is the outcome of a cutover.
type Result struct {
	ProjectionName     string     `json:"projectionName"`
	ProjectionVersion  int64      `json:"projectionVersion"`
	PreviousVersion    int64      `json:"previousVersion"`
	CandidateID        string     `json:"candidateId"`
	CandidateMembers   int64      `json:"candidateMembers"`
	CatchUp            FeedResult `json:"catchUp"`
	ProofDigest        string     `json:"proofDigest"`
	ProofRef           string     `json:"proofRef"`
	DeliverySetVersion int64      `json:"deliverySetVersion"`
	AfterSwitch        FeedResult `json:"afterSwitch"`
}

// Cutover switches the projection to version v exactly as the outbox
// document specifies (see the package documentation for the five steps).
// The version must have a shadow build (Shadow). On ErrNotReady and every
// other failure before the final transaction commits nothing is switched;
// the build stays paused or catching up, and Shadow claims it again.
func Cutover(ctx context.Context, pool Pool, cfg Config, v int64, hooks Hooks) (Result, error) {
	cfg = cfg.withDefaults()
	res := Result{ProjectionName: cfg.ProjectionName, ProjectionVersion: v}
	key := pgx.NamedArgs{"projection_name": cfg.ProjectionName, "projection_version": v}

	// 1. Pause the shadow claim and drain it.
	err := db.WithTx(ctx, pool, func(ctx context.Context, tx pgx.Tx) error {
		_, err := queries.BuildPause(ctx, tx, dbsqlc.BuildPauseParams{ProjectionName: cfg.ProjectionName, ProjectionVersion: v})
		if err = db.NotFound(err); errors.Is(err, db.ErrNotFound) {
			return fmt.Errorf("%w: %s@%d is not building (run projection shadow first)", ErrNoShadow, cfg.ProjectionName, v)
		}
		return err
	})
	if err != nil {
		return res, fmt.Errorf("pause shadow claim: %w", err)
	}

	// 2. Freeze the candidate and bind a new shadow token (one short
	// consistent snapshot).
	active, err := activeVersion(ctx, pool, cfg.ProjectionName)
	if err != nil {
		return res, err
	}
	if active == v {
		return res, fmt.Errorf("%w: %s@%d", ErrActiveVersion, cfg.ProjectionName, v)
	}
	res.PreviousVersion = active
	candidate, token := uuid.NewString(), uuid.NewString()
	err = db.WithTxOptions(ctx, pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead}, func(ctx context.Context, tx pgx.Tx) error {
		args := withArgs(key, pgx.NamedArgs{"candidate_id": candidate, "token": token, "active_projection_version": active})
		type frozen struct {
			MemberCount int64 `db:"member_count"`
		}
		// same snapshot as the candidate: every source event is hot or refused
		if err := refuseArchivedSource(ctx, tx, cfg.ProjectionName, ""); err != nil {
			return err
		}
		f, err := collectOne(ctx, tx, qCandidateInsert, args, pgx.RowToStructByName[frozen])
		if err != nil {
			return fmt.Errorf("freeze candidate: %w", err)
		}
		res.CandidateMembers = f.MemberCount
		if _, err := tx.Exec(ctx, qCandidateMembersInsert, args); err != nil {
			return fmt.Errorf("freeze candidate members: %w", err)
		}
		if _, err := queries.BuildFreeze(ctx, tx, dbsqlc.BuildFreezeParams{
			Token: token, CandidateID: &candidate, ProjectionName: cfg.ProjectionName, ProjectionVersion: v,
		}); err != nil {
			return fmt.Errorf("bind shadow token: %w", err)
		}
		return nil
	})
	if err != nil {
		return res, err
	}
	res.CandidateID = candidate
	if hooks.AfterFreeze != nil {
		if err := hooks.AfterFreeze(ctx, candidate, token); err != nil {
			return res, err
		}
	}

	// 3. Catch up to the boundary, under the new token.
	res.CatchUp, err = feed(ctx, pool, cfg, v, token, candidate)
	if err != nil {
		return res, fmt.Errorf("catch up to the candidate: %w", err)
	}
	if hooks.BeforeFinal != nil {
		if err := hooks.BeforeFinal(ctx); err != nil {
			return res, err
		}
	}

	// 4. + 5. Stop and drain the active claim; re-check, prove, switch.
	err = db.WithTx(ctx, pool, func(ctx context.Context, tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, qCutoverGate, pgx.NamedArgs{"gate_key": projector.CutoverGateKey}); err != nil {
			return fmt.Errorf("stop the active claim: %w", err)
		}
		proof, err := proveTx(ctx, tx, cfg.ProjectionName, v, candidate, token)
		if err != nil {
			return err
		}
		res.ProofDigest, res.ProofRef = proof.Value, ProofRef(proof)
		if err := outbox.MarkProjectionReadyTx(ctx, tx, cfg.ProjectionName, v, res.ProofRef); err != nil {
			return err
		}
		defVersion, err := registerDefinitionTx(ctx, tx, cfg.ProjectionName, v)
		if err != nil {
			return err
		}
		res.DeliverySetVersion = defVersion
		if _, err := outbox.CutoverTx(ctx, tx, outbox.CutoverParams{
			ProjectionName: cfg.ProjectionName, ProjectionVersion: v, DeliverySetVersion: defVersion,
		}); err != nil {
			return err
		}
		n, err := queries.BuildCutOver(ctx, tx, dbsqlc.BuildCutOverParams{
			ProofDigest: &proof.Value, ProjectionName: cfg.ProjectionName, ProjectionVersion: v,
		})
		if err != nil {
			return fmt.Errorf("mark build cut over: %w", err)
		}
		if n != 1 {
			return ErrCandidateChanged
		}
		return nil
	})
	if err != nil {
		return res, err
	}

	// After the switch the new active version catches up on the events
	// appended after the freeze (frozen to the old definition).
	res.AfterSwitch, err = CatchUp(ctx, pool, cfg, v)
	return res, err
}

type checkRow struct {
	MemberCount             int64            `db:"member_count"`
	MembersSHA256           string           `db:"members_sha256"`
	DatabaseSnapshot        string           `db:"database_snapshot"`
	FrozenAt                time.Time        `db:"frozen_at"`
	ActiveProjectionVersion int64            `db:"active_projection_version"`
	MembersNow              int64            `db:"members_now"`
	MembersSHA256Now        string           `db:"members_sha256_now"`
	Receipts                int64            `db:"receipts"`
	ReceiptsSHA256          string           `db:"receipts_sha256"`
	UnresolvedGaps          int64            `db:"unresolved_gaps"`
	Unsupported             int64            `db:"unsupported"`
	Quarantined             int64            `db:"quarantined"`
	Definitions             []map[string]any `db:"definitions"`
	ReceiptCoordinates      []map[string]any `db:"receipt_coordinates"`
}

// proveTx re-checks the candidate under the locked build and writes the
// readiness proof; it returns the proof's digest.
func proveTx(ctx context.Context, tx pgx.Tx, name string, v int64, candidate, token string) (digest.Digest, error) {
	key := pgx.NamedArgs{"projection_name": name, "projection_version": v, "candidate_id": candidate}
	b, err := queries.BuildLock(ctx, tx, dbsqlc.BuildLockParams{ProjectionName: name, ProjectionVersion: v})
	if err != nil {
		return digest.Digest{}, fmt.Errorf("lock shadow build: %w", err)
	}
	if b.State != "catching_up" || b.ClaimToken != token || b.CandidateID == nil || *b.CandidateID != candidate {
		return digest.Digest{}, fmt.Errorf("%w: build is %s", ErrCandidateChanged, b.State)
	}
	// an event archived after the freeze is a candidate member (and covered);
	// one outside the candidate would be a source event the proof misses
	if err := refuseArchivedSource(ctx, tx, name, candidate); err != nil {
		return digest.Digest{}, err
	}
	c, err := collectOne(ctx, tx, qCandidateCheck, key, pgx.RowToStructByName[checkRow])
	if err != nil {
		return digest.Digest{}, fmt.Errorf("re-check candidate: %w", err)
	}
	if c.MembersNow != c.MemberCount || c.MembersSHA256Now != c.MembersSHA256 {
		return digest.Digest{}, fmt.Errorf("%w: candidate members differ from their frozen digest", ErrCandidateChanged)
	}
	if c.Receipts != c.MemberCount || c.UnresolvedGaps > 0 || c.Unsupported > 0 || c.Quarantined > 0 {
		return digest.Digest{}, fmt.Errorf("%w: %s@%d covers %d of %d candidate members, %d unresolved gaps, %d unsupported, %d quarantined",
			ErrNotReady, name, v, c.Receipts, c.MemberCount, c.UnresolvedGaps, c.Unsupported, c.Quarantined)
	}
	body := proofBody(name, v, candidate, c)
	canonical, err := jcs.Marshal(body)
	if err != nil {
		return digest.Digest{}, fmt.Errorf("canonicalize readiness proof: %w", err)
	}
	d, err := digest.OfCanonical(digest.JCSSHA256V1, canonical)
	if err != nil {
		return digest.Digest{}, err
	}
	if err := insertProof(ctx, tx, name, v, candidate, c.MemberCount, d, canonical); err != nil {
		return digest.Digest{}, err
	}
	return d, nil
}

func insertProof(ctx context.Context, tx pgx.Tx, name string, v int64, candidate string, members int64, d digest.Digest, body []byte) error {
	err := queries.ProofInsert(ctx, tx, dbsqlc.ProofInsertParams{
		ProofDigest: d.Value, ProofDigestAlgorithmVersion: string(d.Algorithm), ProjectionName: name,
		ProjectionVersion: v, CandidateID: candidate, MemberCount: members, ProofBody: string(body),
	})
	if db.SQLState(err) == SQLStateProofRefused {
		return fmt.Errorf("%w: %w", ErrProofRefused, err)
	}
	if err != nil {
		return fmt.Errorf("insert readiness proof: %w", err)
	}
	return nil
}

// proofBody is the readiness proof's content: what was frozen (candidate
// members digest, definitions, expected receipt coordinates, snapshot) and
// what was proved of it (receipts digest; zero gaps, unsupported schema and
// quarantine). No time of proving is part of it, so equal facts give an
// equal address.
func proofBody(name string, v int64, candidate string, c checkRow) map[string]any {
	defs := make([]any, len(c.Definitions))
	for i, d := range c.Definitions {
		defs[i] = d
	}
	coords := make([]any, len(c.ReceiptCoordinates))
	for i, d := range c.ReceiptCoordinates {
		coords[i] = d
	}
	return map[string]any{
		"proofType":               ProofType,
		"proofSchemaVersion":      ProofSchemaVersion,
		"projectionName":          name,
		"projectionVersion":       v,
		"activeProjectionVersion": c.ActiveProjectionVersion,
		"candidate": map[string]any{
			"candidateId":      candidate,
			"databaseSnapshot": c.DatabaseSnapshot,
			"frozenAt":         c.FrozenAt.UTC().Format(time.RFC3339Nano),
			"memberCount":      c.MemberCount,
			"membersSha256":    c.MembersSHA256,
			"definitions":      defs,
			"expectedReceipts": coords,
		},
		"coverage": map[string]any{
			"receiptCount":       c.Receipts,
			"receiptsSha256":     c.ReceiptsSHA256,
			"unresolvedGaps":     c.UnresolvedGaps,
			"unsupportedInScope": c.Unsupported,
			"quarantinedInScope": c.Quarantined,
		},
	}
}

// registerDefinitionTx registers the definition the switch activates: the
// active definition with every target of the projection set to version v,
// under the next free delivery set version (insert-or-compare, DS-6).
func registerDefinitionTx(ctx context.Context, tx pgx.Tx, name string, v int64) (int64, error) {
	if err := outbox.LockActivationTx(ctx, tx); err != nil {
		return 0, err
	}
	active, err := outbox.ActiveDefinition(ctx, tx)
	if err != nil {
		return 0, err
	}
	all, err := outbox.Definitions(ctx, tx)
	if err != nil {
		return 0, err
	}
	next := int64(1)
	for _, d := range all {
		next = max(next, d.Definition.Version+1)
	}
	def := &deliveryset.Definition{
		Version: next, SchemaVersion: active.Definition.SchemaVersion,
		Digest:           digest.Digest{Algorithm: active.Definition.Digest.Algorithm},
		ApplicableEvents: append([]deliveryset.EventKey(nil), active.Definition.ApplicableEvents...),
	}
	for _, m := range active.Definition.Members {
		if m.ProjectionTarget.Required && m.ProjectionTarget.Name == name {
			m.ProjectionTarget.Version = v
		}
		def.Members = append(def.Members, m)
	}
	deliveryset.Sort(def)
	if err := def.Seal(); err != nil {
		return 0, fmt.Errorf("%w: %w", outbox.ErrInvalidDefinition, err)
	}
	if _, err := outbox.RegisterTx(ctx, tx, def, outbox.RegisterOpts{SourceRelease: fmt.Sprintf("cutover %s@%d", name, v)}); err != nil {
		return 0, err
	}
	return next, nil
}

func collectOne[T any](ctx context.Context, q db.Executor, sql string, args pgx.NamedArgs, fn pgx.RowToFunc[T]) (T, error) {
	rows, err := q.Query(ctx, sql, args)
	if err != nil {
		var zero T
		return zero, err
	}
	v, err := pgx.CollectExactlyOneRow(rows, fn)
	return v, db.NotFound(err)
}

func withArgs(sets ...pgx.NamedArgs) pgx.NamedArgs {
	out := pgx.NamedArgs{}
	for _, set := range sets {
		for k, v := range set {
			out[k] = v
		}
	}
	return out
}
