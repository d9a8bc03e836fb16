package readmodel

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/oceanway/core/contracts/digest"
	"github.com/oceanway/core/contracts/route"
	"github.com/oceanway/core/internal/db"
	"github.com/oceanway/core/internal/operations/projector"
	"github.com/oceanway/core/internal/operations/readmodel/dbsqlc"
)

// QueryDefinitionVersion names the Source Query and Semantic Definition of
// the completeness proof. A proof is comparable with a later query only
// under the same definition; the projector's supported pairs are part of it
// (a release that projects more pairs proves a different scope). Version 2
// scopes the mandatory deliveries to those frozen to the proved projection
// version.
var QueryDefinitionVersion = "operations-completeness@2;pairs=" + strings.Join(projector.SupportedPairs(), ",")

// Completeness vocabulary (OPS-4).
const (
	CompleteForSupportedScope = "complete_for_supported_scope"
	PartialSourceGap          = "partial_source_gap"
	CompletenessUnknown       = "unknown"

	Verified   = "verified"
	Unverified = "unverified"

	VerifiedCurrent = "verified_current"
	Stale           = "stale"
	CurrencyUnknown = "unknown"
)

// Reasons a proof is not complete.
const (
	ReasonOpenDeliveries      = "open_mandatory_deliveries"
	ReasonQuarantined         = "quarantine_in_scope"
	ReasonReceiptAntiJoin     = "receipt_anti_join_not_empty"
	ReasonUnresolvedGaps      = "unresolved_revision_gaps"
	ReasonUnsupportedSchema   = "unsupported_schema_in_scope"
	ReasonSemanticCheckFailed = "semantic_check_failed"
	ReasonNoCompletedSnapshot = "no_completed_snapshot"
	ReasonDefinitionMismatch  = "definition_not_comparable"
	ReasonGuardUnavailable    = "guard_unavailable"
	ReasonNoActiveProjection  = "no_active_projection"
	ReasonInputsChangedPrefix = "inputs_changed:"
	ReasonInputsUnchanged     = "inputs_unchanged"
)

// SetFingerprint is the count and guard fingerprint of one input set.
type SetFingerprint struct {
	Count       int64  `json:"count"`
	Fingerprint string `json:"fingerprint"`
}

// Semantic are the semantic-check violation counts.
type Semantic struct {
	// PendingUnlinkedReservations: wallet events whose Run is not projected.
	PendingUnlinkedReservations int64 `json:"pendingUnlinkedReservations"`
	// ReceiptsWithoutMutation / MutationsWithoutReceipt: receipt ↔ mutation must be 1:1.
	ReceiptsWithoutMutation int64 `json:"receiptsWithoutMutation"`
	MutationsWithoutReceipt int64 `json:"mutationsWithoutReceipt"`
	// ReceiptsWithoutSource: receipts of events that are not in the source.
	ReceiptsWithoutSource int64 `json:"receiptsWithoutSource"`
	// AggregateRevisionMismatch: applied revision ≠ number of applied events.
	AggregateRevisionMismatch int64 `json:"aggregateRevisionMismatch"`
	// MissedLinks: summaries still source_delayed although their wallet event is applied.
	MissedLinks int64 `json:"missedLinks"`
}

// Violations is the total.
func (s Semantic) Violations() int64 {
	return s.PendingUnlinkedReservations + s.ReceiptsWithoutMutation + s.MutationsWithoutReceipt +
		s.ReceiptsWithoutSource + s.AggregateRevisionMismatch + s.MissedLinks
}

// Inputs are everything a completeness proof is computed from, in one
// consistent snapshot. Two Inputs are equal exactly when nothing the proof
// depends on changed.
type Inputs struct {
	SourceEvents          SetFingerprint `json:"sourceEvents"`
	MandatoryDeliveries   SetFingerprint `json:"mandatoryDeliveries"`
	OpenDeliveries        int64          `json:"openDeliveries"`
	QuarantinedDeliveries int64          `json:"quarantinedDeliveries"`
	Receipts              SetFingerprint `json:"receipts"`
	MissingReceipts       int64          `json:"missingReceipts"`
	UnresolvedGaps        SetFingerprint `json:"unresolvedGaps"`
	UnsupportedEvents     SetFingerprint `json:"unsupportedEvents"`
	Semantic              Semantic       `json:"semantic"`
	// ObservationSources is the number of Core accepted observation sources
	// in the definition: none in this one, so the observation receipt
	// anti-join is empty by definition.
	ObservationSources int64 `json:"observationSources"`
}

