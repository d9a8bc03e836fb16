// Package outbox is the storage side of the transactional outbox: the
// atomic append a domain transaction calls, the Delivery Set Definition
// registry, the projection cutover primitive and the wrapper of the
// published_at controlled function. The schema itself is the outbox
// migration line in package schema; docs/outbox-storage.md describes every
// table, trigger, grant and SQLSTATE.
//
// # No domain here
//
// The engine knows no destination, consumer, receipt type, projection or
// release. Destinations and their receipt bindings are data the release
// seeds (BindDestinationsTx); what a release requires of every append is a
// ReleasePolicy the caller gives its Appender. internal/release wires the
// product's first release onto these APIs.
//
// # Trust model
//
// The database, not this package, is the last line of defence.
// Appender.AppendTx proves DS-9 in Go and writes exactly the mandatory delivery rows, but a
// deferred constraint trigger re-proves the delivery set of every event at
// COMMIT, delivery rows can only be born in their event's transaction, and
// triggers plus column grants keep events, definitions, members and attempt
// facts immutable for every role. Code that bypasses this package — a
// hand-written INSERT, a buggy migration, a dispatcher — still cannot
// commit an event whose delivery set differs from its frozen definition.
//
// # The activation lock
//
// One advisory lock per database orders appends against activations:
// every append holds it shared from its first insert to the end of its
// transaction, ActivateTx and CutoverTx hold it exclusive. So an activation
// waits for in-flight appends (which keep the definition they froze) and
// every append that starts after it sees the new definition. The event
// inserts are guarded by "the frozen quadruple is the active definition"
// under that lock, which lets AppendTx try the definition it last saw
// active without a separate read (one round trip per append); when the
// guard finds another definition active nothing was written and AppendTx
// reads the active definition and proves the events against it.
//
// # Definitions are content-addressed
//
// A definition quadruple (version, schema version, digest algorithm
// version, digest) names exactly one content: the digest covers every
// applicable pair and member. Decoded definitions are therefore cached
// process-wide by quadruple, while which quadruple is active is always
// decided by the database inside the caller's transaction.
//
// # published_at
//
// published_at is a compatibility summary, not the delivery state: it goes
// NULL → time once, only through outbox.record_publication_batch (the
// dispatcher's ack batch; outbox.record_publication, RecordPublicationTx, is
// a batch of one), called in the ack transaction. The function
// checks the ack against the frozen event and member and answers complete,
// not_complete or raises (invalid).
package outbox
