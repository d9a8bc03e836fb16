-- Lookups that stay flat as history grows (issue 17).
--
-- A statement that says `event_id = $1 AND published_at IS NULL` lets the
-- planner choose the partial index outbox_events_unpublished (every
-- unpublished event) and filter it on event_id: with statistics taken while
-- the backlog was small that plan looks cheapest, and it then reads the whole
-- unpublished backlog per acknowledgement (measured: 1.8 million index tuples
-- for 10,000 events). Both per-ack lookups of published_at go by the primary
-- key alone (00005, 00003) and test published_at on the row they read:
-- outbox.prove_publication (the deferred proof at COMMIT) and
-- outbox.record_publication's compare-and-set (on the event row it has
-- locked FOR NO KEY UPDATE). TestAck_OBPUB1_PublicationPlansUsePrimaryKeys
-- proves the plans.

-- +goose Up
-- Lease-expiry recovery's index, unusable by the fenced writes (issue 17).
-- The fenced UPDATEs (ack, renew, retry, quarantine) say `status = 'leased'`,
-- which implied the old predicate, so the planner could (and with a cached
-- generic plan made while the table was small, did) walk this index, every
-- entry an ended lease left behind until vacuum, and filter it, instead of
-- probing the primary key. With `lease_owner IS NOT NULL` in the predicate
-- (true of every leased row: outbox_deliveries_leased_has_lease) only a
-- statement that says so, the recovery scan, can use it.
DROP INDEX outbox.outbox_deliveries_claim_leased;
CREATE INDEX outbox_deliveries_claim_leased ON outbox.outbox_deliveries (lease_expires_at)
  WHERE status = 'leased' AND lease_owner IS NOT NULL;
