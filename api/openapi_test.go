package api_test

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"
	valerrors "github.com/pb33f/libopenapi-validator/errors"
	"github.com/pb33f/libopenapi/datamodel"
	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/api"
	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/core/modes"
)

// openAPIPath is the document, relative to this package.
const openAPIPath = "openapi.json"

// newDocument reads the document with libopenapi, its log dropped:
// TestOpenAPIReferencesResolve checks every reference itself.
func newDocument(spec []byte) (libopenapi.Document, error) {
	cfg := datamodel.NewDocumentConfiguration()
	cfg.Logger = slog.New(slog.DiscardHandler)
	return libopenapi.NewDocumentWithConfiguration(spec, cfg)
}

// Every $ref of the document resolves from the document's root, as
// OpenAPI tools read it: no schema in it opens a resource of its own ($id)
// whose references would resolve elsewhere.
func TestOpenAPIReferencesResolve(t *testing.T) {
	t.Parallel()
	doc := openAPIJSON(t)
	var refs int
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			require.NotContains(t, v, "$id", "a schema with $id resolves its references against itself")
			if _, ok := v["$ref"].(string); ok {
				resolve(t, doc, v)
				refs++
			}
			for _, x := range v {
				walk(x)
			}
		case []any:
			for _, x := range v {
				walk(x)
			}
		}
	}
	walk(doc)
	require.Greater(t, refs, 100, "walked the document's references")
}

// openAPIJSON is the document as plain JSON, for the tests that read its
// structure rather than validate against it.
func openAPIJSON(t *testing.T) map[string]any {
	t.Helper()
	b, err := os.ReadFile(openAPIPath)
	require.NoError(t, err)
	var doc map[string]any
	require.NoError(t, json.Unmarshal(b, &doc))
	return doc
}

// resolve follows a local $ref ("#/components/…") in doc until it reaches
// a value that is not one.
func resolve(t *testing.T, doc map[string]any, v map[string]any) map[string]any {
	t.Helper()
	for range 10 {
		ref, ok := v["$ref"].(string)
		if !ok {
			return v
		}
		require.True(t, strings.HasPrefix(ref, "#/"), "only local references: %s", ref)
		var cur any = doc
		for _, part := range strings.Split(strings.TrimPrefix(ref, "#/"), "/") {
			m, ok := cur.(map[string]any)
			require.True(t, ok, "%s does not resolve", ref)
			cur, ok = m[strings.ReplaceAll(strings.ReplaceAll(part, "~1", "/"), "~0", "~")]
			require.True(t, ok, "%s does not resolve", ref)
		}
		v, ok = cur.(map[string]any)
		require.True(t, ok, "%s is not an object", ref)
	}
	t.Fatalf("a $ref chain too long: %v", v)
	return nil
}

// operationResponse is one documented answer: an operation's response for
// one status.
type operationResponse struct {
	where    string // "GET /v1/models 429"
	status   int
	response map[string]any // resolved
}

func operationResponses(t *testing.T, doc map[string]any) []operationResponse {
	t.Helper()
	var out []operationResponse
	for path, item := range doc["paths"].(map[string]any) {
		for method, op := range item.(map[string]any) {
			for code, res := range op.(map[string]any)["responses"].(map[string]any) {
				status, err := strconv.Atoi(code)
				require.NoError(t, err, "%s %s: responses are listed by status, not by range or default", method, path)
				out = append(out, operationResponse{
					where:  fmt.Sprintf("%s %s %d", strings.ToUpper(method), path, status),
					status: status, response: resolve(t, doc, res.(map[string]any)),
				})
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].where < out[j].where })
	return out
}

// jsonSchemaOf is the application/json schema of a response, resolved.
func jsonSchemaOf(t *testing.T, doc map[string]any, r operationResponse) map[string]any {
	t.Helper()
	content, ok := r.response["content"].(map[string]any)
	require.True(t, ok, "%s: no content", r.where)
	media, ok := content["application/json"].(map[string]any)
	require.True(t, ok, "%s: no application/json content", r.where)
	require.Len(t, content, 1, "%s: every answer is JSON", r.where)
	return resolve(t, doc, media["schema"].(map[string]any))
}

