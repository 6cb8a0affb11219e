package api_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"

	validator "github.com/pb33f/libopenapi-validator"
	"github.com/pb33f/libopenapi-validator/config"
	"github.com/pb33f/libopenapi-validator/helpers"
	"github.com/pb33f/libopenapi-validator/paths"
	"github.com/pb33f/libopenapi-validator/schema_validation"
	"github.com/pb33f/libopenapi/datamodel/high/base"
	v3 "github.com/pb33f/libopenapi/datamodel/high/v3"
	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/api"
	"github.com/conclavehq/conclave/core"
)

// The contract test: every request the API's tests send and every answer
// they get goes through checkContract (wired in parts.serve), which holds
// the exchange to the OpenAPI document, api/openapi.json, and reports each
// mismatch on the test that made it. So a field a handler adds to a
// response, a code an endpoint starts answering, a header or a route the
// document does not describe fails the suite until the document says it.

// probes are the public listener's paths outside the versioned API: the
// document does not describe them. Their successful answers go unchecked;
// their errors must still be the envelope.
var probes = map[string]bool{"/healthz": true, "/readyz": true}

// contract is the document, loaded once and shared by every test: building
// the model and compiling its schemas costs far more than a check.
type contract struct {
	model     *v3.Document
	validator validator.Validator
	// unrouted is UnroutedError: the answer to what the document does not
	// list.
	unrouted *base.Schema
	schemas  schema_validation.SchemaValidator
}

var loadContract = sync.OnceValues(func() (*contract, error) {
	spec, err := os.ReadFile(openAPIPath)
	if err != nil {
		return nil, err
	}
	doc, err := newDocument(spec)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", openAPIPath, err)
	}
	model, err := doc.BuildV3Model()
	if err != nil {
		return nil, fmt.Errorf("building the model of %s: %w", openAPIPath, err)
	}
	// The validator's strict mode is not used: it ignores allOf and maps.
	// The document closes its objects itself, and checkHeaders finds the
	// headers it does not declare.
	c := &contract{
		model:     &model.Model,
		validator: validator.NewValidatorFromV3Model(&model.Model, config.WithFormatAssertions()),
		schemas:   schema_validation.NewSchemaValidator(config.WithFormatAssertions()),
	}
	proxy, ok := model.Model.Components.Schemas.Get("UnroutedError")
	if !ok {
		return nil, fmt.Errorf("%s has no components.schemas.UnroutedError", openAPIPath)
	}
	c.unrouted = proxy.Schema()
	return c, nil
})

// checkContract returns h with every exchange it serves checked against
// the document; each mismatch is an error of t.
func checkContract(t testing.TB, h http.Handler) http.Handler {
	t.Helper()
	c, err := loadContract()
	require.NoError(t, err)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body := &capturedBody{ReadCloser: r.Body}
		if r.Body != nil && r.Body != http.NoBody {
			r.Body = body
		}
		rec := &capturedResponse{ResponseWriter: w}
		h.ServeHTTP(rec, r)
		ex := &exchange{
			method: r.Method, url: r.URL.RequestURI(), reqHeader: r.Header.Clone(),
			status: rec.status, header: rec.header, body: rec.body.Bytes(), callerLeft: r.Context().Err() != nil,
		}
		if ex.header == nil {
			ex.header = w.Header().Clone()
		}
		if 200 <= ex.status && ex.status < 300 && body.ReadCloser != nil {
			// The request is checked in full: read what the handler left.
			_, _ = io.Copy(io.Discard, body)
		}
		ex.reqBody = body.buf.Bytes()
		for _, p := range c.check(ex) {
			t.Errorf("api/openapi.json: %s", p)
		}
	})
}

// exchange is one request and the answer it got.
type exchange struct {
	method, url string
	reqHeader   http.Header
	reqBody     []byte
	// status is 0 when the handler wrote nothing.
	status     int
	header     http.Header
	body       []byte
	callerLeft bool // the request's context ended before the handler did
}

func (ex *exchange) String() string {
	return fmt.Sprintf("%s %s → %d", ex.method, ex.url, ex.status)
}

