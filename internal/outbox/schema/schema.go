// Package schema holds the outbox migration line: the embedded SQL that
// creates schema outbox in every producer database (all four boundaries).
package schema

import (
	"embed"

	"github.com/oceanway/core/internal/boundary"
	"github.com/oceanway/core/internal/migrate"
)

// LineName is the name of the outbox migration line.
const LineName = "outbox"

// Roles granted by the outbox line.
const (
	RoleProducer   = "oceanway_producer"
	RoleDispatcher = "oceanway_dispatcher"
	RoleDefiner    = "oceanway_outbox_definer"
	// RoleRetention runs `oceanway retention archive`: reads the history and
	// executes outbox.retention_archive (00020); RoleRetentionDefiner owns it.
	RoleRetention        = "oceanway_retention"
	RoleRetentionDefiner = "oceanway_retention_definer"
)

//go:embed migrations/*.sql
var files embed.FS

// FS is the line's migrations at their root.
var FS = migrate.MustSub(files, "migrations")

// Line is the outbox migration line (internal/lines lists it).
func Line() migrate.Line {
	return migrate.Line{
		Name:       LineName,
		Boundaries: boundary.All,
		FS:         FS,
		Roles:      []string{RoleProducer, RoleDispatcher, RoleDefiner, RoleRetention, RoleRetentionDefiner},
	}
}