// reasons lists why inputs do not prove complete_for_supported_scope.
func (in Inputs) reasons() []string {
	r := []string{}
	add := func(cond bool, reason string) {
		if cond {
			r = append(r, reason)
		}
	}
	add(in.OpenDeliveries > 0, ReasonOpenDeliveries)
	add(in.QuarantinedDeliveries > 0, ReasonQuarantined)
	add(in.MissingReceipts > 0, ReasonReceiptAntiJoin)
	add(in.UnresolvedGaps.Count > 0, ReasonUnresolvedGaps)
	add(in.UnsupportedEvents.Count > 0, ReasonUnsupportedSchema)
	add(in.Semantic.Violations() > 0, ReasonSemanticCheckFailed)
	return r
}

// definiteGap reports a gap the inputs prove by themselves (OPS-4: a stale
// answer with a determined gap is partial_source_gap, otherwise unknown).
func (in Inputs) definiteGap() bool {
	return in.OpenDeliveries > 0 || in.QuarantinedDeliveries > 0 || in.MissingReceipts > 0 ||
		in.UnresolvedGaps.Count > 0 || in.UnsupportedEvents.Count > 0
}

// changed names the input components that differ.
func (in Inputs) changed(other Inputs) []string {
	var c []string
	add := func(name string, differ bool) {
		if differ {
			c = append(c, name)
		}
	}
	add("source_events", in.SourceEvents != other.SourceEvents)
	add("mandatory_deliveries", in.MandatoryDeliveries != other.MandatoryDeliveries ||
		in.OpenDeliveries != other.OpenDeliveries || in.QuarantinedDeliveries != other.QuarantinedDeliveries)
	add("receipts", in.Receipts != other.Receipts || in.MissingReceipts != other.MissingReceipts)
	add("revision_gaps", in.UnresolvedGaps != other.UnresolvedGaps)
	add("unsupported_schema", in.UnsupportedEvents != other.UnsupportedEvents)
	add("semantic_check", in.Semantic != other.Semantic)
	add("observation_sources", in.ObservationSources != other.ObservationSources)
	return c
}

func (in Inputs) fingerprint() (string, error) {
	b, err := json.Marshal(in)
	if err != nil {
		return "", err
	}
	d, err := digest.OfJSON(digest.JCSSHA256V1, b)
	if err != nil {
		return "", err
	}
	return d.String(), nil
}

// completenessRow is the row of sql/completeness_inputs.sql, read by column name.
type completenessRow struct {
	SourceEventsCount              int64  `db:"source_events_count"`
	SourceEventsFingerprint        string `db:"source_events_fingerprint"`
	MandatoryDeliveriesCount       int64  `db:"mandatory_deliveries_count"`
	MandatoryDeliveriesFingerprint string `db:"mandatory_deliveries_fingerprint"`
	OpenDeliveries                 int64  `db:"open_deliveries"`
	QuarantinedDeliveries          int64  `db:"quarantined_deliveries"`
	ReceiptsCount                  int64  `db:"receipts_count"`
	ReceiptsFingerprint            string `db:"receipts_fingerprint"`
	MissingReceipts                int64  `db:"missing_receipts"`
	UnresolvedGapsCount            int64  `db:"unresolved_gaps_count"`
	UnresolvedGapsFingerprint      string `db:"unresolved_gaps_fingerprint"`
	UnsupportedEventsCount         int64  `db:"unsupported_events_count"`
	UnsupportedEventsFingerprint   string `db:"unsupported_events_fingerprint"`
	PendingUnlinkedReservations    int64  `db:"pending_unlinked_reservations"`
	ReceiptsWithoutMutation        int64  `db:"receipts_without_mutation"`
	MutationsWithoutReceipt        int64  `db:"mutations_without_receipt"`
	ReceiptsWithoutSource          int64  `db:"receipts_without_source"`
	AggregateRevisionMismatch      int64  `db:"aggregate_revision_mismatch"`
	MissedLinks                    int64  `db:"missed_links"`
}

func readInputs(ctx context.Context, tx pgx.Tx, t route.ProjectionTarget) (Inputs, error) {
	rows, err := tx.Query(ctx, qCompletenessInputs,
		pgx.NamedArgs{"projection_name": t.Name, "projection_version": t.Version})
	if err != nil {
		return Inputs{}, fmt.Errorf("read completeness inputs: %w", err)
	}
	r, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[completenessRow])
	if err != nil {
		return Inputs{}, fmt.Errorf("read completeness inputs: %w", err)
	}
	return Inputs{
		SourceEvents: SetFingerprint{Count: r.SourceEventsCount, Fingerprint: r.SourceEventsFingerprint},
		// The core_operations mandatory deliveries frozen to this version.
		MandatoryDeliveries:   SetFingerprint{Count: r.MandatoryDeliveriesCount, Fingerprint: r.MandatoryDeliveriesFingerprint},
		OpenDeliveries:        r.OpenDeliveries,
		QuarantinedDeliveries: r.QuarantinedDeliveries,
		Receipts:              SetFingerprint{Count: r.ReceiptsCount, Fingerprint: r.ReceiptsFingerprint},
		MissingReceipts:       r.MissingReceipts,
		UnresolvedGaps:        SetFingerprint{Count: r.UnresolvedGapsCount, Fingerprint: r.UnresolvedGapsFingerprint},
		UnsupportedEvents:     SetFingerprint{Count: r.UnsupportedEventsCount, Fingerprint: r.UnsupportedEventsFingerprint},
		Semantic: Semantic{
			PendingUnlinkedReservations: r.PendingUnlinkedReservations,
			ReceiptsWithoutMutation:     r.ReceiptsWithoutMutation,
			MutationsWithoutReceipt:     r.MutationsWithoutReceipt,
			ReceiptsWithoutSource:       r.ReceiptsWithoutSource,
			AggregateRevisionMismatch:   r.AggregateRevisionMismatch,
			MissedLinks:                 r.MissedLinks,
		},
	}, nil
}

