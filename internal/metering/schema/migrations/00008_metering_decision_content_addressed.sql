-- EligibilityDecision is content addressed (review finding 9; ADR-031: the
-- snapshot fixes the Current Eligibility Decision and its rule version).
-- Before, every Work generation wrote a new decision with a random ref and
-- its operation id in the digest, so one attempt's unchanged decision had
-- as many addresses as generations. Its digest now covers only what it
-- decides (attempt, eligibility fact, disposition, decision, rule, reason);
-- the worker inserts or finds it by that digest, so it is stored once.

-- +goose Up
-- +goose StatementBegin
CREATE UNIQUE INDEX eligibility_decisions_digest ON metering.eligibility_decisions (decision_digest);
-- +goose StatementEnd
