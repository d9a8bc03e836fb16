-- name: LaneLatest
-- The lane's latest Work generation, read under the input fence lock.
SELECT CASE WHEN @lane_kind::text = 'eligibility_and_settlement_input'
            THEN (SELECT latest_eligibility_work_generation FROM metering.input_fences WHERE execution_attempt_id = @attempt_id)
            ELSE (SELECT latest_work_generation FROM metering.cost_lanes
                  WHERE execution_attempt_id = @attempt_id AND gateway_deployment_id = @deployment_id
                    AND source_evidence_dimension_key = @dimension_key) END AS latest;
