-- name: RequestClaim :one
-- Claims the admission operation id (idempotency). A concurrent claim of the
-- same id waits for this transaction and then finds the row; no row means
-- the id was claimed before.
INSERT INTO admission.admission_requests (admission_operation_id, request_digest_algorithm_version, request_digest,
    request_body, run_id, created_at)
VALUES (@admission_operation_id, @request_digest_algorithm_version, @request_digest, @request_body, @run_id,
    transaction_timestamp())
ON CONFLICT (admission_operation_id) DO NOTHING
RETURNING created_at;

-- name: RequestExisting :one
-- The stored request of an admission operation id.
SELECT request_digest_algorithm_version, request_digest, run_id
  FROM admission.admission_requests
 WHERE admission_operation_id = @admission_operation_id;
