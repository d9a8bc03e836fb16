-- validateSettlementInputCurrent receipts (issue 14 item 5; ADR-031 "Billing
-- 对每个维度调用 validateSettlementInputCurrent"): one immutable
-- SettlementInputCurrentValidationReceipt@1 per validation operation,
-- insert-or-compare. The same operation with the same request returns the
-- stored bytes; another request under the same operation is refused. No
-- expiry column exists: a receipt never times out. docs/metering.md.

-- +goose Up
-- +goose StatementBegin
CREATE TABLE metering.settlement_validation_receipts (
  validation_operation_id           uuid        PRIMARY KEY,
  request_digest                    text        NOT NULL CHECK (request_digest ~ '^[0-9a-f]{64}$'),
  purpose                           text        NOT NULL CHECK (purpose IN
    ('finalization', 'billing_catch_up_fence', 'late_settlement_command', 'post_finalization_transition')),
  settlement_dimension_id           uuid        NOT NULL,
  validated_state_version           bigint      NOT NULL CHECK (validated_state_version >= 1),
  validated_snapshot_ref            text        NOT NULL,
  result_state                      text        NOT NULL CHECK (result_state IN ('current', 'not_current')),
  current_state_version             bigint      NOT NULL,
  receipt_ref                       text        NOT NULL UNIQUE,
  receipt_digest                    text        NOT NULL CHECK (receipt_digest ~ '^[0-9a-f]{64}$'),
  receipt_body                      text        NOT NULL,
  recorded_at                       timestamptz NOT NULL DEFAULT now(),
  -- the validated five-tuple is a real snapshot of the dimension's chain
  FOREIGN KEY (settlement_dimension_id, validated_state_version, validated_snapshot_ref)
    REFERENCES metering.settlement_input_snapshots (settlement_dimension_id, state_version, snapshot_ref),
  CHECK ((result_state = 'current') = (current_state_version = validated_state_version)),
  CHECK (current_state_version >= validated_state_version)
);
CREATE TRIGGER /* guard ME001.settlement-validation-receipts-insert-only */ settlement_validation_receipts_insert_only BEFORE UPDATE OR DELETE ON metering.settlement_validation_receipts
  FOR EACH ROW EXECUTE FUNCTION metering.reject_change();

REVOKE ALL ON metering.settlement_validation_receipts FROM PUBLIC;
GRANT SELECT, INSERT ON metering.settlement_validation_receipts TO oceanway_metering;
-- +goose StatementEnd
