-- Admission's facts never change, for any role, the superuser included
-- (issue 30): runs and reservations join the requests and manifests in
-- refusing UPDATE and DELETE, and every admission table refuses TRUNCATE
-- (a statement trigger; row triggers do not see TRUNCATE). AD001 as before.
-- What a superuser can still switch off, and how it is detected, is in
-- docs/integrity.md.

-- +goose Up
-- +goose StatementBegin
CREATE TRIGGER runs_immutable BEFORE UPDATE OR DELETE ON admission.runs
  FOR EACH ROW EXECUTE FUNCTION admission.reject_change();
CREATE TRIGGER reservations_immutable BEFORE UPDATE OR DELETE ON admission.reservations
  FOR EACH ROW EXECUTE FUNCTION admission.reject_change();

CREATE TRIGGER admission_requests_no_truncate BEFORE TRUNCATE ON admission.admission_requests
  FOR EACH STATEMENT EXECUTE FUNCTION admission.reject_change();
CREATE TRIGGER run_admission_manifests_no_truncate BEFORE TRUNCATE ON admission.run_admission_manifests
  FOR EACH STATEMENT EXECUTE FUNCTION admission.reject_change();
CREATE TRIGGER runs_no_truncate BEFORE TRUNCATE ON admission.runs
  FOR EACH STATEMENT EXECUTE FUNCTION admission.reject_change();
CREATE TRIGGER reservations_no_truncate BEFORE TRUNCATE ON admission.reservations
  FOR EACH STATEMENT EXECUTE FUNCTION admission.reject_change();
-- +goose StatementEnd
