// Package cutover builds and switches versions of the Operations read model
// (DS-8, OPS-4; the outbox document's "Ordering 与完整性证明" on shadow claims,
// the readiness proof and the cutover).
//
// # Shadow build
//
// A new projection version is built next to the active one from the source
// of truth: every event of the core outbox whose frozen definition routes it
// to core_operations (view outbox.projection_source_events), fed through the
// same projector code (projector.Projector with Config.ShadowToken) as the
// dispatcher uses, keyed by the shadow version. The build holds a shadow
// claim (operations.shadow_builds) with a fencing token; every shadow
// transaction binds the token and the database refuses its writes
// (operations.shadow_fence, SQLSTATE OP003/OP004) when the token is not the
// build's current one, when the build is paused, when the event is outside a
// frozen candidate, or once the version was cut over. Claiming the build
// again hands out a fresh token and fences the previous holder out.
//
// # Cutover (exactly the document's sequence)
//
//  1. Pause the shadow claim and drain it: an UPDATE of the build row waits
//     for every in-flight shadow transaction (they hold the row FOR SHARE).
//  2. One short REPEATABLE READ transaction freezes the candidate — its exact
//     members, their frozen definitions and expected receipt coordinates —
//     and binds a new shadow claim token.
//  3. The shadow catches up to that boundary only (events outside the
//     candidate are refused by the database).
//  4. Stop and drain the active claim: the final transaction takes the
//     projector's active claim gate exclusive (every active application
//     holds it shared), so in-flight applications commit first and no new
//     one starts until the switch commits.
//  5. In that final transaction: re-check the candidate (members, a receipt
//     with the member's envelope digest for each, no unresolved gap, no
//     unsupported schema, no quarantine in scope), write the immutable,
//     content-addressed readiness proof (operations.readiness_proofs; the
//     database re-proves it on insert, OP005), mark the version ready with
//     the proof's address, register the definition that references exactly
//     the new version and switch the active pointer with it
//     (outbox.CutoverTx), and mark the build cut over.
//
// Events appended after the freeze are not in the readiness proof. They
// keep their frozen definition (DS-8): deliveries frozen to the old version
// are acknowledged with receipts of the old version (the projector under
// serve builds every registered version), and the new active version
// catches up on them from the source right after the switch (CatchUp).
// Events appended after the switch freeze the new definition and are
// delivered to the new version.
//
// # Archived source (RET-1)
//
// The shadow feed reads hot events only. A shadow claim, the freeze and the
// final transaction refuse (ErrArchivedSource) while archived events of the
// projection's source (outbox.projection_archived_source_events) lie outside
// the frozen candidate, so a readiness proof never covers fewer events than
// the source holds.
//
// What it never does: write outbox tables other than through the outbox
// registry functions, use a build summary or a "last seen" position as
// evidence, or accept a readiness mark without a proof row.
package cutover
