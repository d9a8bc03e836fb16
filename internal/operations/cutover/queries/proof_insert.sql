-- name: ProofInsert :exec
-- The immutable readiness proof; operations.readiness_proof_check() re-proves
-- it in the database before the row exists.
INSERT INTO operations.readiness_proofs (proof_digest, proof_digest_algorithm_version, projection_name,
    projection_version, candidate_id, member_count, proof_body, proved_at)
VALUES (@proof_digest, @proof_digest_algorithm_version, @projection_name, @projection_version,
    @candidate_id, @member_count, @proof_body, now());
