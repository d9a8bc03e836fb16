package retention

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/oceanway/core/contracts/deliveryset"
	"github.com/oceanway/core/contracts/jcs"
	"github.com/oceanway/core/internal/db"
)

// DefaultBatchSize is the number of events one archive run (one manifest,
// one call of outbox.retention_archive) takes.
const DefaultBatchSize = 1000

// ArchiveParams configure Archive.
type ArchiveParams struct {
	OlderThan time.Duration
	Dir       string
	// BatchSize events per run (DefaultBatchSize when 0).
	BatchSize int
}

// ArchiveResult is what Archive did.
type ArchiveResult struct {
	Dir    string      `json:"archiveDir"`
	Cutoff time.Time   `json:"cutoff"`
	Runs   []RunResult `json:"runs"`
	Counts Counts      `json:"counts"`
}

// RunResult is one batch: its manifest digest and what left.
type RunResult struct {
	RunID          string `json:"runId"`
	ManifestSHA256 string `json:"manifestSha256"`
	Counts         Counts `json:"counts"`
}

// Archive moves the closed history created more than OlderThan ago out of
// the hot tables, batch by batch: export in one snapshot, write and fsync
// the content-addressed files and the manifest, verify them from disk, and
// only then call outbox.retention_archive, which re-checks and deletes.
// A failure stops the run; batches already done stay done (each is whole).
func Archive(ctx context.Context, pool *pgxpool.Pool, p ArchiveParams) (*ArchiveResult, error) {
	if p.OlderThan <= 0 {
		return nil, ErrInvalidOlderThan
	}
	if p.Dir == "" {
		return nil, ErrNoArchiveDir
	}
	if p.BatchSize <= 0 {
		p.BatchSize = DefaultBatchSize
	}
	var cutoff time.Time
	if err := pool.QueryRow(ctx, sqlCutoff, pgx.NamedArgs{"older_than_seconds": p.OlderThan.Seconds()}).Scan(&cutoff); err != nil {
		return nil, fmt.Errorf("archive: cutoff: %w", err)
	}
	cutoff = cutoff.UTC().Truncate(time.Microsecond)
	res := &ArchiveResult{Dir: p.Dir, Cutoff: cutoff, Runs: []RunResult{}}
	after := uuid.Nil
	for {
		batch, err := exportBatch(ctx, pool, cutoff, after, p.BatchSize)
		if err != nil {
			return res, err
		}
		if batch == nil {
			return res, nil
		}
		after = batch.last
		run, err := archiveBatch(ctx, pool, p, cutoff, batch)
		if err != nil {
			return res, err
		}
		res.Runs = append(res.Runs, *run)
		res.Counts.add(run.Counts)
	}
}

// exported is one batch read in one snapshot.
type exported struct {
	database    string
	ids         []uuid.UUID
	last        uuid.UUID
	segment     []byte
	definitions [][]byte
}

