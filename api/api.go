// Package api holds the platform API's document, api/openapi.yaml (OpenAPI
// 3.1), the one source the server's types and interface
// (internal/api/apigen) and the clients are generated from, and that the
// server validates every request against and serves at /openapi.json.
package api

import _ "embed"

// Document is the OpenAPI document, as written.
//
//go:embed openapi.yaml
var Document []byte
