-- The Operations side of the late settlement command chain (issue 32 part 2,
-- ADR-031 "终局后变化采用追加式 Transition"): LateSettlementCommandRequest@1
-- with its LateSettlementCommandImpactPreview@1, LateSettlementCommandApproval@1
-- (by a second principal), LateSettlementCommandJitActivation@1 (role
-- billing_late_settlement_operator), LateSettlementCommandCandidate@1 and the
-- Operations-owned LateSettlementCommandDecision@1 — each the canonical body
-- of its contract, insert-only (OP001). The finalization chain's tables
-- (00010) hold none of them: the two chains never satisfy each other.
-- Operations never closes a late case here: Billing's
-- BillingCaseResolutionApplied@1 does, through the projector.
--
-- Custom SQLSTATE: OP007 an approval by the requester.

-- +goose Up
-- +goose StatementBegin
CREATE TABLE operations.late_command_requests (
  command_request_operation_id  uuid        NOT NULL PRIMARY KEY,
  request_ref                   text        NOT NULL UNIQUE,
  request_digest                text        NOT NULL CHECK (request_digest ~ '^[0-9a-f]{64}$'),
  reconciliation_case_ref       text        NOT NULL,
  case_generation               bigint      NOT NULL CHECK (case_generation >= 1),
  late_settlement_exposure_id   uuid        NOT NULL,
  requester_workforce_principal_id text     NOT NULL,
  request_body                  text        NOT NULL,
  preview_ref                   text        NOT NULL UNIQUE,
  preview_digest                text        NOT NULL CHECK (preview_digest ~ '^[0-9a-f]{64}$'),
  preview_body                  text        NOT NULL,
  requested_at                  timestamptz NOT NULL
);
CREATE INDEX late_command_requests_case ON operations.late_command_requests (reconciliation_case_ref);

CREATE TABLE operations.late_command_approvals (
  request_ref                   text        NOT NULL PRIMARY KEY REFERENCES operations.late_command_requests (request_ref),
  approval_ref                  text        NOT NULL UNIQUE,
  approval_digest               text        NOT NULL CHECK (approval_digest ~ '^[0-9a-f]{64}$'),
  approver_workforce_principal_id text      NOT NULL,
  approval_body                 text        NOT NULL,
  approved_at                   timestamptz NOT NULL
);

-- One decision per late case generation (the case ref derives from the
-- dimension and the generation): the one command Billing can apply.
CREATE TABLE operations.late_command_decisions (
  request_ref                   text        NOT NULL PRIMARY KEY REFERENCES operations.late_command_approvals (request_ref),
  reconciliation_case_ref       text        NOT NULL UNIQUE,
  case_generation               bigint      NOT NULL,
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
CREATE FUNCTION operations.guard_late_command_approval() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $fn$
BEGIN
  IF /* guard OP007.late-self-approval */ EXISTS (SELECT 1 FROM operations.late_command_requests r
      WHERE r.request_ref = NEW.request_ref AND r.requester_workforce_principal_id = NEW.approver_workforce_principal_id) THEN
    RAISE EXCEPTION 'operations: % cannot approve their own late settlement command %', NEW.approver_workforce_principal_id, NEW.request_ref
      USING ERRCODE = 'OP007';
  END IF;
  RETURN NEW;
END
$fn$;
CREATE TRIGGER late_command_approvals_second_principal BEFORE INSERT ON operations.late_command_approvals
  FOR EACH ROW EXECUTE FUNCTION operations.guard_late_command_approval();

CREATE TRIGGER /* guard OP001.late-command-requests-insert-only */ late_command_requests_insert_only
  BEFORE UPDATE OR DELETE ON operations.late_command_requests FOR EACH ROW EXECUTE FUNCTION operations.reject_change();
CREATE TRIGGER /* guard OP001.late-command-approvals-insert-only */ late_command_approvals_insert_only
  BEFORE UPDATE OR DELETE ON operations.late_command_approvals FOR EACH ROW EXECUTE FUNCTION operations.reject_change();
CREATE TRIGGER /* guard OP001.late-command-decisions-insert-only */ late_command_decisions_insert_only
  BEFORE UPDATE OR DELETE ON operations.late_command_decisions FOR EACH ROW EXECUTE FUNCTION operations.reject_change();

REVOKE ALL ON operations.late_command_requests, operations.late_command_approvals, operations.late_command_decisions FROM PUBLIC;
GRANT SELECT, INSERT ON operations.late_command_requests, operations.late_command_approvals,
  operations.late_command_decisions TO oceanway_operations;
GRANT EXECUTE ON FUNCTION operations.guard_late_command_approval() TO oceanway_operations;
-- +goose StatementEnd

-- +goose Down
-- +goose StatementBegin
DROP TABLE operations.late_command_decisions, operations.late_command_approvals, operations.late_command_requests;
DROP FUNCTION operations.guard_late_command_approval();
-- +goose StatementEnd
