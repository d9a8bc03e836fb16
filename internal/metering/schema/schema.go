// Package schema holds the Metering owner's migration line: schema metering
// in the metering database (the input processor's receipts, the per-attempt
// input fence with its eligibility-lane watermarks, the provider-cost lanes
// and the immutable input Work generations).
package schema

import (
	"embed"

	"github.com/oceanway/core/internal/boundary"
	"github.com/oceanway/core/internal/migrate"
	outboxschema "github.com/oceanway/core/internal/outbox/schema"
)

// LineName is the name of the metering migration line.
const LineName = "metering"

// RoleMetering is the role of the Metering input processor.
const RoleMetering = "oceanway_metering"

//go:embed migrations/*.sql
var files embed.FS

// FS is the line's migrations at their root.
var FS = migrate.MustSub(files, "migrations")

// Line is the metering migration line (internal/lines lists it).
func Line() migrate.Line {
	return migrate.Line{
		Name:       LineName,
		Boundaries: []boundary.Boundary{boundary.Metering},
		FS:         FS,
		After:      []string{outboxschema.LineName},
		Roles:      []string{RoleMetering},
	}
}
