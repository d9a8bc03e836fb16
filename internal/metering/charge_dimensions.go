package metering

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"

	contract "github.com/oceanway/core/contracts/execution"
	"github.com/oceanway/core/contracts/receipt"
	"github.com/oceanway/core/contracts/strict"
	"github.com/oceanway/core/internal/db"
	"github.com/oceanway/core/internal/ownerread"
	"github.com/oceanway/core/internal/ownerread/executionread"
)

// The expected charge dimension set (issue 32 part 4). A dispatched
// attempt's AttemptExecutionManifest@1 freezes the charge dimensions its
// output contract registers (contracts/settlement's registry). The
// eligibility Work reads that set from Execution (event-bound: the manifest
// quadruple the eligibility event carried) and:
//
//   - refuses a Gateway usage dimension the set does not register (a local
//     conflict: Blocked@1, never a charge nobody expected);
//   - while a registered dimension has no Gateway usage availability yet,
//     records it as awaiting_evidence and keeps the Work active, writing no
//     settlement input and no finish: the dimension's availability event
//     starts the next generation, which supersedes this Work;
//   - finishes applied only with every registered dimension's settlement
//     input in the same transaction (PostgreSQL refuses anything else,
//     ME014), so Billing never sees a partial attempt.

var (
	qChargeDimensionsInsert     = statements.Get("charge_dimensions_insert")
	qChargeDimensionAwaitInsert = statements.Get("charge_dimension_await_insert")
)

// registeredSet is the charge dimension set an attempt manifest froze.
type registeredSet struct {
	manifest strict.Quadruple
	version  string
	keys     []string
}

// registeredDimensions reads the attempt's manifest from Execution (the
// quadruple the eligibility event carried, never a bare attempt id) and
// returns its frozen charge dimension set.
func (p *Processor) registeredDimensions(ctx context.Context, src eligibilitySource) (*registeredSet, error) {
	req := executionread.AttemptManifestRead{ContractVersion: executionread.ReadAttemptManifestV1, Audience: executionread.AudienceMeteringInput,
		ExecutionAttemptID: src.ExecutionAttemptID, AttemptManifest: src.AttemptManifest}
	res, err := p.reads.ReadAttemptManifest(ctx, req)
	if err != nil {
		if errors.Is(err, ownerread.ErrInvalidRequest) {
			return nil, &conflict{stage: "eligibility_basis", reason: "attempt_manifest_read_invalid", candidate: attemptManifestReadDoc(req)}
		}
		return nil, retryable("attempt manifest read: %v", err)
	}
	switch res.Answer {
	case ownerread.Found:
	case ownerread.NotFound:
		return nil, retryable("attempt manifest %s not found", src.AttemptManifest.Ref)
	default:
		return nil, ownerConflict(receipt.CauseExecutionEligibilityOwnerConflict, res.Reason)
	}
	m := res.Value
	// guard ME-1.registered-set-frozen
	if m.Manifest != src.AttemptManifest || m.ExecutionAttemptID != src.ExecutionAttemptID || len(m.ChargeDimensionKeys) == 0 ||
		!slices.IsSorted(m.ChargeDimensionKeys) || len(slices.Compact(slices.Clone(m.ChargeDimensionKeys))) != len(m.ChargeDimensionKeys) {
		return nil, &conflict{stage: "eligibility_basis", reason: "charge_dimension_set_invalid", candidate: manifestDoc(m)}
	}
	return &registeredSet{manifest: m.Manifest, version: m.ChargeDimensionRegistryVersion, keys: slices.Clone(m.ChargeDimensionKeys)}, nil
}

type registeredRow struct {
	Ref     string   `db:"attempt_execution_manifest_ref"`
	Digest  string   `db:"attempt_execution_manifest_digest"`
	Version string   `db:"charge_dimension_registry_version"`
	Keys    []string `db:"charge_dimension_keys"`
}

// storeRegisteredTx inserts (or compares with) the attempt's stored
// registered set in the caller's transaction.
func storeRegisteredTx(ctx context.Context, tx pgx.Tx, attemptID string, r *registeredSet) error {
	rows, err := tx.Query(ctx, qChargeDimensionsInsert, pgx.NamedArgs{"attempt_id": attemptID, "manifest_ref": r.manifest.Ref,
		"manifest_digest": r.manifest.Digest, "registry_version": r.version, "keys": r.keys})
	if err != nil {
		return fmt.Errorf("store registered charge dimensions: %w", err)
	}
	stored, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[registeredRow])
	if err != nil {
		return fmt.Errorf("store registered charge dimensions: %w", err)
	}
	if stored.Ref != r.manifest.Ref || stored.Digest != r.manifest.Digest || stored.Version != r.version || !slices.Equal(stored.Keys, r.keys) {
		return &conflict{stage: "eligibility_basis", reason: "charge_dimension_set_differs", candidate: map[string]any{
			"executionAttemptId": attemptID, "chargeDimensionRegistryVersion": r.version, "chargeDimensionKeys": anySlice(r.keys)}}
	}
	return nil
}

// awaitEvidence is the eligibility Work's answer while registered
// dimensions have no Gateway usage yet: under the input fence and the
// Work's latest attempt, it stores the registered set and records each
// missing dimension as awaiting_evidence, and leaves the Work active (no
// settlement input, no finish). A newer generation already scheduled
// supersedes the Work instead.
func (p *Processor) awaitEvidence(ctx context.Context, a *Attempt, in *eligibilityInputs) (Outcome, error) {
	return db.WithTxV(ctx, p.pool, func(ctx context.Context, tx pgx.Tx) (Outcome, error) {
		moved, err := lockCurrentWork(ctx, tx, a)
		if err != nil {
			return Outcome{}, err
		}
		if moved {
			f, err := finishSupersededTx(ctx, tx, a.Head)
			return Outcome{Finished: f}, err
		}
		h := a.Head
		if err := storeRegisteredTx(ctx, tx, h.ExecutionAttemptID, in.registered); err != nil {
			return Outcome{}, err
		}
		for _, k := range in.awaiting {
			if _, err := tx.Exec(ctx, qChargeDimensionAwaitInsert, pgx.NamedArgs{"attempt_id": h.ExecutionAttemptID, "charge_dimension_key": k,
				"work_ref": h.Work.Ref, "attempt_number": h.AttemptNumber, "fencing_token": h.FencingToken}); err != nil {
				return Outcome{}, fmt.Errorf("record awaited charge dimension %s: %w", k, err)
			}
		}
		return Outcome{Awaiting: slices.Clone(in.awaiting)}, nil
	})
}

func attemptManifestReadDoc(r executionread.AttemptManifestRead) map[string]any {
	m := map[string]any{"contractVersion": r.ContractVersion, "audience": r.Audience, "executionAttemptId": r.ExecutionAttemptID}
	r.AttemptManifest.Put(m, contract.PrefixAttemptExecutionManifest)
	return m
}

func manifestDoc(m *contract.AttemptExecutionManifest) map[string]any {
	doc := map[string]any{"executionAttemptId": m.ExecutionAttemptID, "chargeDimensionRegistryVersion": m.ChargeDimensionRegistryVersion,
		"chargeDimensionKeys": anySlice(m.ChargeDimensionKeys)}
	m.Manifest.Put(doc, contract.PrefixAttemptExecutionManifest)
	return doc
}

func anySlice(keys []string) []any {
	out := make([]any, len(keys))
	for i, k := range keys {
		out[i] = k
	}
	return out
}