// check holds ex to the document and returns the mismatches.
//
// The answer is always checked. The request is checked only when it was
// answered 2xx: a request the service accepts must be one the document
// accepts, while tests send malformed and hostile requests on purpose to be
// refused, and the refusal — an error the document must list — is what is
// checked then.
func (c *contract) check(ex *exchange) []string {
	if ex.status == 0 {
		if ex.callerLeft {
			// The caller left before its answer (a deliberation outlives
			// it): nothing was sent to hold to the document.
			return nil
		}
		ex.status = http.StatusOK // what net/http sends for a handler that writes nothing
	}
	req, err := http.NewRequest(ex.method, "http://conclave.test"+ex.url, bytes.NewReader(ex.reqBody))
	if err != nil {
		return []string{fmt.Sprintf("%s: the request cannot be rebuilt: %v", ex, err)}
	}
	req.Header = ex.reqHeader
	res := &http.Response{StatusCode: ex.status, Header: ex.header, Body: io.NopCloser(bytes.NewReader(ex.body)), Request: req}

	var problems []string
	_, errs := c.validator.ValidateHttpResponse(req, res)
	for _, e := range errs {
		if e.IsPathMissingError() || e.IsOperationMissingError() {
			return c.checkUnrouted(ex)
		}
		problems = append(problems, fmt.Sprintf("%s: the response: %s", ex, describe(e)))
	}
	problems = append(problems, c.checkHeaders(ex, req)...)
	if 200 <= ex.status && ex.status < 300 {
		req.Body = io.NopCloser(bytes.NewReader(ex.reqBody))
		if _, errs := c.validator.ValidateHttpRequestSync(req); len(errs) > 0 {
			for _, e := range errs {
				problems = append(problems, fmt.Sprintf("%s: the request, which was accepted: %s", ex, describe(e)))
			}
		}
	}
	return problems
}

// transportHeaders are HTTP's own, which the document does not declare.
var transportHeaders = map[string]bool{"Content-Type": true, "Content-Length": true, "Date": true}

// checkHeaders reports the response headers the document does not declare
// for the operation and status ex was answered with. (The validator checks
// the declared ones.)
func (c *contract) checkHeaders(ex *exchange, req *http.Request) []string {
	item, _, _ := paths.FindPath(req, c.model, nil)
	if item == nil {
		return nil
	}
	op := helpers.ExtractOperation(req, item)
	if op == nil || op.Responses == nil {
		return nil
	}
	res := op.Responses.Codes.GetOrZero(strconv.Itoa(ex.status))
	if res == nil {
		return nil // the validator reports the status
	}
	var problems []string
	for name := range ex.header {
		if transportHeaders[name] {
			continue
		}
		declared := false
		for h := range res.Headers.KeysFromOldest() {
			declared = declared || strings.EqualFold(h, name)
		}
		if !declared {
			problems = append(problems, fmt.Sprintf("%s: the response header %s is not declared", ex, name))
		}
	}
	return problems
}

// checkUnrouted checks the answer to a path or method the document does
// not list: an UnroutedError (404 unknown_url, 405 method_not_allowed with
// Allow, or a refusal that comes first), never a success — a route served
// but not documented fails here.
func (c *contract) checkUnrouted(ex *exchange) []string {
	if probes[strings.SplitN(ex.url, "?", 2)[0]] && ex.status < 300 {
		return nil
	}
	if ex.status < 400 {
		return []string{fmt.Sprintf("%s: the document does not describe %s %s, yet it was answered %d",
			ex, ex.method, ex.url, ex.status)}
	}
	var problems []string
	if _, errs := c.schemas.ValidateSchemaBytes(c.unrouted, ex.body); len(errs) > 0 {
		for _, e := range errs {
			problems = append(problems, fmt.Sprintf("%s (not in the document): not an UnroutedError: %s", ex, describe(e)))
		}
		return problems
	}
	var env struct {
		Error struct {
			Code core.Code `json:"code"`
		} `json:"error"`
	}
	if err := json.Unmarshal(ex.body, &env); err != nil {
		return []string{fmt.Sprintf("%s: %v", ex, err)}
	}
	if want := core.InfoFor(env.Error.Code).Status; want != ex.status {
		problems = append(problems, fmt.Sprintf("%s: %s is answered with HTTP %d, not %d", ex, env.Error.Code, want, ex.status))
	}
	if ex.header.Get(api.RequestIDHeader) == "" {
		problems = append(problems, fmt.Sprintf("%s: no %s header", ex, api.RequestIDHeader))
	}
	if ex.status == http.StatusMethodNotAllowed && len(ex.header.Values("Allow")) == 0 {
		problems = append(problems, fmt.Sprintf("%s: a 405 without Allow", ex))
	}
	return problems
}

// capturedBody keeps what the handler reads of a request body.
type capturedBody struct {
	io.ReadCloser
	buf bytes.Buffer
}

func (b *capturedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.buf.Write(p[:n])
	return n, err
}

