// Package retention governs how closed outbox history leaves the hot tables
// of one producer database (RET-1; the outbox document's 保留与重建).
//
// # What may leave
//
// Only closed history: a published event whose deliveries are all
// acknowledged (terminal, with their frozen ack), with no quarantine row and
// no legacy adoption record, created before the run's cutoff — together
// with its deliveries, attempt starts and attempt finishes. Receipts are
// never touched: they live in the consumers' databases, and the archived
// deliveries keep their ack receipt key and digest (outbox.archived_deliveries),
// so a receipt a terminal ack refers to still has that reference.
//
// # The order of a run (Archive)
//
//  1. In one REPEATABLE READ snapshot: the next batch of closed events
//     (keyset on the event id), their rows as one segment document and the
//     definitions they froze (registry row, members, bindings).
//  2. Files: each document in RFC 8785 canonical bytes, stored under
//     objects/<sha256>.json (content-addressed), then the manifest
//     (run id, cutoff, counts, files with digest and size, every event id
//     with its envelope digest) under manifests/<sha256>.json. Every file
//     is written to a temporary name, fsynced, renamed and its directory
//     fsynced.
//  3. Verify reads the run's files back from disk and recomputes every
//     digest: file digests, canonical form, every event envelope's
//     jcs-sha256-v1 with the contracts implementation, every definition's
//     digest, the counts.
//  4. The restore drill of that manifest (DrillManifest): loaded into a
//     scratch database in a transaction that is rolled back, re-exported and
//     compared; the drill document (canonical, addressed by its sha256) is
//     recorded in the source's audited recovery baseline
//     (outbox.retention_recovery_drills, outbox migration 00096).
//  5. Only then outbox.retention_archive (one SECURITY DEFINER function,
//     one call per batch): it refuses a run without a recorded drill of
//     its manifest over the same event set and counts (OWR04), an event
//     that is not closed or whose digest differs from the archive's,
//     refuses counts that differ from
//     the hot rows, records the run (manifest digest, counts) and the
//     logical source of every archived event and delivery in insert-only
//     tables, and deletes the rows in four set-based statements. The delete
//     triggers of the four history tables admit nothing else (00020).
//
// One archive command runs per database (session advisory lock). A run the
// function refuses removes the files it added; a run interrupted between its
// files and the function leaves a manifest no recorded run names, which the
// next Archive on that database sweeps (its rows are still hot).
//
// # Completeness
//
// The Operations completeness proof reads outbox.delivery_facts, which
// keeps the archived deliveries with the same columns: an archive run
// changes neither the proof's inputs nor its digest, so the proof stays
// verified_current across it and never counts an archived event as a gap
// (nor forgets one).
//
// # Restore drill
//
// Restore verifies the whole archive directory, loads every manifest into a
// scratch database (migrated outbox line, no events, no retention run) with
// triggers off (session_replication_role = replica: a superuser on a
// scratch database), checks the rows hang together, and re-exports each
// segment and definition from the scratch database with the same statements:
// the bytes must digest to the manifest's entries.
package retention