// errorNarrowing is the code and type enums an error response narrows the
// envelope to: the allOf member that constrains error.code and error.type.
func errorNarrowing(t *testing.T, doc map[string]any, schema map[string]any) (codes, types []string) {
	t.Helper()
	for _, m := range sliceOf(schema["allOf"]) {
		errProps := mapOf(mapOf(mapOf(resolve(t, doc, m.(map[string]any))["properties"])["error"])["properties"])
		for _, c := range sliceOf(mapOf(errProps["code"])["enum"]) {
			codes = append(codes, c.(string))
		}
		for _, ty := range sliceOf(mapOf(errProps["type"])["enum"]) {
			types = append(types, ty.(string))
		}
	}
	return codes, types
}

// The document's error codes are the code table's: every error response
// names the codes it can carry, each is a code core knows, answered with
// that response's status (core.InfoFor, the one table), and the response's
// error types are exactly those codes' types. A 429 declares Retry-After.
// The codes of an unrouted answer are codes core knows.
func TestOpenAPIErrorCodesAreTheCodeTables(t *testing.T) {
	t.Parallel()
	doc := openAPIJSON(t)
	var checked int
	for _, r := range operationResponses(t, doc) {
		if r.status < 400 {
			continue
		}
		codes, types := errorNarrowing(t, doc, jsonSchemaOf(t, doc, r))
		require.NotEmpty(t, codes, "%s: the response does not name its codes", r.where)
		var want []string
		for _, c := range codes {
			require.True(t, core.KnownCode(core.Code(c)), "%s: %q is not a code of core", r.where, c)
			info := core.InfoFor(core.Code(c))
			require.Equal(t, info.Status, r.status, "%s: %s is answered with HTTP %d (core.InfoFor)", r.where, c, info.Status)
			if !slices.Contains(want, string(info.Type)) {
				want = append(want, string(info.Type))
			}
			checked++
		}
		require.ElementsMatch(t, want, types, "%s: error.type", r.where)
		if r.status == 429 {
			headers, _ := r.response["headers"].(map[string]any)
			retry, ok := headers["Retry-After"].(map[string]any)
			require.True(t, ok, "%s: no Retry-After", r.where)
			require.Equal(t, true, resolve(t, doc, retry)["required"], "%s: Retry-After is always sent", r.where)
		}
	}
	require.Greater(t, checked, 50, "read the error responses")

	unrouted := resolve(t, doc, map[string]any{"$ref": "#/components/schemas/UnroutedError"})
	codes, _ := errorNarrowing(t, doc, unrouted)
	require.Contains(t, codes, string(core.CodeUnknownURL))
	require.Contains(t, codes, string(core.CodeMethodNotAllowed))
	for _, c := range codes {
		require.True(t, core.KnownCode(core.Code(c)), "UnroutedError: %q is not a code of core", c)
	}
}

