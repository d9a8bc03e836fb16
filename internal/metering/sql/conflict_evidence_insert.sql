-- name: ConflictEvidenceInsert
-- Content-addressed processing conflict evidence: the same conflict of the
-- same Work is one row, whichever attempt saw it.
WITH ins AS (
  INSERT INTO metering.processing_conflict_evidence (evidence_ref, evidence_digest, work_ref, evidence_kind, evidence_body)
  VALUES (@ref, @digest, @work_ref, @kind, @body)
  ON CONFLICT (work_ref, evidence_digest) DO NOTHING
  RETURNING evidence_ref, evidence_body
)
SELECT evidence_ref, evidence_body FROM ins
UNION ALL
SELECT evidence_ref, evidence_body FROM metering.processing_conflict_evidence WHERE work_ref = @work_ref AND evidence_digest = @digest
LIMIT 1;