func exportBatch(ctx context.Context, pool *pgxpool.Pool, cutoff time.Time, after uuid.UUID, size int) (*exported, error) {
	var out *exported
	err := db.WithTxOptions(ctx, pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(ctx context.Context, tx pgx.Tx) error {
		rows, err := tx.Query(ctx, sqlBatch, pgx.NamedArgs{"after": after, "cutoff": cutoff, "batch_size": size})
		if err != nil {
			return err
		}
		ids, err := pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
		if err != nil || len(ids) == 0 {
			return err
		}
		segment, definitions, database, err := exportRows(ctx, tx, ids)
		if err != nil {
			return err
		}
		out = &exported{database: database, ids: ids, last: ids[len(ids)-1], segment: segment, definitions: definitions}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("archive: export: %w", err)
	}
	return out, nil
}

// exportRows renders the segment of ids and the definitions they froze in
// canonical bytes, in the caller's transaction (archive: the source
// snapshot; restore drill: the scratch database).
func exportRows(ctx context.Context, tx pgx.Tx, ids []uuid.UUID) (segment []byte, definitions [][]byte, database string, err error) {
	if _, err := tx.Exec(ctx, sqlSessionUTC); err != nil {
		return nil, nil, "", err
	}
	var text string
	if err := tx.QueryRow(ctx, sqlSegment, pgx.NamedArgs{"event_ids": ids}).Scan(&text); err != nil {
		return nil, nil, "", err
	}
	if segment, err = jcs.Canonicalize([]byte(text)); err != nil {
		return nil, nil, "", fmt.Errorf("canonicalize segment: %w", err)
	}
	var doc struct {
		Events []struct {
			Event struct {
				DeliverySetVersion int64 `json:"delivery_set_version"`
			} `json:"event"`
		} `json:"events"`
	}
	if err := json.Unmarshal(segment, &doc); err != nil {
		return nil, nil, "", err
	}
	seen := map[int64]bool{}
	var versions []int64
	for _, e := range doc.Events {
		if v := e.Event.DeliverySetVersion; !seen[v] {
			seen[v] = true
			versions = append(versions, v)
		}
	}
	rows, err := tx.Query(ctx, sqlDefinitions, pgx.NamedArgs{"versions": versions})
	if err != nil {
		return nil, nil, "", err
	}
	type defRow struct {
		Version  int64  `db:"delivery_set_version"`
		Document string `db:"document"`
	}
	defs, err := pgx.CollectRows(rows, pgx.RowToStructByName[defRow])
	if err != nil {
		return nil, nil, "", err
	}
	for _, d := range defs {
		c, err := jcs.Canonicalize([]byte(d.Document))
		if err != nil {
			return nil, nil, "", fmt.Errorf("canonicalize definition %d: %w", d.Version, err)
		}
		definitions = append(definitions, c)
	}
	if err := tx.QueryRow(ctx, sqlCurrentDatabase).Scan(&database); err != nil {
		return nil, nil, "", err
	}
	return segment, definitions, database, nil
}

// archiveBatch writes, verifies and only then removes one batch.
func archiveBatch(ctx context.Context, pool *pgxpool.Pool, p ArchiveParams, cutoff time.Time, b *exported) (*RunResult, error) {
	runID := uuid.Must(uuid.NewV7())
	m := Manifest{
		Kind: manifestKind, RunID: runID.String(), SourceDatabase: b.database,
		Cutoff: cutoff.Format("2006-01-02T15:04:05.000000Z"), FileDigestAlgorithm: fileDigestAlgorithm,
		Files: []ManifestFile{},
	}
	for _, d := range b.definitions {
		sum, err := writeObject(p.Dir, objectsDir, d)
		if err != nil {
			return nil, err
		}
		m.Files = append(m.Files, ManifestFile{Role: roleDefinition, SHA256: sum, Bytes: int64(len(d))})
	}
	sum, err := writeObject(p.Dir, objectsDir, b.segment)
	if err != nil {
		return nil, err
	}
	m.Files = append(m.Files, ManifestFile{Role: roleSegment, SHA256: sum, Bytes: int64(len(b.segment))})
	// the manifest's counts and event list come from the verified segment
	counts, events, err := verifySegment(objectPath(p.Dir, sum), b.segment, func(deliveryset.Quadruple) bool { return true })
	if err != nil {
		return nil, err
	}
	m.Counts, m.Events = counts, events
	manifest, err := canonicalJSON(m)
	if err != nil {
		return nil, fmt.Errorf("archive: manifest: %w", err)
	}
	manifestSum, err := writeObject(p.Dir, manifestsDir, manifest)
	if err != nil {
		return nil, err
	}
	if _, _, err := verifyManifest(p.Dir, manifestSum); err != nil {
		return nil, err
	}
	var verifiedAt time.Time
	if err := pool.QueryRow(ctx, sqlDBNow).Scan(&verifiedAt); err != nil {
		return nil, fmt.Errorf("archive: %w", err)
	}
	ids := make([]uuid.UUID, len(events))
	shas := make([]string, len(events))
	for i, e := range events {
		ids[i] = uuid.MustParse(e.EventID)
		shas[i] = e.EventEnvelopeSHA256
	}
	err = db.WithTx(ctx, pool, func(ctx context.Context, tx pgx.Tx) error {
		_, err := tx.Exec(ctx, sqlArchiveRun, pgx.NamedArgs{
			"run_id": runID, "manifest_sha256": manifestSum, "cutoff": cutoff, "verified_at": verifiedAt,
			"event_ids": ids, "event_sha256": shas, "deliveries": counts.Deliveries,
			"attempt_starts": counts.AttemptStarts, "attempt_finishes": counts.AttemptFinishes,
		})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("archive: run %s (manifest %s): %w", runID, manifestSum, TranslateError(err))
	}
	return &RunResult{RunID: runID.String(), ManifestSHA256: manifestSum, Counts: counts}, nil
}
