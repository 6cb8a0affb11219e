package api

import (
	_ "embed"
	"net/http"
)

// openAPIDocument is the OpenAPI 3.1 description of the REST API, served
// as written at GET /v1/openapi.json. The API's tests validate every
// request and response they make against it (contract_test.go), and
// cross-check its error codes against core.InfoFor (openapi_test.go).
//
//go:embed openapi.json
var openAPIDocument []byte

// openAPI answers GET /v1/openapi.json: the document, to anyone. It names
// no organisation's data, and tools that generate clients fetch it without
// a key, so it needs none and spends no key's rate; browsers are refused
// as on every /v1 route.
func openAPI(w http.ResponseWriter, r *http.Request) {
	writeRawJSON(w, http.StatusOK, openAPIDocument)
}
