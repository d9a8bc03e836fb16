// Package schema holds the Execution owner's migration line: schema
// execution in the execution database (run execution states, attempts with
// their manifests, eligibility facts, attempt-set closures).
package schema

import (
	"embed"
	"io/fs"

	"github.com/oceanway/core/internal/boundary"
	"github.com/oceanway/core/internal/migrate"
	outboxschema "github.com/oceanway/core/internal/outbox/schema"
)

// LineName is the name of the execution migration line.
const LineName = "execution"

// RoleExecution is the role of the Execution owner.
const RoleExecution = "oceanway_execution"

//go:embed migrations/*.sql
var files embed.FS

// FS is the line's migrations at their root.
var FS = mustSub(files, "migrations")

// Line is the execution migration line (internal/lines lists it).
func Line() migrate.Line {
	return migrate.Line{
		Name:       LineName,
		Boundaries: []boundary.Boundary{boundary.Execution},
		FS:         FS,
		// The grants make the execution role an outbox producer.
		After: []string{outboxschema.LineName},
		Roles: []string{RoleExecution},
	}
}

func mustSub(f fs.FS, dir string) fs.FS {
	sub, err := fs.Sub(f, dir)
	if err != nil {
		panic(err)
	}
	return sub
}
