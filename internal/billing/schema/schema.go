// Package schema holds the billing migration line: schema billing in the
// core database (finalization fences with their trigger snapshots and Work,
// moved here from admission; reservation states; the ledger; watermarks,
// evaluations, committed facts and coordinator receipts).
package schema

import (
	"embed"

	admissionschema "github.com/oceanway/core/internal/admission/schema"
	"github.com/oceanway/core/internal/boundary"
	"github.com/oceanway/core/internal/migrate"
	outboxschema "github.com/oceanway/core/internal/outbox/schema"
)

// LineName is the name of the billing migration line.
const LineName = "billing"

// RoleBilling is the role of the Billing coordinator and finalization commit.
const RoleBilling = "oceanway_billing"

// RoleGrants is the role of Core's command grant issuer (schema grants,
// created by this line: the issuer is Core, and keeps to its own table).
const RoleGrants = "oceanway_grants"

//go:embed migrations/*.sql
var files embed.FS

// FS is the line's migrations at their root.
var FS = migrate.MustSub(files, "migrations")

// Line is the billing migration line (internal/lines lists it).
func Line() migrate.Line {
	return migrate.Line{
		Name:       LineName,
		Boundaries: []boundary.Boundary{boundary.Core},
		FS:         FS,
		// The fence tables move out of admission; the role is an outbox producer.
		After: []string{outboxschema.LineName, admissionschema.LineName},
		Roles: []string{RoleBilling, RoleGrants},
	}
}
