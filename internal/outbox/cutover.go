package outbox

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"github.com/jackc/pgx/v5"

	"github.com/oceanway/core/contracts/deliveryset"
	"github.com/oceanway/core/internal/db"
	"github.com/oceanway/core/internal/outbox/dbsqlc"
)

// ActivationResult tells what an activation or cutover changed.
type ActivationResult struct {
	// Activated is the now active definition.
	Activated deliveryset.Quadruple
	// Retired is the definition that was active before, if any.
	Retired *deliveryset.Quadruple
	// AlreadyActive is true when the definition was active already (no-op).
	AlreadyActive bool
}

// CutoverParams names the projection version to switch to and the
// registered definition that references exactly it.
type CutoverParams struct {
	ProjectionName     string
	ProjectionVersion  int64
	DeliverySetVersion int64
}

// RegisterProjectionVersionTx registers a projection version (idempotent).
func RegisterProjectionVersionTx(ctx context.Context, tx pgx.Tx, name string, version int64) error {
	if err := queries.ProjectionRegister(ctx, tx, dbsqlc.ProjectionRegisterParams{ProjectionName: name, ProjectionVersion: version}); err != nil {
		return fmt.Errorf("register projection %s/%d: %w", name, version, TranslateError(err))
	}
	return nil
}

// MarkProjectionReadyTx records that a registered projection version is
// ready, with a reference to its readiness proof. Marking again with the
// same proof is a no-op; another proof is ErrImmutable.
func MarkProjectionReadyTx(ctx context.Context, tx pgx.Tx, name string, version int64, proofRef string) error {
	if proofRef == "" {
		return fmt.Errorf("%w: readiness proof reference is required", ErrProjectionNotReady)
	}
	_, err := queries.ProjectionMarkReady(ctx, tx, dbsqlc.ProjectionMarkReadyParams{
		ProjectionName: name, ProjectionVersion: version, ReadinessProofRef: &proofRef,
	})
	if err = db.NotFound(err); errors.Is(err, db.ErrNotFound) {
		return fmt.Errorf("%w: %s/%d is not registered", ErrProjectionNotReady, name, version)
	}
	if err != nil {
		return fmt.Errorf("mark projection %s/%d ready: %w", name, version, TranslateError(err))
	}
	return nil
}

// ActivateTx explicitly activates a registered definition (DS-6): under the
// activation lock (exclusive against every append), every projection target
// the definition requires must be registered and ready and equal to that
// projection's active pointer (a missing pointer is created); the previously
// active definition is retired. Switching a projection to another version
// is CutoverTx's job: here a differing pointer is ErrProjectionMismatch.
// Deployment configuration selects a version through this function only,
// so it can only select an already registered one.
func ActivateTx(ctx context.Context, tx pgx.Tx, deliverySetVersion int64) (ActivationResult, error) {
	return activateTx(ctx, tx, deliverySetVersion, nil)
}

// Activate is ActivateTx in its own transaction.
func Activate(ctx context.Context, pool db.Beginner, deliverySetVersion int64) (ActivationResult, error) {
	return db.WithTxV(ctx, pool, func(ctx context.Context, tx pgx.Tx) (ActivationResult, error) {
		return ActivateTx(ctx, tx, deliverySetVersion)
	})
}

// CutoverTx is the projection cutover primitive (DS-8). Under the one
// cutover lock it proves the new projection version is marked ready, proves
// the definition references exactly that version (every required target of
// that projection), switches the projection's active pointer and activates
// the definition. Appends that commit after it freeze the new definition;
// pending events appended before keep the definition (and projection target)
// they froze.
func CutoverTx(ctx context.Context, tx pgx.Tx, p CutoverParams) (ActivationResult, error) {
	return activateTx(ctx, tx, p.DeliverySetVersion, &p)
}

// Cutover is CutoverTx in its own transaction.
func Cutover(ctx context.Context, pool db.Beginner, p CutoverParams) (ActivationResult, error) {
	return db.WithTxV(ctx, pool, func(ctx context.Context, tx pgx.Tx) (ActivationResult, error) {
		return CutoverTx(ctx, tx, p)
	})
}