// Every object a response can hold is closed — additionalProperties or
// unevaluatedProperties false, or a map whose values have a schema — so a
// field added to a response without the document fails validation. A
// schema used only through allOf by a closed schema (CompletionHead,
// EngineCall) is closed by it. Only the document's own description of
// itself (GET /v1/openapi.json) is open.
func TestOpenAPIResponseObjectsAreClosed(t *testing.T) {
	t.Parallel()
	doc := openAPIJSON(t)
	var objects int
	// root is the schema resource references are read from: the document,
	// or the nearest schema with $id around s.
	var walk func(s map[string]any, where string, closedByParent bool, seen map[string]bool, root map[string]any)
	walk = func(s map[string]any, where string, closedByParent bool, seen map[string]bool, root map[string]any) {
		if ref, ok := s["$ref"].(string); ok {
			key := fmt.Sprintf("%s %v", ref, closedByParent)
			if seen[key] {
				return
			}
			seen[key] = true
			where = ref
		}
		s = resolve(t, root, s)
		if _, ok := s["$id"]; ok {
			root = s
		}
		isObject := s["type"] == "object"
		if types, ok := s["type"].([]any); ok {
			isObject = slices.Contains(types, any("object"))
		}
		_, isMap := s["additionalProperties"].(map[string]any)
		closed := s["additionalProperties"] == false || s["unevaluatedProperties"] == false
		if isObject {
			objects++
			require.True(t, closed || isMap || closedByParent, "%s: an object in a response is not closed", where)
		}
		for name, p := range mapOf(s["properties"]) {
			walk(p.(map[string]any), where+"."+name, false, seen, root)
		}
		if items, ok := s["items"].(map[string]any); ok {
			walk(items, where+"[]", false, seen, root)
		}
		if isMap {
			walk(s["additionalProperties"].(map[string]any), where+".*", false, seen, root)
		}
		for _, k := range []string{"oneOf", "anyOf"} {
			for i, m := range sliceOf(s[k]) {
				walk(m.(map[string]any), fmt.Sprintf("%s.%s[%d]", where, k, i), false, seen, root)
			}
		}
		for i, m := range sliceOf(s["allOf"]) {
			walk(m.(map[string]any), fmt.Sprintf("%s.allOf[%d]", where, i), closed || closedByParent, seen, root)
		}
	}
	seen := map[string]bool{}
	for _, r := range operationResponses(t, doc) {
		if r.where == "GET /v1/openapi.json 200" {
			continue
		}
		walk(jsonSchemaOf(t, doc, r), r.where, false, seen, doc)
	}
	require.Greater(t, objects, 20, "walked the response schemas")
}

func mapOf(v any) map[string]any { m, _ := v.(map[string]any); return m }
func sliceOf(v any) []any        { s, _ := v.([]any); return s }

// The document is a valid OpenAPI 3.1 document of version 1.0.0, whose
// every operation lists its answers.
func TestOpenAPIDocumentIsValid(t *testing.T) {
	t.Parallel()
	spec, err := os.ReadFile(openAPIPath)
	require.NoError(t, err)
	doc, err := newDocument(spec)
	require.NoError(t, err)
	v, errs := validator.NewValidator(doc)
	require.Empty(t, errs)
	ok, verrs := v.ValidateDocument()
	for _, e := range verrs {
		t.Error(describe(e))
	}
	require.True(t, ok)

	raw := openAPIJSON(t)
	require.Equal(t, "3.1.0", raw["openapi"])
	require.Equal(t, "1.0.0", raw["info"].(map[string]any)["version"], "the machine description's version (NAMING.md)")
	var ops []string
	for path, item := range raw["paths"].(map[string]any) {
		require.True(t, strings.HasPrefix(path, "/v1/"), "%s: every path of the API is under /v1", path)
		for method := range item.(map[string]any) {
			ops = append(ops, strings.ToUpper(method)+" "+path)
		}
	}
	require.ElementsMatch(t, []string{
		"POST /v1/chat/completions", "POST /v1/estimate", "GET /v1/models", "GET /v1/models/{model}",
		"GET /v1/receipts/{request_id}", "GET /v1/receipts", "GET /v1/openapi.json",
		"POST /v1/modes/validate", "GET /v1/modes", "POST /v1/modes", "GET /v1/modes/{mode}",
		"POST /v1/modes/{mode}/release", "POST /v1/modes/{mode}/listing",
		"PUT /v1/modes/{mode}/lab_invites/{org}", "DELETE /v1/modes/{mode}/lab_invites/{org}",
		"POST /v1/tests", "GET /v1/tests", "DELETE /v1/tests", "POST /v1/certify", "GET /v1/certify", "DELETE /v1/certify",
	}, ops)
}

