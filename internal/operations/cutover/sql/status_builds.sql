-- name: StatusBuilds
-- Every shadow build with its candidate and proof (status, admin).
SELECT b.projection_version, b.state, b.claim_owner, b.candidate_id::text AS candidate_id,
       b.readiness_proof_digest, b.created_at, b.updated_at,
       c.member_count AS candidate_members, c.frozen_at AS candidate_frozen_at,
       p.proved_at, p.proof_body
  FROM operations.shadow_builds b
  LEFT JOIN operations.cutover_candidates c ON c.candidate_id = b.candidate_id
  LEFT JOIN operations.readiness_proofs p ON p.proof_digest = b.readiness_proof_digest
 WHERE b.projection_name = @projection_name
 ORDER BY b.projection_version