// SnapshotRef identifies a completed proof: completenessAsOf.
type SnapshotRef struct {
	SnapshotID       string
	EvaluatedAt      time.Time
	DatabaseSnapshot string
}

// Proof is one completed completeness proof (the Proof Manifest).
type Proof struct {
	SnapshotRef
	Projection             route.ProjectionTarget
	QueryDefinitionVersion string
	// ProjectionCompleteness is complete_for_supported_scope or partial_source_gap.
	ProjectionCompleteness string
	Reasons                []string
	Inputs                 Inputs
	InputsFingerprint      string
}

// ProveCompleteness computes the complete_for_supported_scope proof of the
// projection target in one consistent snapshot (a REPEATABLE READ
// transaction) and records its manifest with the inputs it was proved from
// (OPS-4). The proof holds for its snapshot only; Completeness compares it
// with later snapshots.
func (r *Reader) ProveCompleteness(ctx context.Context, p Params) (Proof, error) {
	proof, _, err := r.prove(ctx, p, false)
	return proof, err
}

// RecordCompleteness is ProveCompleteness addressed by content, for the
// periodic proof under serve: in the same consistent snapshot it compares
// the inputs' digest (InputsFingerprint, jcs-sha256-v1 over the inputs)
// with the latest proof of the same query definition; when they are equal
// that proof still describes this snapshot exactly, so nothing is written
// and it is returned with recorded=false. Otherwise a new proof is
// recorded. The proof table thus grows with changes, not with time.
func (r *Reader) RecordCompleteness(ctx context.Context, p Params) (proof Proof, recorded bool, err error) {
	return r.prove(ctx, p, true)
}

func (r *Reader) prove(ctx context.Context, p Params, reuse bool) (Proof, bool, error) {
	var (
		proof    Proof
		recorded bool
	)
	err := db.WithTxOptions(ctx, r.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead}, func(ctx context.Context, tx pgx.Tx) error {
		t, err := target(ctx, tx, p)
		if err != nil {
			return err
		}
		in, err := readInputs(ctx, tx, t)
		if err != nil {
			return err
		}
		fp, err := in.fingerprint()
		if err != nil {
			return err
		}
		proof = Proof{
			SnapshotRef:            SnapshotRef{SnapshotID: uuid.Must(uuid.NewV7()).String()},
			Projection:             t,
			QueryDefinitionVersion: QueryDefinitionVersion,
			ProjectionCompleteness: CompleteForSupportedScope,
			Reasons:                in.reasons(),
			Inputs:                 in,
			InputsFingerprint:      fp,
		}
		if len(proof.Reasons) > 0 {
			proof.ProjectionCompleteness = PartialSourceGap
		}
		if reuse {
			latest, err := queries.ProofLatest(ctx, tx, dbsqlc.ProofLatestParams{ProjectionName: t.Name, ProjectionVersion: t.Version})
			switch {
			case errors.Is(err, pgx.ErrNoRows):
			case err != nil:
				return fmt.Errorf("read completeness proof: %w", err)
			case latest.QueryDefinitionVersion == QueryDefinitionVersion && latest.InputsFingerprint == fp &&
				latest.ProjectionCompleteness == proof.ProjectionCompleteness:
				proof.SnapshotRef = SnapshotRef{SnapshotID: latest.SnapshotID, EvaluatedAt: latest.EvaluatedAt, DatabaseSnapshot: latest.DatabaseSnapshot}
				return nil
			}
		}
		inputsJSON, err := json.Marshal(in)
		if err != nil {
			return err
		}
		stamp, err := queries.ProofInsert(ctx, tx, dbsqlc.ProofInsertParams{
			SnapshotID: proof.SnapshotID, ProjectionName: t.Name, ProjectionVersion: t.Version,
			QueryDefinitionVersion: QueryDefinitionVersion, ProjectionCompleteness: proof.ProjectionCompleteness,
			Reasons: proof.Reasons, Inputs: inputsJSON, InputsFingerprint: fp,
		})
		if err != nil {
			return fmt.Errorf("record completeness proof: %w", err)
		}
		proof.EvaluatedAt, proof.DatabaseSnapshot = stamp.EvaluatedAt, stamp.DatabaseSnapshot
		recorded = true
		return nil
	})
	if err != nil {
		return Proof{}, false, err
	}
	return proof, recorded, nil
}

