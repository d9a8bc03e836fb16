-- Admission's facts never change, for any role, the superuser included
-- (issue 30): runs and reservations join the requests and manifests in
-- refusing UPDATE and DELETE, and every admission table refuses TRUNCATE
-- (a statement trigger; row triggers do not see TRUNCATE). AD001 as before.
-- What a superuser can still switch off, and how it is detected, is in
-- docs/integrity.md.

-- +goose Up
-- +goose StatementBegin
CREATE TRIGGER /* guard AD001.runs-immutable */ runs_immutable BEFORE UPDATE OR DELETE ON admission.runs
  FOR EACH ROW EXECUTE FUNCTION admission.reject_change();
CREATE TRIGGER /* guard AD001.reservations-immutable */ reservations_immutable BEFORE UPDATE OR DELETE ON admission.reservations
  FOR EACH ROW EXECUTE FUNCTION admission.reject_change();

CREATE TRIGGER /* guard AD001.requests-no-truncate */ admission_requests_no_truncate BEFORE TRUNCATE ON admission.admission_requests
  FOR EACH STATEMENT EXECUTE FUNCTION admission.reject_change();
CREATE TRIGGER /* guard AD001.manifests-no-truncate */ run_admission_manifests_no_truncate BEFORE TRUNCATE ON admission.run_admission_manifests
  FOR EACH STATEMENT EXECUTE FUNCTION admission.reject_change();
CREATE TRIGGER /* guard AD001.runs-no-truncate */ runs_no_truncate BEFORE TRUNCATE ON admission.runs
  FOR EACH STATEMENT EXECUTE FUNCTION admission.reject_change();
CREATE TRIGGER /* guard AD001.reservations-no-truncate */ reservations_no_truncate BEFORE TRUNCATE ON admission.reservations
  FOR EACH STATEMENT EXECUTE FUNCTION admission.reject_change();
-- +goose StatementEnd
