package readmodel

// CompletenessInputsStatement is the proof's input statement, for the plan test.
var CompletenessInputsStatement = qCompletenessInputs
