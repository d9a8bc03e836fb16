// Package db holds the few database helpers every module shares: the one
// transaction helper (WithTx), the executor seam, and the translation of
// driver errors into typed errors. Nobody hand-rolls Begin/Commit elsewhere.
package db

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// RollbackTimeout bounds the deferred rollback, which runs on a context that
// survives the caller's cancellation.
const RollbackTimeout = 5 * time.Second

// Executor is what services and stores take: a pool, a connection or a
// transaction, so tests can inject either.
type Executor interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
	CopyFrom(ctx context.Context, table pgx.Identifier, columns []string, src pgx.CopyFromSource) (int64, error)
	Begin(ctx context.Context) (pgx.Tx, error)
}

// Beginner starts a transaction (a pool, a connection, or a transaction,
// which then starts a savepoint).
type Beginner interface {
	Begin(ctx context.Context) (pgx.Tx, error)
}

// TxBeginner starts a transaction with options (pools and connections).
type TxBeginner interface {
	BeginTx(ctx context.Context, opts pgx.TxOptions) (pgx.Tx, error)
}

// WithTx runs fn in a transaction: begin, fn, commit. Any error or panic
// rolls back; the rollback runs on context.WithoutCancel(ctx) with
// RollbackTimeout so a cancelled caller still releases its locks promptly.
func WithTx(ctx context.Context, db Beginner, fn func(ctx context.Context, tx pgx.Tx) error) error {
	tx, err := db.Begin(ctx)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	return run(ctx, tx, fn)
}

// WithTxOptions is WithTx with explicit transaction options (isolation level,
// read only, deferrable).
func WithTxOptions(ctx context.Context, db TxBeginner, opts pgx.TxOptions, fn func(ctx context.Context, tx pgx.Tx) error) error {
	tx, err := db.BeginTx(ctx, opts)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	return run(ctx, tx, fn)
}

// WithTxV is WithTx for a function that returns a value.
func WithTxV[T any](ctx context.Context, db Beginner, fn func(ctx context.Context, tx pgx.Tx) (T, error)) (T, error) {
	var out T
	err := WithTx(ctx, db, func(ctx context.Context, tx pgx.Tx) error {
		v, err := fn(ctx, tx)
		if err != nil {
			return err
		}
		out = v
		return nil
	})
	return out, err
}

func run(ctx context.Context, tx pgx.Tx, fn func(ctx context.Context, tx pgx.Tx) error) (err error) {
	defer func() {
		// A no-op after a successful commit (pgx returns ErrTxClosed).
		rbCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), RollbackTimeout)
		defer cancel()
		_ = tx.Rollback(rbCtx)
	}()
	if err := fn(ctx, tx); err != nil {
		return err
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}