// Completeness is the answer of the completeness query (OPS-4).
type Completeness struct {
	Projection route.ProjectionTarget
	// VerificationState is verified or unverified.
	VerificationState string
	// SnapshotCurrency is verified_current, stale or unknown.
	SnapshotCurrency string
	// ProjectionCompleteness is complete_for_supported_scope (only when
	// verified_current), partial_source_gap or unknown. Stale is never complete.
	ProjectionCompleteness string
	// CompletenessAsOf is the proof's snapshot; nil when unverified.
	CompletenessAsOf *SnapshotRef
	// Integrity is the proof's inputs and reasons; nil when unverified.
	Integrity *Integrity
	// VerificationReason explains unverified, stale or current.
	VerificationReason string
}

// Integrity is what the referenced proof established.
type Integrity struct {
	ProofCompleteness string
	Reasons           []string
	Inputs            Inputs
}

// Completeness answers whether the projection target is complete, in one
// consistent read-only snapshot: it compares the latest proof manifest
// with the current inputs under the same query definition. Unchanged inputs
// give verified + verified_current + the proof's completeness; changed
// inputs give verified + stale + partial_source_gap (a gap the current
// inputs determine) or unknown, never complete; no comparable proof, or a
// guard that cannot run, gives unverified + unknown.
func (r *Reader) Completeness(ctx context.Context, p Params) (Completeness, error) {
	var out Completeness
	err := db.WithTxOptions(ctx, r.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(ctx context.Context, tx pgx.Tx) error {
		t, err := target(ctx, tx, p)
		if errors.Is(err, ErrNoActiveProjection) {
			out = unverified(route.ProjectionTarget{}, ReasonNoActiveProjection)
			return nil
		}
		if err != nil {
			return err
		}
		latest, err := queries.ProofLatest(ctx, tx, dbsqlc.ProofLatestParams{ProjectionName: t.Name, ProjectionVersion: t.Version})
		if errors.Is(err, pgx.ErrNoRows) {
			out = unverified(t, ReasonNoCompletedSnapshot)
			return nil
		}
		if err != nil {
			return fmt.Errorf("read completeness proof: %w", err)
		}
		ref := SnapshotRef{SnapshotID: latest.SnapshotID, EvaluatedAt: latest.EvaluatedAt, DatabaseSnapshot: latest.DatabaseSnapshot}
		definition, proved, reasons, inputsJSON, fp := latest.QueryDefinitionVersion, latest.ProjectionCompleteness,
			latest.Reasons, latest.Inputs, latest.InputsFingerprint
		var proofInputs Inputs
		if definition != QueryDefinitionVersion || json.Unmarshal(inputsJSON, &proofInputs) != nil {
			out = unverified(t, ReasonDefinitionMismatch)
			return nil
		}
		if got, err := proofInputs.fingerprint(); err != nil || got != fp {
			out = unverified(t, ReasonDefinitionMismatch)
			return nil
		}
		current, err := readInputs(ctx, tx, t)
		if err != nil {
			out = unverified(t, ReasonGuardUnavailable)
			return nil
		}
		out = Completeness{
			Projection:        t,
			VerificationState: Verified,
			CompletenessAsOf:  &ref,
			Integrity:         &Integrity{ProofCompleteness: proved, Reasons: reasons, Inputs: proofInputs},
		}
		if changed := current.changed(proofInputs); len(changed) > 0 {
			out.SnapshotCurrency = Stale
			out.ProjectionCompleteness = CompletenessUnknown
			if current.definiteGap() {
				out.ProjectionCompleteness = PartialSourceGap
			}
			out.VerificationReason = ReasonInputsChangedPrefix + strings.Join(changed, ",")
			return nil
		}
		out.SnapshotCurrency = VerifiedCurrent
		out.ProjectionCompleteness = proved
		out.VerificationReason = ReasonInputsUnchanged
		return nil
	})
	if err != nil {
		return unverified(out.Projection, ReasonGuardUnavailable), err
	}
	return out, nil
}

func unverified(t route.ProjectionTarget, reason string) Completeness {
	return Completeness{
		Projection:             t,
		VerificationState:      Unverified,
		SnapshotCurrency:       CurrencyUnknown,
		ProjectionCompleteness: CompletenessUnknown,
		VerificationReason:     reason,
	}
}
