-- name: DecisionDigest
SELECT decision_digest FROM billing.finalization_decisions WHERE decision_ref = @ref;
