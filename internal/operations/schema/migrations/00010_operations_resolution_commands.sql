-- The Operations side of the Finalization reconciliation resolution command
-- chain (issue 31, ADR-031): FinalizationReconciliationResolutionCommandRequest@1
-- with its AdminCommandImpactPreview@1, AdminCommandApproval@1 (by a second
-- principal), AdminCommandJitActivation@1, AdminCommandCandidate@1 and the
-- Operations-owned FinalizationReconciliationResolutionDecision@1 — each the
-- canonical body of its contract, insert-only (OP001). Operations only
-- orchestrates and authorizes; it never closes a case itself (the Billing
-- resolution fact does, through the projector).
--
-- Custom SQLSTATE: OP007 an approval by the requester.

-- +goose Up
-- +goose StatementBegin
CREATE TABLE operations.resolution_command_requests (
  command_request_operation_id  uuid        NOT NULL PRIMARY KEY,
  request_ref                   text        NOT NULL UNIQUE,
  request_digest                text        NOT NULL CHECK (request_digest ~ '^[0-9a-f]{64}$'),
  reconciliation_case_ref       text        NOT NULL,
  reconciliation_generation     bigint      NOT NULL CHECK (reconciliation_generation >= 1),
  requester_workforce_principal_id text     NOT NULL,
  request_body                  text        NOT NULL,
  preview_ref                   text        NOT NULL UNIQUE,
  preview_digest                text        NOT NULL CHECK (preview_digest ~ '^[0-9a-f]{64}$'),
  preview_body                  text        NOT NULL,
  requested_at                  timestamptz NOT NULL
);
CREATE INDEX resolution_command_requests_case ON operations.resolution_command_requests (reconciliation_case_ref);

CREATE TABLE operations.resolution_command_approvals (
  request_ref                   text        NOT NULL PRIMARY KEY REFERENCES operations.resolution_command_requests (request_ref),
  approval_ref                  text        NOT NULL UNIQUE,
  approval_digest               text        NOT NULL CHECK (approval_digest ~ '^[0-9a-f]{64}$'),
  approver_workforce_principal_id text      NOT NULL,
  approval_body                 text        NOT NULL,
  approved_at                   timestamptz NOT NULL
);

-- One decision per case generation: the one resolution Billing can apply.
CREATE TABLE operations.resolution_decisions (
  request_ref                   text        NOT NULL PRIMARY KEY REFERENCES operations.resolution_command_approvals (request_ref),
  reconciliation_case_ref       text        NOT NULL UNIQUE,
  reconciliation_generation     bigint      NOT NULL,
  actor_workforce_principal_id  text        NOT NULL,
  jit_ref                       text        NOT NULL UNIQUE,
  jit_digest                    text        NOT NULL CHECK (jit_digest ~ '^[0-9a-f]{64}$'),
  jit_body                      text        NOT NULL,
  candidate_ref                 text        NOT NULL UNIQUE,
  candidate_digest              text        NOT NULL CHECK (candidate_digest ~ '^[0-9a-f]{64}$'),
  candidate_body                text        NOT NULL,
  decision_ref                  text        NOT NULL UNIQUE,
  decision_digest               text        NOT NULL CHECK (decision_digest ~ '^[0-9a-f]{64}$'),
  decision_body                 text        NOT NULL,
  decided_at                    timestamptz NOT NULL
);

-- The approver is a second principal: PostgreSQL refuses the requester.
CREATE FUNCTION operations.guard_resolution_approval() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $fn$
BEGIN
  IF /* guard OP007.self-approval */ EXISTS (SELECT 1 FROM operations.resolution_command_requests r
      WHERE r.request_ref = NEW.request_ref AND r.requester_workforce_principal_id = NEW.approver_workforce_principal_id) THEN
    RAISE EXCEPTION 'operations: % cannot approve their own request %', NEW.approver_workforce_principal_id, NEW.request_ref
      USING ERRCODE = 'OP007';
  END IF;
  RETURN NEW;
END
$fn$;
CREATE TRIGGER resolution_command_approvals_second_principal BEFORE INSERT ON operations.resolution_command_approvals
  FOR EACH ROW EXECUTE FUNCTION operations.guard_resolution_approval();

CREATE TRIGGER /* guard OP001.command-requests-insert-only */ resolution_command_requests_insert_only
  BEFORE UPDATE OR DELETE ON operations.resolution_command_requests FOR EACH ROW EXECUTE FUNCTION operations.reject_change();
CREATE TRIGGER /* guard OP001.command-approvals-insert-only */ resolution_command_approvals_insert_only
  BEFORE UPDATE OR DELETE ON operations.resolution_command_approvals FOR EACH ROW EXECUTE FUNCTION operations.reject_change();
CREATE TRIGGER /* guard OP001.resolution-decisions-insert-only */ resolution_decisions_insert_only
  BEFORE UPDATE OR DELETE ON operations.resolution_decisions FOR EACH ROW EXECUTE FUNCTION operations.reject_change();

GRANT SELECT, INSERT ON operations.resolution_command_requests, operations.resolution_command_approvals,
  operations.resolution_decisions TO oceanway_operations;
GRANT EXECUTE ON FUNCTION operations.guard_resolution_approval() TO oceanway_operations;
-- +goose StatementEnd

-- +goose Down
-- +goose StatementBegin
DROP TABLE operations.resolution_decisions, operations.resolution_command_approvals, operations.resolution_command_requests;
DROP FUNCTION operations.guard_resolution_approval();
-- +goose StatementEnd
