package retention

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"

	"github.com/google/uuid"
	"github.com/jackc/pgerrcode"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/oceanway/core/internal/db"
)

// RestoreResult is the evidence of a restore drill.
type RestoreResult struct {
	Dir       string   `json:"archiveDir"`
	Database  string   `json:"scratchDatabase"`
	Manifests []string `json:"manifests"`
	Counts    Counts   `json:"counts"`
	// Reproduced: every segment and definition re-exported from the scratch
	// database digests to its manifest entry.
	Reproduced bool `json:"reproduced"`
}

type restoreTarget struct {
	Events int64 `db:"events"`
	Runs   int64 `db:"runs"`
}

type restoreCheck struct {
	EventsWithoutDefinition int64 `db:"events_without_definition"`
	DeliveriesWithoutEvent  int64 `db:"deliveries_without_event"`
	StartsWithoutDelivery   int64 `db:"starts_without_delivery"`
	FinishesWithoutStart    int64 `db:"finishes_without_start"`
	MembersWithoutBinding   int64 `db:"members_without_binding"`
}

// Restore runs the restore drill into a scratch database (migrated outbox
// line, no event, no retention run): verify the whole archive, load every
// manifest's definitions and segments in one transaction with triggers off
// (session_replication_role = replica, which needs a superuser: the rows
// are history, not new appends, and must land exactly as archived), check
// that they hang together, then re-export every segment and definition from
// the scratch database with the archive's own statements and compare the
// digests with the manifests.
func Restore(ctx context.Context, pool *pgxpool.Pool, dir string) (*RestoreResult, error) {
	v, err := Verify(dir)
	if err != nil {
		return nil, err
	}
	var all []loaded
	for _, sum := range v.Manifests {
		l, err := readManifest(dir, sum)
		if err != nil {
			return nil, err
		}
		all = append(all, l)
	}
	res := &RestoreResult{Dir: dir, Manifests: v.Manifests, Counts: v.Counts}
	err = db.WithTx(ctx, pool, func(ctx context.Context, tx pgx.Tx) error {
		if err := loadTx(ctx, tx, all); err != nil {
			return err
		}
		return tx.QueryRow(ctx, sqlCurrentDatabase).Scan(&res.Database)
	})
	if err != nil {
		return nil, restoreError(err)
	}
	for _, l := range all {
		err := db.WithTxOptions(ctx, pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(ctx context.Context, tx pgx.Tx) error {
			return reproduceTx(ctx, tx, l)
		})
		if err != nil {
			return nil, err
		}
	}
	res.Reproduced = true
	return res, nil
}

func restoreError(err error) error {
	if errors.Is(err, ErrRestoreTarget) || errors.Is(err, ErrRestoreMismatch) {
		return err
	}
	return fmt.Errorf("restore: %w", err)
}

// loaded is one verified manifest with its files' bytes.
type loaded struct {
	sum      string
	m        *Manifest
	segments map[string][]byte
	defs     map[string][]byte
}

func readManifest(dir, sum string) (loaded, error) {
	m, _, err := verifyManifest(dir, sum)
	if err != nil {
		return loaded{}, err
	}
	l := loaded{sum: sum, m: m, segments: map[string][]byte{}, defs: map[string][]byte{}}
	for _, f := range m.Files {
		b, err := os.ReadFile(objectPath(dir, f.SHA256))
		if err != nil {
			return loaded{}, invalid(objectPath(dir, f.SHA256), "%v", err)
		}
		if f.Role == roleSegment {
			l.segments[f.SHA256] = b
		} else {
			l.defs[f.SHA256] = b
		}
	}
	return l, nil
}

// loadTx loads manifests into a scratch database in the caller's
// transaction: the target must hold no event and no retention run; the
// rows land with triggers off and must hang together afterwards.
func loadTx(ctx context.Context, tx pgx.Tx, all []loaded) error {
	rows, err := tx.Query(ctx, sqlRestoreTarget)
	if err != nil {
		return err
	}
	target, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[restoreTarget])
	if err != nil {
		return err
	}
	if target.Events != 0 || target.Runs != 0 {
		return fmt.Errorf("%w: it holds %d events and %d retention runs", ErrRestoreTarget, target.Events, target.Runs)
	}
	if _, err := tx.Exec(ctx, sqlTriggersOff); err != nil {
		if db.SQLState(err) == pgerrcode.InsufficientPrivilege {
			return fmt.Errorf("%w: the drill loads history with triggers off and needs a superuser: %w", ErrRestoreTarget, err)
		}
		return err
	}
	for _, l := range all {
		for _, f := range l.m.Files {
			if b, ok := l.defs[f.SHA256]; ok {
				if _, err := tx.Exec(ctx, sqlRestoreDefinition, pgx.NamedArgs{"document": string(b)}); err != nil {
					return fmt.Errorf("restore definition %s: %w", f.SHA256, err)
				}
			}
		}
		for _, f := range l.m.Files {
			if b, ok := l.segments[f.SHA256]; ok {
				if _, err := tx.Exec(ctx, sqlRestoreSegment, pgx.NamedArgs{"segment": string(b)}); err != nil {
					return fmt.Errorf("restore segment %s: %w", f.SHA256, err)
				}
			}
		}
	}
	if _, err := tx.Exec(ctx, sqlTriggersOn); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, sqlRestoreAnalyze); err != nil {
		return err
	}
	rows, err = tx.Query(ctx, sqlRestoreCheck)
	if err != nil {
		return err
	}
	check, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[restoreCheck])
	if err != nil {
		return err
	}
	if check != (restoreCheck{}) {
		return fmt.Errorf("%w: restored rows do not hang together: %+v", ErrRestoreMismatch, check)
	}
	return nil
}

// reproduceTx re-exports one manifest's rows from the restored database and
// compares the bytes' digests with the manifest's files.
func reproduceTx(ctx context.Context, tx pgx.Tx, l loaded) error {
	m, segments, defs := l.m, l.segments, l.defs
	ids := make([]uuid.UUID, len(m.Events))
	for i, e := range m.Events {
		ids[i] = uuid.MustParse(e.EventID)
	}
	segment, definitions, _, err := exportRows(ctx, tx, ids)
	if err != nil {
		return fmt.Errorf("restore: re-export: %w", err)
	}
	// guard RET-1.restore-segment-mismatch
	if _, ok := segments[sha256Hex(segment)]; !ok || len(segments) != 1 {
		return fmt.Errorf("%w: run %s: the restored segment digests to %s", ErrRestoreMismatch, m.RunID, sha256Hex(segment))
	}
	if len(definitions) != len(defs) {
		return fmt.Errorf("%w: run %s: %d definitions restored, %d archived", ErrRestoreMismatch, m.RunID, len(definitions), len(defs))
	}
	for _, d := range definitions {
		if _, ok := defs[sha256Hex(d)]; !ok {
			var v struct {
				Version struct {
					DeliverySetVersion int64 `json:"delivery_set_version"`
				} `json:"version"`
			}
			_ = json.Unmarshal(d, &v) // only names the version in the error
			return fmt.Errorf("%w: run %s: restored definition %d digests to %s", ErrRestoreMismatch,
				m.RunID, v.Version.DeliverySetVersion, sha256Hex(d))
		}
	}
	return nil
}
