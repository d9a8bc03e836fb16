// Package schema holds the operations migration line: schema operations in
// the core database (the Operations projector's receipts, projection state,
// revision gaps, build summaries and completeness proofs). Importing it
// registers the line with internal/migrate.
package schema

import (
	"embed"
	"io/fs"

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
var FS = mustSub(files, "migrations")

func init() {
	migrate.RegisterLine(migrate.Line{
		Name:       LineName,
		Boundaries: []migrate.Boundary{migrate.Core},
		FS:         FS,
		// The grants read the outbox tables the completeness proof compares with.
		After: []string{outboxschema.LineName},
		Roles: []string{RoleOperations},
	})
}

func mustSub(f fs.FS, dir string) fs.FS {
	sub, err := fs.Sub(f, dir)
	if err != nil {
		panic(err)
	}
	return sub
}
