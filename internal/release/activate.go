package release

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/oceanway/core/contracts/deliveryset"
	"github.com/oceanway/core/internal/db"
	"github.com/oceanway/core/internal/outbox"
)

// ErrAlreadyActive refuses an initial activation in a database that already
// has an active definition (switch with `definitions activate` or a cutover).
var ErrAlreadyActive = errors.New("release: a definition is already active")

// Register registers a definition by insert-or-compare (outbox.RegisterTx,
// DS-6) after binding the release's destinations (idempotent), so a freshly
// migrated database accepts the release's definitions. It never activates.
func Register(ctx context.Context, pool db.Beginner, def *deliveryset.Definition, opts outbox.RegisterOpts) (outbox.RegisterResult, error) {
	return db.WithTxV(ctx, pool, func(ctx context.Context, tx pgx.Tx) (outbox.RegisterResult, error) {
		if _, err := outbox.BindDestinationsTx(ctx, tx, Bindings()...); err != nil {
			return outbox.RegisterResult{}, err
		}
		return outbox.RegisterTx(ctx, tx, def, opts)
	})
}

// ActivateInitialTx explicitly activates an already registered definition
// as a database's first one (DS-6): under the activation lock, when no
// definition is active yet, it binds the release's destinations, registers
// each projection version the definition's members freeze, records
// readinessProofRef as their readiness proof (a new, empty projection) and
// activates the definition. It never registers a definition: the version
// must be in the registry already (ErrDefinitionNotFound otherwise).
func ActivateInitialTx(ctx context.Context, tx pgx.Tx, version int64, readinessProofRef string) (outbox.ActivationResult, error) {
	if readinessProofRef == "" {
		return outbox.ActivationResult{}, fmt.Errorf("%w: readiness proof reference is required", outbox.ErrProjectionNotReady)
	}
	if err := outbox.LockActivationTx(ctx, tx); err != nil {
		return outbox.ActivationResult{}, err
	}
	active, err := outbox.ActiveDefinition(ctx, tx)
	switch {
	case err == nil:
		return outbox.ActivationResult{}, fmt.Errorf("%w: version %d", ErrAlreadyActive, active.Definition.Version)
	case !errors.Is(err, outbox.ErrNoActiveDefinition):
		return outbox.ActivationResult{}, err
	}
	stored, err := outbox.DefinitionByVersion(ctx, tx, version)
	if err != nil {
		return outbox.ActivationResult{}, err
	}
	if _, err := outbox.BindDestinationsTx(ctx, tx, Bindings()...); err != nil {
		return outbox.ActivationResult{}, err
	}
	seen := map[string]bool{}
	for _, m := range stored.Definition.Members {
		t := m.ProjectionTarget
		key := fmt.Sprintf("%s/%d", t.Name, t.Version)
		if !t.Required || seen[key] {
			continue
		}
		seen[key] = true
		if err := outbox.RegisterProjectionVersionTx(ctx, tx, t.Name, t.Version); err != nil {
			return outbox.ActivationResult{}, err
		}
		if err := outbox.MarkProjectionReadyTx(ctx, tx, t.Name, t.Version, readinessProofRef); err != nil {
			return outbox.ActivationResult{}, err
		}
	}
	return outbox.ActivateTx(ctx, tx, version)
}

// ActivateInitial is ActivateInitialTx in its own transaction.
func ActivateInitial(ctx context.Context, pool db.Beginner, version int64, readinessProofRef string) (outbox.ActivationResult, error) {
	return db.WithTxV(ctx, pool, func(ctx context.Context, tx pgx.Tx) (outbox.ActivationResult, error) {
		return ActivateInitialTx(ctx, tx, version, readinessProofRef)
	})
}
