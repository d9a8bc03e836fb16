package work

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/oceanway/core/internal/db"
)

// Store runs one queue's Claimable statements on its owner's database.
type Store struct {
	pool                            db.Beginner
	spec                            Claimable
	clock                           func() time.Time
	claim, release, renew, backlogQ string
}

// NewStore builds the statements once. tail continues the leased claim
// (Claimable.LeasedClaim; empty for a locked queue, which claims in its own
// transaction and has no Owner to release or renew); clock is the caller's
// clock when spec.Now is "@now::timestamptz" (nil otherwise).
func NewStore(pool db.Beginner, spec Claimable, tail string, clock func() time.Time) *Store {
	s := &Store{pool: pool, spec: spec, clock: clock, backlogQ: spec.Backlog()}
	if spec.Owner != "" {
		s.release, s.renew = spec.Release(), spec.Renew()
	}
	if tail != "" {
		s.claim = spec.LeasedClaim(tail)
	}
	return s
}

// ClaimSQL is the leased claim statement (plan tests).
func (s *Store) ClaimSQL() string { return s.claim }

func (s *Store) args(extra pgx.NamedArgs) pgx.NamedArgs {
	a := pgx.NamedArgs{}
	for k, v := range extra {
		a[k] = v
	}
	if strings.HasPrefix(s.spec.Now, "@now") {
		a["now"] = s.clock()
	}
	return a
}

// Claim runs the leased claim in its own transaction and collects the
// tail's rows into T by column name.
func Claim[T any](ctx context.Context, s *Store, limit int, lease time.Duration, extra pgx.NamedArgs) ([]T, error) {
	args := s.args(extra)
	args["limit"], args["lease_seconds"] = limit, lease.Seconds()
	out, err := db.WithTxV(ctx, s.pool, func(ctx context.Context, tx pgx.Tx) ([]T, error) {
		rows, err := tx.Query(ctx, s.claim, args)
		if err != nil {
			return nil, err
		}
		return pgx.CollectRows(rows, pgx.RowToStructByName[T])
	})
	if err != nil {
		return nil, fmt.Errorf("claim work: %w", err)
	}
	return out, nil
}

// ReleaseTx makes the attempt's Work (key and owner arguments) claimable
// again after a delay, in the caller's transaction.
func (s *Store) ReleaseTx(ctx context.Context, tx pgx.Tx, attempt pgx.NamedArgs, after time.Duration) error {
	args := s.args(attempt)
	args["after_seconds"] = after.Seconds()
	if _, err := tx.Exec(ctx, s.release, args); err != nil {
		return fmt.Errorf("release work: %w", err)
	}
	return nil
}

// Release is ReleaseTx in its own transaction.
func (s *Store) Release(ctx context.Context, attempt pgx.NamedArgs, after time.Duration) error {
	return db.WithTx(ctx, s.pool, func(ctx context.Context, tx pgx.Tx) error { return s.ReleaseTx(ctx, tx, attempt, after) })
}

// Renew extends the attempt's lease; ErrLeaseLost when it no longer owns
// its Work or its lease had already ended.
func (s *Store) Renew(ctx context.Context, attempt pgx.NamedArgs, lease time.Duration) error {
	args := s.args(attempt)
	args["lease_seconds"] = lease.Seconds()
	return db.WithTx(ctx, s.pool, func(ctx context.Context, tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, s.renew, args)
		if err != nil {
			return fmt.Errorf("renew work lease: %w", err)
		}
		// guard OB-CLAIM-2.work-renew-lease-lost
		if tag.RowsAffected() == 0 {
			return ErrLeaseLost
		}
		return nil
	})
}

// Backlog reads the claimable depth and the oldest claimable age.
func (s *Store) Backlog(ctx context.Context, extra pgx.NamedArgs) (Backlog, error) {
	var b Backlog
	var age float64
	err := db.WithTx(ctx, s.pool, func(ctx context.Context, tx pgx.Tx) error {
		return tx.QueryRow(ctx, s.backlogQ, s.args(extra)).Scan(&b.Depth, &age)
	})
	if err != nil {
		return Backlog{}, fmt.Errorf("read work backlog: %w", err)
	}
	b.OldestAge = time.Duration(age * float64(time.Second))
	return b, nil
}
