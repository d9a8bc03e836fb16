package outbox

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/oceanway/core/contracts/deliveryset"
	"github.com/oceanway/core/internal/db"
)

// BootstrapParams set up a fresh producer database for appends.
type BootstrapParams struct {
	// ProjectionName and ProjectionVersion are the Operations projection the
	// first release's core_operations members freeze.
	ProjectionName    string
	ProjectionVersion int64
	// ReadinessProofRef is recorded as the projection version's readiness
	// proof (e.g. "bootstrap" for a new, empty projection).
	ReadinessProofRef string
	// SourceRelease is registry metadata.
	SourceRelease string
}

// BootstrapFirstReleaseTx prepares a producer database for appends: when no
// definition is active yet, it registers the projection version and marks
// it ready, registers the first full release definition (DS-7) for it and
// activates it. When a definition is already active it changes nothing and
// returns the active one, so demo and test set-up can run it on every start.
func BootstrapFirstReleaseTx(ctx context.Context, tx pgx.Tx, p BootstrapParams) (*deliveryset.Definition, error) {
	def, err := deliveryset.FirstRelease(p.ProjectionName, p.ProjectionVersion)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidDefinition, err)
	}
	if _, err := tx.Exec(ctx, qActivationLock); err != nil {
		return nil, fmt.Errorf("activation lock: %w", err)
	}
	active, err := ActiveDefinition(ctx, tx)
	if err == nil {
		return active.Definition, nil
	}
	if !errors.Is(err, ErrNoActiveDefinition) {
		return nil, err
	}
	if err := RegisterProjectionVersionTx(ctx, tx, p.ProjectionName, p.ProjectionVersion); err != nil {
		return nil, err
	}
	proof := p.ReadinessProofRef
	if proof == "" {
		proof = "bootstrap"
	}
	if err := MarkProjectionReadyTx(ctx, tx, p.ProjectionName, p.ProjectionVersion, proof); err != nil {
		return nil, err
	}
	if _, err := RegisterTx(ctx, tx, def, RegisterOpts{SourceRelease: p.SourceRelease}); err != nil {
		return nil, err
	}
	if _, err := ActivateTx(ctx, tx, def.Version); err != nil {
		return nil, err
	}
	return def, nil
}

// BootstrapFirstRelease is BootstrapFirstReleaseTx in its own transaction.
func BootstrapFirstRelease(ctx context.Context, pool db.Beginner, p BootstrapParams) (*deliveryset.Definition, error) {
	return db.WithTxV(ctx, pool, func(ctx context.Context, tx pgx.Tx) (*deliveryset.Definition, error) {
		return BootstrapFirstReleaseTx(ctx, tx, p)
	})
}
