// Package lines registers every migration line of the project with
// internal/migrate. Binaries that migrate (oceanway migrate, serve, demo,
// bench) import it once so no line can be forgotten.
package lines

import (
	_ "github.com/oceanway/core/internal/admin/schema"      // admin (every producer database)
	_ "github.com/oceanway/core/internal/admission/schema"  // admission (core)
	_ "github.com/oceanway/core/internal/operations/schema" // operations (core)
	_ "github.com/oceanway/core/internal/outbox/schema"     // outbox (every producer database)
)
