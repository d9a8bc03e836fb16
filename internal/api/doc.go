// Package api is the platform's HTTP API (issue 33), spec first: the
// document is api/openapi.yaml, the server's types and strict interface are
// generated from it into internal/api/apigen (oapi-codegen, `make
// generate`), and this package puts the conventions around the generated
// handler, in this order, before any owner code runs:
//
//  1. the request is matched to its operation and validated against the
//     document (parameters, formats, required fields, additionalProperties:
//     false — an unknown field is a 400 and nothing is written);
//  2. the caller's workload token is verified for the operation's own scope
//     (api:<operationId>, audience core_api);
//  3. a mutating operation runs under its Idempotency-Key: one transaction on
//     the owner's database holds a transaction-scoped advisory lock on the
//     key (a concurrent retry gets 409), finds a stored first response
//     (replayed byte for byte; another body is 422) or runs the operation in
//     that same transaction and stores its response before committing.
//
// Every error is an RFC 9457 application/problem+json whose type is a stable
// URI per code (Problem*). GET /openapi.json serves the document and /docs
// renders it for a person.
package api
