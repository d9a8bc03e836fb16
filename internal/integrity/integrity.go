package integrity

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/oceanway/core/contracts/kinds"
	"github.com/oceanway/core/internal/boundary"
	"github.com/oceanway/core/internal/db"
)

// DefaultStatementTimeout bounds each statement of a verification (a whole
// table is read by one statement).
const DefaultStatementTimeout = 5 * time.Minute

// Config tunes Verify.
type Config struct {
	// StatementTimeout of every read (DefaultStatementTimeout when zero).
	StatementTimeout time.Duration
}

// Mismatch is one thing that does not match: which database, table and
// row, and what.
type Mismatch struct {
	Database string `json:"database"`
	Table    string `json:"table"`
	Key      string `json:"key"`
	Column   string `json:"column,omitempty"`
	Problem  string `json:"problem"`
}

func (m Mismatch) String() string {
	col := ""
	if m.Column != "" {
		col = " " + m.Column
	}
	return fmt.Sprintf("%s %s [%s]%s: %s", m.Database, m.Table, m.Key, col, m.Problem)
}

// TableResult counts the rows read from one table of one database.
type TableResult struct {
	Table string `json:"table"`
	Rows  int64  `json:"rows"`
}

// DatabaseResult is one database's part of a Report.
type DatabaseResult struct {
	Database string        `json:"database"`
	Tables   []TableResult `json:"tables"`
	// Ledger is true when the billing ledger was checked (core only).
	Ledger     bool  `json:"ledger"`
	Mismatches int64 `json:"mismatches"`
}

// Report is a whole verification.
type Report struct {
	Databases  []DatabaseResult `json:"databases"`
	Mismatches []Mismatch       `json:"mismatches"`
}

// MismatchError is returned by Report.Err when anything does not match; the
// CLI exits 1 with it.
type MismatchError struct {
	Count int
}

func (e *MismatchError) Error() string {
	return fmt.Sprintf("verify: %d mismatch(es): a stored fact or ledger line does not match its digest or its justification", e.Count)
}

// ErrMismatch is what every *MismatchError matches with errors.Is.
var ErrMismatch = errors.New("verify: mismatch")

// Is makes errors.Is(err, ErrMismatch) hold.
func (e *MismatchError) Is(target error) bool { return target == ErrMismatch }

// Err is nil when nothing mismatches, else a *MismatchError.
func (r *Report) Err() error {
	if len(r.Mismatches) == 0 {
		return nil
	}
	return &MismatchError{Count: len(r.Mismatches)}
}

// Verify reads each given database in one READ ONLY, REPEATABLE READ
// transaction (one snapshot per database; databases are never joined) and
// checks its content-addressed facts and, in core, the billing ledger. An
// error is returned only when a database cannot be read; mismatches are in
// the report (Report.Err).
func Verify(ctx context.Context, dbs map[boundary.Boundary]db.TxBeginner, cfg Config) (*Report, error) {
	if cfg.StatementTimeout <= 0 {
		cfg.StatementTimeout = DefaultStatementTimeout
	}
	known := map[string]kinds.Kind{}
	for _, k := range kinds.All() {
		known[k.Name] = k
	}
	rep := &Report{Mismatches: []Mismatch{}}
	for _, b := range boundary.All {
		conn, ok := dbs[b]
		if !ok {
			continue
		}
		res := DatabaseResult{Database: string(b), Tables: []TableResult{}}
		report := func(m Mismatch) {
			res.Mismatches++
			rep.Mismatches = append(rep.Mismatches, m)
		}
		err := db.WithTxOptions(ctx, conn, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(ctx context.Context, tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, "SELECT set_config('statement_timeout', $1, true)", fmt.Sprint(cfg.StatementTimeout.Milliseconds())); err != nil {
				return fmt.Errorf("statement timeout: %w", err)
			}
			for _, f := range Facts {
				if !holds(f, b) {
					continue
				}
				n, err := factCheck{f: f, kinds: known}.run(ctx, tx, string(b), report)
				if err != nil {
					return err
				}
				res.Tables = append(res.Tables, TableResult{Table: f.Table + "." + f.Body, Rows: n})
			}
			if b == boundary.Core {
				n, err := checkLedger(ctx, tx, string(b), report)
				if err != nil {
					return err
				}
				res.Ledger = true
				res.Tables = append(res.Tables, TableResult{Table: "billing.ledger_postings", Rows: n})
			}
			return nil
		})
		if err != nil {
			return rep, fmt.Errorf("verify %s: %w", b, err)
		}
		rep.Databases = append(rep.Databases, res)
	}
	return rep, nil
}

func holds(f Fact, b boundary.Boundary) bool {
	for _, x := range f.Boundaries {
		if x == b {
			return true
		}
	}
	return false
}
