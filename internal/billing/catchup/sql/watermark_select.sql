-- The dimension's settlement input watermark (billing-owned
-- SettlementInputWakeupWatermark, 00001), locked.
SELECT inbox_revision, settlement_input_snapshot_ref, settlement_input_snapshot_schema_version,
       settlement_input_snapshot_digest_algorithm_version, settlement_input_snapshot_digest, settlement_input_state_version
FROM billing.settlement_input_watermarks
WHERE billing_reservation_id = @billing_reservation_id AND settlement_dimension_id = @settlement_dimension_id
FOR UPDATE