// LockActivationTx takes the activation lock exclusively until the end of
// tx: every append (which holds it shared) waits, and so does every other
// activation or cutover. Release set-up takes it before it decides whether
// a database still needs its first definition.
func LockActivationTx(ctx context.Context, tx pgx.Tx) error {
	if err := queries.ActivationLock(ctx, tx); err != nil {
		return fmt.Errorf("activation lock: %w", err)
	}
	return nil
}

func activateTx(ctx context.Context, tx pgx.Tx, version int64, cut *CutoverParams) (ActivationResult, error) {
	if err := LockActivationTx(ctx, tx); err != nil {
		return ActivationResult{}, err
	}
	status, err := queries.DefinitionLock(ctx, tx, version)
	if err = db.NotFound(err); err != nil {
		if errors.Is(err, db.ErrNotFound) {
			return ActivationResult{}, fmt.Errorf("%w: %d", ErrDefinitionNotFound, version)
		}
		return ActivationResult{}, fmt.Errorf("lock definition %d: %w", version, err)
	}
	stored, err := DefinitionByVersion(ctx, tx, version)
	if err != nil {
		return ActivationResult{}, err
	}
	def := stored.Definition

	// The projection versions the definition's members require.
	targets := map[string]int64{}
	for _, m := range def.Members {
		if !m.ProjectionTarget.Required {
			continue
		}
		if v, ok := targets[m.ProjectionTarget.Name]; ok && v != m.ProjectionTarget.Version {
			return ActivationResult{}, fmt.Errorf("%w: definition %d references %s versions %d and %d",
				ErrProjectionMismatch, version, m.ProjectionTarget.Name, v, m.ProjectionTarget.Version)
		}
		targets[m.ProjectionTarget.Name] = m.ProjectionTarget.Version
	}
	if cut != nil {
		v, ok := targets[cut.ProjectionName]
		if !ok || v != cut.ProjectionVersion {
			return ActivationResult{}, fmt.Errorf("%w: definition %d does not reference exactly %s/%d",
				ErrProjectionMismatch, version, cut.ProjectionName, cut.ProjectionVersion)
		}
	}
	names := make([]string, 0, len(targets))
	for n := range targets {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		v := targets[name]
		ready, err := queries.ProjectionReady(ctx, tx, dbsqlc.ProjectionReadyParams{ProjectionName: name, ProjectionVersion: v})
		if err = db.NotFound(err); errors.Is(err, db.ErrNotFound) || (err == nil && !ready) {
			return ActivationResult{}, fmt.Errorf("%w: %s/%d", ErrProjectionNotReady, name, v)
		}
		if err != nil {
			return ActivationResult{}, fmt.Errorf("projection %s/%d: %w", name, v, err)
		}
		current, err := queries.ProjectionPointer(ctx, tx, name)
		switch err = db.NotFound(err); {
		case errors.Is(err, db.ErrNotFound):
		case err != nil:
			return ActivationResult{}, fmt.Errorf("projection pointer %s: %w", name, err)
		case current != v && (cut == nil || cut.ProjectionName != name):
			return ActivationResult{}, fmt.Errorf("%w: %s points at version %d, definition %d references %d (switch with a cutover)",
				ErrProjectionMismatch, name, current, version, v)
		}
		if err := queries.ProjectionPointerSet(ctx, tx, dbsqlc.ProjectionPointerSetParams{
			ProjectionName: name, ProjectionVersion: v, DeliverySetVersion: version,
		}); err != nil {
			return ActivationResult{}, fmt.Errorf("switch projection pointer %s: %w", name, TranslateError(err))
		}
	}

	res := ActivationResult{Activated: def.Quadruple()}
	if DefinitionStatus(status) == StatusActive {
		res.AlreadyActive = true
		return res, nil
	}
	retired, err := queries.DefinitionRetireActive(ctx, tx, version)
	if err != nil {
		return ActivationResult{}, fmt.Errorf("retire active definition: %w", TranslateError(err))
	}
	for _, r := range retired {
		q := quadrupleRow(r).quadruple()
		res.Retired = &q
	}
	if err := queries.DefinitionActivate(ctx, tx, version); err != nil {
		return ActivationResult{}, fmt.Errorf("activate definition %d: %w", version, TranslateError(err))
	}
	return res, nil
}
