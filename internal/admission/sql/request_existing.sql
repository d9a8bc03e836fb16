-- name: RequestExisting
-- The stored request of an admission operation id.
-- $1 admission operation id.
SELECT request_digest_algorithm_version, request_digest, run_id::text
  FROM admission.admission_requests
 WHERE admission_operation_id = $1
