// Package admin answers the operator's questions about the outbox of one or
// more producer databases without writing SQL, and serves them as a
// read-only web page and JSON API (http.go) and through `oceanway inspect`:
//
//   - per boundary and destination, the delivery counts by status and the age
//     of the oldest open (pending or leased) delivery;
//   - the most recent quarantines with their reason (a bounded list);
//   - the registered Delivery Set Definitions, the active one first;
//   - a lookup by exact event id, run id or reservation id that shows each
//     event (canonical envelope, envelope digest, frozen definition
//     quadruple, published_at), its deliveries and the full attempt history
//     (every start joined with its finish);
//   - the outbox side of completeness: open and quarantined mandatory
//     deliveries and published_at coverage per boundary;
//   - the money of the core and metering databases (money.go);
//   - the Finalization reconciliation cases of the active Operations
//     projection, open first, each with its resolution command chain
//     (cases.go). A case closes only through `oceanway case
//     request|approve|apply`, never here.
//
// # Read-only guarantee
//
// Admin is read-only in this phase (OBS-4; outbox document, 重试、隔离与人工处置):
// there is no skip, force-success, edit-payload or replay action, in the
// code or on the page. Three things hold that line:
//
//  1. every query runs inside one transaction begun with
//     AccessMode ReadOnly (PostgreSQL rejects any write in it with SQLSTATE
//     25006), REPEATABLE READ so one answer is one snapshot, and a local
//     statement_timeout;
//  2. the embedded SQL files are SELECT statements only (a test checks it);
//  3. the HTTP handler answers GET and HEAD only (405 otherwise) and has no
//     route that changes state.
//
// # Exact ids and bounds
//
// Lookups take exact UUIDs only; a malformed id is an *InvalidIDError
// before any query runs. A run or reservation lookup matches the event's
// aggregate (indexed) or the payload field runId / billingReservationId.
// The outbox migration line has no expression index on those payload
// fields, so that branch is a bounded scan: it stops at the lookup limit and
// the statement timeout ends it on a very large table. Lists are bounded by
// Config limits and say when they were truncated.
//
// # Boundaries
//
// A Reader reads a set of producer databases by name (core, execution,
// gateway, metering). Nothing is joined across databases (DESIGN.md §2):
// each boundary is read in its own transaction and reported on its own; a
// boundary that cannot be read is reported with its error while the others
// are still shown.
package admin
