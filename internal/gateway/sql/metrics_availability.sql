-- Provider evidence chains whose Current availability is not `available`,
-- by evidence kind and state, with the oldest (partial index
-- availability_snapshots_not_available, then the Current pointer by key).
SELECT c.provider_evidence_kind, s.availability_state, count(*)::float8,
       COALESCE(EXTRACT(EPOCH FROM now() - min(s.recorded_at)), 0)::float8
  FROM gateway.availability_snapshots s
  JOIN gateway.availability_currents c
    ON c.chain_id = s.chain_id AND c.current_state_version = s.state_version
 WHERE s.availability_state <> 'available'
 GROUP BY 1, 2;
