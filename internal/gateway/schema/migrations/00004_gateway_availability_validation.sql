-- The Gateway's operation-bound current validation of an availability
-- snapshot (outbox "Gateway Event的Source读取与Current验证必须分阶段"): one
-- GatewayAvailabilityCurrentValidationReceipt@1 per validation operation,
-- insert-or-compare, immutable. The validated snapshot is a foreign key, so
-- a receipt never names a snapshot the Gateway does not hold.

-- +goose Up
CREATE TABLE gateway.availability_validation_receipts (
  validation_operation_id                         uuid        NOT NULL PRIMARY KEY,
  receipt_ref                                     text        NOT NULL UNIQUE,
  receipt_schema_version                          text        NOT NULL CHECK (receipt_schema_version = '1'),
  receipt_digest_algorithm_version                text        NOT NULL CHECK (receipt_digest_algorithm_version = 'jcs-sha256-v1'),
  receipt_digest                                  text        NOT NULL CHECK (receipt_digest ~ '^[0-9a-f]{64}$'),
  purpose                                         text        NOT NULL CHECK (purpose IN ('metering_eligibility_basis')),
  validated_availability_ref                      text        NOT NULL REFERENCES gateway.availability_snapshots,
  result_state                                    text        NOT NULL CHECK (result_state IN ('current', 'not_current')),
  receipt_body                                    text        NOT NULL,
  validated_at                                    timestamptz NOT NULL
);

CREATE TRIGGER /* guard GW001.receipts-immutable */ availability_validation_receipts_immutable BEFORE UPDATE OR DELETE ON gateway.availability_validation_receipts
  FOR EACH ROW EXECUTE FUNCTION gateway.reject_change();

GRANT SELECT, INSERT ON gateway.availability_validation_receipts TO oceanway_gateway;

-- +goose Down
-- forward-only
