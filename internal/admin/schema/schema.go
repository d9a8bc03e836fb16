// Package schema holds the admin migration line: the payload lookup indexes
// the admin's events-by-reference lookup needs, on the outbox table of every
// producer database (all four boundaries).
package schema

import (
	"embed"

	"github.com/oceanway/core/internal/boundary"
	"github.com/oceanway/core/internal/migrate"
	outboxschema "github.com/oceanway/core/internal/outbox/schema"
)

// LineName is the name of the admin migration line.
const LineName = "admin"

//go:embed migrations/*.sql
var files embed.FS

// FS is the line's migrations at their root.
var FS = migrate.MustSub(files, "migrations")

// Line is the admin migration line (internal/lines lists it).
func Line() migrate.Line {
	return migrate.Line{
		Name:       LineName,
		Boundaries: boundary.All,
		FS:         FS,
		// The indexes are on outbox.outbox_events.
		After: []string{outboxschema.LineName},
	}
}
