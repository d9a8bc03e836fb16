// Package lines lists every migration line of the product in one place.
// Binaries that migrate (oceanway migrate, serve, demo, bench) pass All to
// internal/migrate; a new owner adds its schema package's Line here.
package lines

import (
	adminschema "github.com/oceanway/core/internal/admin/schema"
	admissionschema "github.com/oceanway/core/internal/admission/schema"
	billingschema "github.com/oceanway/core/internal/billing/schema"
	executionschema "github.com/oceanway/core/internal/execution/schema"
	gatewayschema "github.com/oceanway/core/internal/gateway/schema"
	meteringschema "github.com/oceanway/core/internal/metering/schema"
	"github.com/oceanway/core/internal/migrate"
	operationsschema "github.com/oceanway/core/internal/operations/schema"
	outboxschema "github.com/oceanway/core/internal/outbox/schema"
)

// All returns the product's migration lines in dependency order: the outbox
// line (every producer database) first, then the lines that build on it.
func All() []migrate.Line {
	return []migrate.Line{
		outboxschema.Line(),     // outbox (every producer database)
		adminschema.Line(),      // admin lookup indexes (every producer database)
		admissionschema.Line(),  // admission (core)
		billingschema.Line(),    // billing (core): fences, Work, reservation states, ledger
		executionschema.Line(),  // execution (execution)
		gatewayschema.Line(),    // gateway (gateway)
		meteringschema.Line(),   // metering (metering)
		operationsschema.Line(), // operations (core)
	}
}
