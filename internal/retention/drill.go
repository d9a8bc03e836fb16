package retention

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

const drillKind = "oceanway.outbox-recovery-drill@1"

// DrillDocument is the evidence of one restore drill of one manifest: what
// outbox.retention_record_drill stores (canonical bytes, addressed by their
// sha256) in the source database's recovery baseline. The controlled delete
// finds it by manifest digest and event-set digest.
type DrillDocument struct {
	Kind           string         `json:"kind"`
	ManifestSHA256 string         `json:"manifestSha256"`
	RunID          string         `json:"runId"`
	SourceDatabase string         `json:"sourceDatabase"`
	EventsSHA256   string         `json:"eventsSha256"`
	Counts         Counts         `json:"counts"`
	Files          []ManifestFile `json:"files"`
	// ScratchDatabase is the isolated database the rows were restored into
	// (in a transaction rolled back afterwards, so it stays a scratch).
	ScratchDatabase      string `json:"scratchDatabase"`
	ScratchServerVersion string `json:"scratchServerVersion"`
	RuntimeVersion       string `json:"runtimeVersion"`
	DrilledAt            string `json:"drilledAt"`
	// Reproduced: every restored row re-exported to the archived bytes.
	Reproduced bool `json:"reproduced"`
}

// DrillRecord is a drill recorded in the recovery baseline.
type DrillRecord struct {
	DrillSHA256 string        `json:"drillSha256"`
	Document    DrillDocument `json:"document"`
}

// eventSetSHA256 is outbox.retention_event_set_sha256: sha256 over
// "<event id> <envelope sha256>" lines in event id order.
func eventSetSHA256(events []ManifestEvent) string {
	lines := make([]string, len(events))
	for i, e := range events {
		lines[i] = strings.ToLower(e.EventID) + " " + e.EventEnvelopeSHA256
	}
	slices.Sort(lines) // uuid order is the order of its lowercase text
	sum := sha256.Sum256([]byte(strings.Join(lines, "\n")))
	return hex.EncodeToString(sum[:])
}

// runtimeVersion names the code that ran the drill: module version, VCS
// revision when built from a checkout, Go version.
func runtimeVersion() string {
	v := "oceanway (unknown build)"
	if bi, ok := debug.ReadBuildInfo(); ok {
		v = bi.Main.Path + "@" + bi.Main.Version
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" {
				v += " rev " + s.Value
			}
		}
	}
	return v + " " + runtime.Version()
}

// errDrillRollback ends the drill's scratch transaction: the restored rows
// are evidence only while the drill runs; the scratch stays empty.
var errDrillRollback = errors.New("retention: drill done")

// DrillManifest is the restore drill of one manifest of dir, bound to the
// source database it was archived from: verify the manifest and its files,
// restore them into the scratch database in one transaction (the same load
// and check as Restore), re-export the rows there and compare them with the
// archived bytes, roll the scratch transaction back, and record the drill
// in the source's recovery baseline (outbox.retention_record_drill). Only a
// manifest of this source with a recorded drill can be deleted by
// outbox.retention_archive (OWR04).
func DrillManifest(ctx context.Context, source, scratch *pgxpool.Pool, dir, manifestSHA256 string) (*DrillRecord, error) {
	if scratch == nil {
		return nil, ErrNoDrillTarget
	}
	l, err := readManifest(dir, manifestSHA256)
	if err != nil {
		return nil, err
	}
	var sourceDB string
	if err := source.QueryRow(ctx, sqlCurrentDatabase).Scan(&sourceDB); err != nil {
		return nil, fmt.Errorf("drill: %w", err)
	}
	if l.m.SourceDatabase != sourceDB {
		return nil, fmt.Errorf("%w: manifest %s was archived from %q, not %q", ErrRestoreTarget, manifestSHA256, l.m.SourceDatabase, sourceDB)
	}
	doc := DrillDocument{
		Kind: drillKind, ManifestSHA256: manifestSHA256, RunID: l.m.RunID, SourceDatabase: sourceDB,
		EventsSHA256: eventSetSHA256(l.m.Events), Counts: l.m.Counts, Files: l.m.Files,
		RuntimeVersion: runtimeVersion(),
	}
	tx, err := scratch.Begin(ctx)
	if err != nil {
		return nil, fmt.Errorf("drill: %w", err)
	}
	err = func() error {
		defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }() // always: the scratch stays empty
		if err := loadTx(ctx, tx, []loaded{l}); err != nil {
			return err
		}
		if err := reproduceTx(ctx, tx, l); err != nil {
			return err
		}
		var at time.Time
		if err := tx.QueryRow(ctx, sqlDrillRuntime).Scan(&doc.ScratchDatabase, &doc.ScratchServerVersion, &at); err != nil {
			return err
		}
		doc.DrilledAt = at.UTC().Format(time.RFC3339Nano)
		return errDrillRollback
	}()
	if !errors.Is(err, errDrillRollback) {
		return nil, restoreError(err)
	}
	doc.Reproduced = true
	canonical, err := canonicalJSON(doc)
	if err != nil {
		return nil, fmt.Errorf("drill: %w", err)
	}
	var sha string
	if err := source.QueryRow(ctx, sqlRecordDrill, pgx.NamedArgs{"drill_document": string(canonical)}).Scan(&sha); err != nil {
		return nil, fmt.Errorf("drill: record manifest %s: %w", manifestSHA256, TranslateError(err))
	}
	return &DrillRecord{DrillSHA256: sha, Document: doc}, nil
}

// Drill re-drills every manifest of dir archived from the source database
// and records each in its recovery baseline (a periodic proof that the
// archive still restores; archive drills each batch itself).
func Drill(ctx context.Context, source, scratch *pgxpool.Pool, dir string) ([]DrillRecord, error) {
	v, err := Verify(dir)
	if err != nil {
		return nil, err
	}
	var sourceDB string
	if err := source.QueryRow(ctx, sqlCurrentDatabase).Scan(&sourceDB); err != nil {
		return nil, fmt.Errorf("drill: %w", err)
	}
	out := []DrillRecord{}
	for _, sum := range v.Manifests {
		m, _, err := verifyManifest(dir, sum)
		if err != nil {
			return out, err
		}
		if m.SourceDatabase != sourceDB {
			continue
		}
		r, err := DrillManifest(ctx, source, scratch, dir, sum)
		if err != nil {
			return out, err
		}
		out = append(out, *r)
	}
	return out, nil
}

// SHA256Hex is the lowercase hex SHA-256 of b (the address of a drill
// document or archive file).
func SHA256Hex(b []byte) string { return sha256Hex(b) }
