package retention

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

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
	// Drill is the scratch database every batch's restore drill runs in
	// (superuser there; it must hold no event and no retention run). Required:
	// the controlled delete refuses a run without a recorded drill (OWR04).
	Drill *pgxpool.Pool
	// StopBeforeDeleteFunc is a test seam for a process that dies after a
	// run's files are written and verified, before the controlled delete:
	// when it returns an error, Archive returns it and leaves the files as
	// such a crash would (the next Archive sweeps them).
	StopBeforeDeleteFunc func() error
}

// ArchiveResult is what Archive did.
type ArchiveResult struct {
	Dir    string      `json:"archiveDir"`
	Cutoff time.Time   `json:"cutoff"`
	Runs   []RunResult `json:"runs"`
	Counts Counts      `json:"counts"`
	// Swept are manifests of an earlier run of this database that stopped
	// before its controlled delete (removed: their rows are still hot).
	Swept []string `json:"swept"`
}

// RunResult is one batch: its manifest digest and what left.
type RunResult struct {
	RunID          string `json:"runId"`
	ManifestSHA256 string `json:"manifestSha256"`
	// DrillSHA256 addresses the recorded restore drill of the manifest
	// (outbox.retention_recovery_drills) the delete was admitted on.
	DrillSHA256 string `json:"drillSha256"`
	Counts      Counts `json:"counts"`
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
	if p.Drill == nil {
		return nil, ErrNoDrillTarget
	}
	if p.BatchSize <= 0 {
		p.BatchSize = DefaultBatchSize
	}
	var cutoff time.Time
	if err := pool.QueryRow(ctx, sqlCutoff, pgx.NamedArgs{"older_than_seconds": p.OlderThan.Seconds()}).Scan(&cutoff); err != nil {
		return nil, fmt.Errorf("archive: cutoff: %w", err)
	}
	cutoff = cutoff.UTC().Truncate(time.Microsecond)
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return nil, fmt.Errorf("archive: %w", err)
	}
	defer conn.Release()
	var locked bool
	if err := conn.QueryRow(ctx, sqlArchiveLock).Scan(&locked); err != nil {
		return nil, fmt.Errorf("archive: lock: %w", err)
	}
	if !locked {
		return nil, ErrArchiveBusy
	}
	defer func() { _, _ = conn.Exec(context.WithoutCancel(ctx), sqlArchiveUnlock) }() // released with the session anyway
	res := &ArchiveResult{Dir: p.Dir, Cutoff: cutoff, Runs: []RunResult{}, Swept: []string{}}
	if res.Swept, err = sweep(ctx, pool, p.Dir); err != nil {
		return res, err
	}
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
	var created []string // files this run added: removed again if the run is refused
	undo := func() {
		for _, f := range created {
			_ = os.Remove(f) // best effort; verify names anything left over
		}
	}
	write := func(sub string, content []byte) (string, error) {
		sum, isNew, err := writeObject(p.Dir, sub, content)
		if isNew {
			created = append(created, filepath.Join(p.Dir, sub, sum+fileSuffix))
		}
		return sum, err
	}
	for _, d := range b.definitions {
		sum, err := write(objectsDir, d)
		if err != nil {
			undo()
			return nil, err
		}
		m.Files = append(m.Files, ManifestFile{Role: roleDefinition, SHA256: sum, Bytes: int64(len(d))})
	}
	sum, err := write(objectsDir, b.segment)
	if err != nil {
		undo()
		return nil, err
	}
	m.Files = append(m.Files, ManifestFile{Role: roleSegment, SHA256: sum, Bytes: int64(len(b.segment))})
	// the manifest's counts and event list; verifyManifest below then checks
	// every envelope and digest of the files as written
	counts, events, err := segmentSummary(objectPath(p.Dir, sum), b.segment)
	if err != nil {
		undo()
		return nil, err
	}
	m.Counts, m.Events = counts, events
	manifest, err := canonicalJSON(m)
	if err != nil {
		undo()
		return nil, fmt.Errorf("archive: manifest: %w", err)
	}
	manifestSum, err := write(manifestsDir, manifest)
	if err != nil {
		undo()
		return nil, err
	}
	if _, _, err := verifyManifest(p.Dir, manifestSum); err != nil {
		undo()
		return nil, err
	}
	// the restore drill of exactly these files, recorded in the recovery
	// baseline: without it the controlled delete refuses the run (OWR04)
	drill, err := DrillManifest(ctx, pool, p.Drill, p.Dir, manifestSum)
	if err != nil {
		undo()
		return nil, fmt.Errorf("archive: run %s (manifest %s): restore drill: %w", runID, manifestSum, err)
	}
	var verifiedAt time.Time
	if err := pool.QueryRow(ctx, sqlDBNow).Scan(&verifiedAt); err != nil {
		undo()
		return nil, fmt.Errorf("archive: %w", err)
	}
	if p.StopBeforeDeleteFunc != nil {
		if err := p.StopBeforeDeleteFunc(); err != nil {
			return nil, err
		}
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
		// Refused or failed: nothing was removed, so the files describe no
		// run. (A crash right here leaves them; the next run sweeps them.)
		undo()
		return nil, fmt.Errorf("archive: run %s (manifest %s): %w", runID, manifestSum, TranslateError(err))
	}
	return &RunResult{RunID: runID.String(), ManifestSHA256: manifestSum, DrillSHA256: drill.DrillSHA256, Counts: counts}, nil
}