// The document's ModeSpec is the mode spec's JSON Schema
// (core/modes/spec.schema.json), so the spec an author writes is described
// once: as it is, but for its $defs, which are lifted into the document's
// components as ModeSpec<Name> (ModeSpecTier, ModeSpecSeat, …) with every
// reference to them pointed there. Inside an OpenAPI document "#/$defs/…"
// reads from the document's root, where tools that generate clients find
// nothing; and the schema's $id and $schema go with them (the document
// states its dialect once).
func TestOpenAPIModeSpecIsTheSpecSchema(t *testing.T) {
	t.Parallel()
	schemas := mapOf(mapOf(openAPIJSON(t)["components"])["schemas"])
	var want map[string]any
	require.NoError(t, json.Unmarshal(modes.Schema, &want))
	defs := mapOf(want["$defs"])
	require.NotEmpty(t, defs)
	delete(want, "$defs")
	delete(want, "$schema")
	delete(want, "$id")
	lifted := func(name string) string { return "ModeSpec" + strings.ToUpper(name[:1]) + name[1:] }
	var lift func(v any) any
	lift = func(v any) any {
		switch v := v.(type) {
		case map[string]any:
			out := map[string]any{}
			for k, x := range v {
				if ref, ok := x.(string); ok && k == "$ref" && strings.HasPrefix(ref, "#/$defs/") {
					x = "#/components/schemas/" + lifted(strings.TrimPrefix(ref, "#/$defs/"))
				}
				out[k] = lift(x)
			}
			return out
		case []any:
			out := make([]any, len(v))
			for i, x := range v {
				out[i] = lift(x)
			}
			return out
		}
		return v
	}
	require.Equal(t, lift(want), schemas["ModeSpec"])
	for name, def := range defs {
		require.Equal(t, lift(def), schemas[lifted(name)], "components.schemas.%s is $defs.%s", lifted(name), name)
	}
}

// GET /v1/openapi.json serves the document as it is in the repository, to
// anyone: without a key, and whatever Authorization header comes with it.
// Browsers are refused as on every /v1 route; another method is refused
// like any unknown request, key first.
func TestOpenAPIIsServedWithoutAKey(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	file, err := os.ReadFile(openAPIPath)
	require.NoError(t, err)
	for _, auth := range []string{"", "Bearer not-a-key", "Bearer " + tb.key} {
		var r *response
		if auth == "" {
			r = tb.do(t, "GET", "/v1/openapi.json", "", "")
		} else {
			r = tb.do(t, "GET", "/v1/openapi.json", "", "", "Authorization", auth)
		}
		require.Equal(t, 200, r.status, r.raw)
		require.Equal(t, string(file), r.raw, "the document as committed")
		require.Equal(t, "application/json", r.header.Get("Content-Type"))
		require.True(t, strings.HasPrefix(r.header.Get(api.RequestIDHeader), "req_"))
	}
	requireError(t, tb.do(t, "GET", "/v1/openapi.json", "", "", "Origin", "https://example.com"),
		403, core.CodeBrowserOriginNotAllowed, "permission_error")
	requireError(t, tb.do(t, "POST", "/v1/openapi.json", "", "{}"), 401, core.CodeInvalidAPIKey, "authentication_error")
	r := tb.do(t, "POST", "/v1/openapi.json", tb.key, "{}")
	requireError(t, r, 405, core.CodeMethodNotAllowed, "invalid_request_error")
	require.Equal(t, []string{"GET"}, r.header.Values("Allow"))
	// Unknown paths under /v1 still ask for the key first.
	requireError(t, tb.do(t, "GET", "/v1/openapi.yaml", "", ""), 401, core.CodeInvalidAPIKey, "authentication_error")
}

// describe writes a validation error on one line, with each schema failure
// and where in the body it is.
func describe(e *valerrors.ValidationError) string {
	var b strings.Builder
	b.WriteString(e.Message)
	if e.Reason != "" && e.Reason != e.Message {
		b.WriteString(": " + e.Reason)
	}
	for _, f := range e.SchemaValidationErrors {
		fmt.Fprintf(&b, "; %s", f.Reason)
		if f.FieldPath != "" {
			fmt.Fprintf(&b, " at %s", f.FieldPath)
		}
		if f.KeywordLocation != "" {
			fmt.Fprintf(&b, " (schema %s)", f.KeywordLocation)
		}
	}
	return b.String()
}
