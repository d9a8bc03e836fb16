-- name: RequestClaim
-- Claims the admission operation id (idempotency). A concurrent claim of the
-- same id waits for this transaction and then finds the row.
-- $1 admission operation id, $2 request digest algorithm, $3 request digest,
-- $4 canonical request, $5 run id.
INSERT INTO admission.admission_requests (admission_operation_id, request_digest_algorithm_version, request_digest,
    request_body, run_id, created_at)
VALUES ($1, $2, $3, $4, $5, transaction_timestamp())
ON CONFLICT (admission_operation_id) DO NOTHING
RETURNING created_at