// sweep removes the manifests of this database that describe no recorded
// run — a previous archive stopped between writing them and the controlled
// delete, so their rows are still hot and will be archived again — and then
// every object no remaining manifest lists. The archive lock keeps another
// command's in-flight manifest out of reach. A manifest that does not
// verify stops the run: nothing is removed from a directory that is not
// sound.
func sweep(ctx context.Context, pool *pgxpool.Pool, dir string) ([]string, error) {
	sums, err := digestFiles(dir, manifestsDir)
	if err != nil || len(sums) == 0 {
		return []string{}, err
	}
	var database string
	if err := pool.QueryRow(ctx, sqlCurrentDatabase).Scan(&database); err != nil {
		return nil, fmt.Errorf("archive: %w", err)
	}
	swept := []string{}
	keep := map[string]bool{}
	for _, sum := range sums {
		m, _, err := verifyManifest(dir, sum)
		if err != nil {
			return nil, err
		}
		unrecorded := false
		if m.SourceDatabase == database {
			ids := make([]uuid.UUID, len(m.Events))
			shas := make([]string, len(m.Events))
			for i, e := range m.Events {
				ids[i], shas[i] = uuid.MustParse(e.EventID), e.EventEnvelopeSHA256
			}
			if err := pool.QueryRow(ctx, sqlManifestUnrecord, pgx.NamedArgs{
				"manifest_sha256": sum, "event_ids": ids, "event_sha256": shas}).Scan(&unrecorded); err != nil {
				return nil, fmt.Errorf("archive: sweep: %w", err)
			}
		}
		if !unrecorded {
			for _, f := range m.Files {
				keep[f.SHA256] = true
			}
			continue
		}
		if err := os.Remove(filepath.Join(dir, manifestsDir, sum+fileSuffix)); err != nil {
			return nil, fmt.Errorf("archive: sweep: %w", err)
		}
		swept = append(swept, sum)
	}
	if len(swept) == 0 {
		return swept, nil
	}
	objects, err := digestFiles(dir, objectsDir)
	if err != nil {
		return nil, err
	}
	for _, sum := range objects {
		if !keep[sum] {
			if err := os.Remove(objectPath(dir, sum)); err != nil {
				return nil, fmt.Errorf("archive: sweep: %w", err)
			}
		}
	}
	return swept, errors.Join(syncDir(filepath.Join(dir, manifestsDir)), syncDir(filepath.Join(dir, objectsDir)))
}
