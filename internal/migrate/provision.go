package migrate

import (
	"context"
	"errors"
	"fmt"
	"regexp"

	"github.com/jackc/pgerrcode"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/oceanway/core/internal/boundary"
	"github.com/oceanway/core/internal/db"
)

// DefaultPrefix names the boundary databases when no prefix is given:
// oceanway_core, oceanway_execution, oceanway_gateway, oceanway_metering.
const DefaultPrefix = "oceanway"

var prefixRe = regexp.MustCompile(`^[a-z][a-z0-9_]{0,40}$`)

// DatabaseName is the database of boundary b under prefix: <prefix>_<b>.
func DatabaseName(prefix string, b boundary.Boundary) string { return prefix + "_" + string(b) }

// ProvisionParams says where to put the boundary databases.
type ProvisionParams struct {
	// ServerURL connects to any database of the server (usually postgres)
	// as a role allowed to create databases and roles.
	ServerURL string
	// Prefix of the database names (DefaultPrefix when empty).
	Prefix string
	// Boundaries to provision (all four when empty).
	Boundaries []boundary.Boundary
	// Lines are the migration lines; each boundary gets the ones that apply
	// to it.
	Lines []Line
	// Logf receives progress lines when set.
	Logf func(format string, args ...any)
}

// ProvisionResult tells what Provision did.
type ProvisionResult struct {
	// DSNs maps each boundary to the connection string of its database.
	DSNs map[boundary.Boundary]string
	// Created lists the databases that did not exist before.
	Created []string
	// Applied lists the migrations applied now (empty on a re-run).
	Applied []Applied
}

// Provision creates the boundary databases that do not exist yet and applies
// the given lines to each. Running it again changes nothing.
func Provision(ctx context.Context, p ProvisionParams) (ProvisionResult, error) {
	prefix := p.Prefix
	if prefix == "" {
		prefix = DefaultPrefix
	}
	if !prefixRe.MatchString(prefix) {
		return ProvisionResult{}, fmt.Errorf("migrate: invalid database prefix %q (want %s)", prefix, prefixRe)
	}
	bs := p.Boundaries
	if len(bs) == 0 {
		bs = boundary.All
	}
	admin, err := pgx.Connect(ctx, p.ServerURL)
	if err != nil {
		return ProvisionResult{}, fmt.Errorf("migrate: connect: %w", err)
	}
	defer func() { _ = admin.Close(context.WithoutCancel(ctx)) }() // Terminate only: the server ends the session either way

	res := ProvisionResult{DSNs: map[boundary.Boundary]string{}}
	for _, b := range bs {
		name := DatabaseName(prefix, b)
		created, err := EnsureDatabase(ctx, admin, name, "")
		if err != nil {
			return res, err
		}
		if created {
			res.Created = append(res.Created, name)
			if p.Logf != nil {
				p.Logf("migrate: created database %s", name)
			}
		}
		res.DSNs[b] = db.WithDatabase(p.ServerURL, name)
	}
	for _, b := range bs {
		applied, err := Up(ctx, res.DSNs[b], b, p.Lines, Opts{Logf: p.Logf})
		res.Applied = append(res.Applied, applied...)
		if err != nil {
			return res, err
		}
	}
	return res, nil
}

// EnsureDatabase creates database name (from template when non-empty) unless
// it exists. A concurrent creation of the same name counts as existing.
func EnsureDatabase(ctx context.Context, admin *pgx.Conn, name, template string) (bool, error) {
	var exists bool
	if err := admin.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_database WHERE datname = $1)", name).Scan(&exists); err != nil {
		return false, fmt.Errorf("look up database %s: %w", name, err)
	}
	if exists {
		return false, nil
	}
	stmt := "CREATE DATABASE " + pgx.Identifier{name}.Sanitize()
	if template != "" {
		stmt += " TEMPLATE " + pgx.Identifier{template}.Sanitize()
	}
	_, err := admin.Exec(ctx, stmt)
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && (pgErr.Code == pgerrcode.DuplicateDatabase || pgErr.Code == pgerrcode.UniqueViolation) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("create database %s: %w", name, err)
	}
	return true, nil
}
