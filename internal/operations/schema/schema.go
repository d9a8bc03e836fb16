// Package schema holds the operations migration line: schema operations in
// the core database (the Operations projector's receipts, projection state,
// revision gaps, build summaries and completeness proofs).
package schema

import (
	"embed"

	"github.com/oceanway/core/internal/boundary"
	"github.com/oceanway/core/internal/migrate"
	outboxschema "github.com/oceanway/core/internal/outbox/schema"
)

// LineName is the name of the operations migration line.
const LineName = "operations"

// RoleOperations is the role of the projector, the directed receipt read,
// the read-model queries and the completeness verifier.
const RoleOperations = "oceanway_operations"

//go:embed migrations/*.sql
var files embed.FS

// FS is the line's migrations at their root.
var FS = migrate.MustSub(files, "migrations")

// Line is the operations migration line (internal/lines lists it).
func Line() migrate.Line {
	return migrate.Line{
		Name:       LineName,
		Boundaries: []boundary.Boundary{boundary.Core},
		FS:         FS,
		// The grants read the outbox tables the completeness proof compares with.
		After: []string{outboxschema.LineName},
		Roles: []string{RoleOperations},
	}
}