// capturedResponse passes the answer on and keeps a copy of it: its status,
// its headers as they were when it was written, and its body.
type capturedResponse struct {
	http.ResponseWriter
	status int
	header http.Header
	body   bytes.Buffer
}

func (w *capturedResponse) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
		w.header = w.ResponseWriter.Header().Clone()
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *capturedResponse) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.WriteHeader(http.StatusOK)
	}
	w.body.Write(p)
	return w.ResponseWriter.Write(p)
}

// Flush lets the API's own flush (it sends the answer before logging)
// reach the connection.
func (w *capturedResponse) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (w *capturedResponse) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// exchangeOf is the exchange a request to tb made and the answer it got,
// for the tests that alter it to see the contract check refuse it.
func (tb *testBundle) exchangeOf(method, url, reqBody string, r *response) *exchange {
	h := http.Header{"Authorization": {"Bearer " + tb.key}}
	if reqBody != "" {
		h.Set("Content-Type", "application/json")
	}
	return &exchange{method: method, url: url, reqHeader: h, reqBody: []byte(reqBody),
		status: r.status, header: r.header.Clone(), body: []byte(r.raw)}
}

// The contract check refuses what the document does not say: a field added
// to a response, nested or not, or one missing; a status or a code the
// operation does not list; a header not declared; a route not documented;
// an accepted request the document would refuse. The same exchanges,
// unaltered, pass.
func TestContractReportsWhatTheDocumentDoesNotSay(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	c, err := loadContract()
	require.NoError(t, err)
	models := tb.do(t, "GET", "/v1/models", tb.key, "")
	require.Equal(t, 200, models.status)
	const question = `{"model":"conclave-standard","messages":[{"role":"user","content":"What is 2 + 2?"}]}`
	estimate := tb.do(t, "POST", "/v1/estimate", tb.key, question)
	require.Equal(t, 200, estimate.status)
	notFound := tb.do(t, "GET", "/v1/models/gpt-4o", tb.key, "")
	require.Equal(t, 404, notFound.status)

	require.Empty(t, c.check(tb.exchangeOf("GET", "/v1/models", "", models)))
	require.Empty(t, c.check(tb.exchangeOf("POST", "/v1/estimate", question, estimate)))
	require.Empty(t, c.check(tb.exchangeOf("GET", "/v1/models/gpt-4o", "", notFound)))

	altered := func(r *response, edit func(map[string]any)) *response {
		var body map[string]any
		require.NoError(t, json.Unmarshal([]byte(r.raw), &body))
		edit(body)
		b, err := json.Marshal(body)
		require.NoError(t, err)
		out := *r
		out.raw = string(b)
		return &out
	}
	cases := []struct {
		name string
		ex   *exchange
		want string
	}{
		{"a field added to an answer", tb.exchangeOf("POST", "/v1/estimate", question,
			altered(estimate, func(b map[string]any) { b["estimated_seconds"] = 30 })), "estimated_seconds"},
		{"a field added deep in an answer", tb.exchangeOf("GET", "/v1/models", "",
			altered(models, func(b map[string]any) {
				b["data"].([]any)[0].(map[string]any)["conclave"].(map[string]any)["pricing"].(map[string]any)["q_surcharge_fx"] = 1
			})), "q_surcharge_fx"},
		{"a field missing from an answer", tb.exchangeOf("POST", "/v1/estimate", question,
			altered(estimate, func(b map[string]any) { delete(b, "depth") })), "depth"},
		{"a status the operation does not list", tb.exchangeOf("GET", "/v1/models", "",
			altered(notFound, func(b map[string]any) {})), "404"},
		{"a code the operation does not list for the status", tb.exchangeOf("GET", "/v1/models/gpt-4o", "",
			altered(notFound, func(b map[string]any) { b["error"].(map[string]any)["code"] = "receipt_not_found" })), "at $.error.code"},
		{"a header not declared", func() *exchange {
			ex := tb.exchangeOf("GET", "/v1/models", "", models)
			ex.header.Set("X-Debug-Engine", "sim/swift")
			return ex
		}(), "X-Debug-Engine"},
		{"a route not documented", tb.exchangeOf("GET", "/v1/engines", "", models), "does not describe GET /v1/engines"},
		{"an accepted request the document refuses", tb.exchangeOf("POST", "/v1/estimate",
			`{"model":"conclave-standard","messages":[{"role":"tool","content":"x"}]}`, estimate), "the request"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			problems := strings.Join(c.check(tc.ex), "\n")
			require.Contains(t, problems, tc.want)
			t.Log(problems)
		})
	}
}
