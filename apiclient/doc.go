// Package apiclient is the Go client of OceanWay Core's platform API,
// generated from api/openapi.yaml (oapi-codegen; `make generate`): one
// method per operationId (AdmitRun, GetRun, GetReservation) and
// ...WithResponse variants that decode the documented answers, problems
// included. A caller adds its workload token per request with a
// RequestEditorFn (Bearer) and an Idempotency-Key on every mutating call.
package apiclient
