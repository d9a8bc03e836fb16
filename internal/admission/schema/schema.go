// Package schema holds the admission migration line: schema admission in
// the core database (runs, run admission manifests, credits reservations,
// billing finalization fences and their first work).
package schema

import (
	"embed"

	"github.com/oceanway/core/internal/boundary"
	"github.com/oceanway/core/internal/migrate"
	outboxschema "github.com/oceanway/core/internal/outbox/schema"
)

// LineName is the name of the admission migration line.
const LineName = "admission"

// RoleAdmission is the role of the Core admission producer.
const RoleAdmission = "oceanway_admission"

//go:embed migrations/*.sql
var files embed.FS

// FS is the line's migrations at their root.
var FS = migrate.MustSub(files, "migrations")

// Line is the admission migration line (internal/lines lists it).
func Line() migrate.Line {
	return migrate.Line{
		Name:       LineName,
		Boundaries: []boundary.Boundary{boundary.Core},
		FS:         FS,
		// The grants make the admission role an outbox producer.
		After: []string{outboxschema.LineName},
		Roles: []string{RoleAdmission},
	}
}
