// Package adaptertest is the conformance suite for core.Adapter: golden
// fixtures for every built-in adapter and the checks every carrier of an
// adapter must pass with them.
//
// Fixtures are embedded from testdata/<adapter>/:
//
//	describe.json         the AdapterInfo Describe must return
//	request/<name>.json   {"name","note"?,"request": SeatRequest, "want": HTTPRequest}
//	                      or {…, "want_error": "text the error must contain"}
//	response/<name>.json  {"name","note"?,"response": HTTPResponse, "want": SeatAnswer}
//	exemptions.json       optional: {"finishes"?: {reason: why}, "classes"?: {class: why}},
//	                      what the provider never produces and so no fixture can show
//
// Bodies are stored for reading, not as the base64 that []byte takes in
// JSON: a body written as a JSON object or array stands for its compact
// encoding (json.Compact of the text in the file, escapes kept as written),
// a body written as a JSON string stands for that string's bytes, and
// "body_base64" holds a body that is not valid UTF-8. Adapters must
// therefore emit compact JSON for an object body to read back exactly; the
// -update writer falls back to a string when they do not.
//
// Every set must hold a "2kb" request (benchmarks translate it) and a
// "success" response, and its responses must show every finish reason and
// every provider error class (see Run) but those its exemptions name.
//
// Run the suite from an adapter's tests:
//
//	func TestConformance(t *testing.T) {
//		t.Parallel()
//		adaptertest.Run(t, "openai", openai.New())
//	}
//
// go test -run Conformance -update rewrites the want parts of the named
// adapter's fixtures from the adapter under test. It does so only for the
// native adapter — the one whose Go package is named for it — so a carrier
// test run with -update never rewrites goldens from a plugin's output. The
// -update flag is defined here, or reused when core/protocoltest defined it
// first; a test package that imports this one must not define its own. Writing needs the source tree, so it does not work with
// -trimpath.
//
// This package imports only the standard library, core and testify.
package adaptertest

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/core"
)

func init() {
	if flag.Lookup("update") == nil {
		flag.Bool("update", false, "rewrite the want parts of golden fixtures from the native implementation under test")
	}
}

// updating reports whether the test binary was run with -update.
func updating() bool {
	f := flag.Lookup("update")
	return f != nil && f.Value.String() == "true"
}

// native reports whether v is the native implementation called name: a type
// declared in a Go package of that name.
func native(v any, name string) bool {
	t := reflect.TypeOf(v)
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil {
		return false
	}
	p := t.PkgPath()
	return p == name || strings.HasSuffix(p, "/"+name)
}

// providerClasses are the classes an adapter may give a provider failure;
// egress_refused and adapter_failed belong to the host.
var providerClasses = []core.ErrorClass{
	core.ErrorRateLimited, core.ErrorOverloaded, core.ErrorTimeout, core.ErrorContextTooLong,
	core.ErrorAuthRefused, core.ErrorBadRequest, core.ErrorMalformed,
}

var finishes = []string{core.FinishStop, core.FinishLength, core.FinishFiltered}

// credentialHeaders are headers only the egress layer may set.
var credentialHeaders = []string{"authorization", "x-api-key", "x-goog-api-key", "x-amz-security-token", "x-amz-date", "x-amz-content-sha256"}

// maxErrorMessage bounds ProviderError.Message: a short line, never a body.
const maxErrorMessage = 512

// Run runs every fixture of adapterName against a as parallel subtests:
// "describe", "coverage", "request/<name>" and "response/<name>". Requests
// must match exactly — method, path, headers and body bytes — must not
// change the SeatRequest they were given, must be the same when built
// twice, and must carry no credential header. Responses must give a
// SeatAnswer deeply equal to the fixture's and a nil Go error. Every result
// must survive a JSON round trip unchanged, as it must through the plugin
// carriers.
func Run(t *testing.T, adapterName string, a core.Adapter) {
	t.Helper()
	set, err := Fixtures(adapterName)
	require.NoError(t, err)
	update := updating() && native(a, adapterName)
	if updating() && !update {
		t.Logf("-update ignored: %T is not the native %s adapter", a, adapterName)
	}

	t.Run("describe", func(t *testing.T) {
		t.Parallel()
		got, err := a.Describe(t.Context())
		require.NoError(t, err)
		require.NotNil(t, got)
		if update {
			require.NoError(t, writeDescribe(adapterName, got))
			return
		}
		require.Equal(t, set.Describe, got)
	})

	t.Run("nil_input", func(t *testing.T) {
		t.Parallel()
		_, err := a.BuildRequest(t.Context(), nil)
		require.Error(t, err, "BuildRequest(nil) must refuse, not panic")
		_, err = a.ParseResponse(t.Context(), nil)
		require.Error(t, err, "ParseResponse(nil) must refuse, not panic")
	})

	// A run with -update rewrites the goldens rather than checking them;
	// the fixtures' coverage is checked by the next plain run.
	coverage := func(t *testing.T) {
		t.Parallel()
		_, ok := set.Request("2kb")
		require.True(t, ok, "a request fixture named 2kb (benchmarks translate it)")
		_, ok = set.Response("success")
		require.True(t, ok, "a response fixture named success")
		classes := map[core.ErrorClass]bool{}
		finished := map[string]bool{}
		for _, c := range set.Responses {
			if c.Want == nil {
				continue
			}
			if c.Want.Error != nil {
				classes[c.Want.Error.Class] = true
			} else {
				finished[c.Want.Finish] = true
			}
		}
		for _, class := range providerClasses {
			if why, ok := set.Exempt.Classes[class]; ok {
				require.Falsef(t, classes[class], "%s is exempt (%s) but a fixture shows it: drop the exemption", class, why)
				continue
			}
			require.Truef(t, classes[class], "a response fixture classified %s", class)
		}
		for _, f := range finishes {
			if why, ok := set.Exempt.Finishes[f]; ok {
				require.Falsef(t, finished[f], "%s is exempt (%s) but a fixture shows it: drop the exemption", f, why)
				continue
			}
			require.Truef(t, finished[f], "a response fixture that finishes %s", f)
		}
	}
	if !update {
		t.Run("coverage", coverage)
	}

	for _, c := range set.Requests {
		t.Run("request/"+c.Name, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			before := mustJSON(t, c.Request)
			got, err := a.BuildRequest(ctx, c.Request)
			require.JSONEq(t, before, mustJSON(t, c.Request), "BuildRequest changed the SeatRequest it was given")
			if update {
				c.Want, c.WantError = got, ""
				if err != nil {
					c.Want, c.WantError = nil, err.Error()
				}
				require.NoError(t, writeRequest(adapterName, c))
				return
			}
			if c.WantError != "" {
				require.ErrorContains(t, err, c.WantError)
				return
			}
			require.NoError(t, err)
			require.NotNil(t, got)
			require.Equal(t, c.Want.Method, got.Method, "method")
			require.Equal(t, c.Want.Path, got.Path, "path")
			require.Equal(t, emptyNil(c.Want.Header), emptyNil(got.Header), "header")
			require.Equal(t, string(c.Want.Body), string(got.Body), "body bytes")
			checkRequest(t, got)
			again, err := a.BuildRequest(ctx, c.Request)
			require.NoError(t, err)
			require.Equal(t, got, again, "BuildRequest gave two results for one request")
		})
	}

	for _, c := range set.Responses {
		t.Run("response/"+c.Name, func(t *testing.T) {
			t.Parallel()
			got, err := a.ParseResponse(t.Context(), c.Response)
			if update {
				require.NoError(t, err)
				c.Want = got
				require.NoError(t, writeResponse(adapterName, c))
				return
			}
			CheckAnswer(t, c.Response, got, err)
			require.Equal(t, c.Want, got)
		})
	}
}

// CheckAnswer checks what ParseResponse made of res, whatever res was: a nil
// Go error, and either an answer (a 2xx status, a known finish reason,
// non-negative token counts) or a provider error (a provider class, a short
// one-line message, the response's status, no finish reason); and a result
// that survives a JSON round trip, as it must through the plugin carriers.
// Fuzz targets call it on arbitrary responses.
func CheckAnswer(t testing.TB, res *core.HTTPResponse, ans *core.SeatAnswer, err error) {
	t.Helper()
	require.NoError(t, err, "ParseResponse returned a Go error: a provider failure belongs in SeatAnswer.Error")
	require.NotNil(t, ans)
	require.GreaterOrEqual(t, ans.InputTokens, 0, "input tokens")
	require.GreaterOrEqual(t, ans.OutputTokens, 0, "output tokens")
	require.GreaterOrEqual(t, ans.ReasoningTokens, 0, "reasoning tokens")
	require.True(t, utf8.ValidString(ans.Text), "text is valid UTF-8")
	if e := ans.Error; e != nil {
		require.Contains(t, providerClasses, e.Class)
		require.NotEmpty(t, e.Message, "error message")
		require.LessOrEqual(t, len(e.Message), maxErrorMessage, "error message is short")
		require.NotContains(t, e.Message, "\n", "error message is one line")
		require.True(t, utf8.ValidString(e.Message), "error message is valid UTF-8")
		require.Equal(t, res.Status, e.Status, "error status")
		require.Empty(t, ans.Finish, "an error has no finish reason")
	} else {
		require.Contains(t, finishes, ans.Finish)
		require.True(t, res.Status >= 200 && res.Status <= 299, "an answer from HTTP %d", res.Status)
	}
	b, err := json.Marshal(ans)
	require.NoError(t, err)
	var back core.SeatAnswer
	require.NoError(t, json.Unmarshal(b, &back))
	require.Equal(t, ans, &back, "the answer changes through JSON")
}

func checkRequest(t *testing.T, req *core.HTTPRequest) {
	t.Helper()
	require.NotEmpty(t, req.Method)
	require.True(t, strings.HasPrefix(req.Path, "/"), "path %q is relative to the endpoint and starts with /", req.Path)
	for k := range req.Header {
		require.NotContains(t, credentialHeaders, strings.ToLower(k), "adapters never set credentials")
	}
	b, err := json.Marshal(req)
	require.NoError(t, err)
	var back core.HTTPRequest
	require.NoError(t, json.Unmarshal(b, &back))
	require.Equal(t, req.Method, back.Method)
	require.Equal(t, req.Path, back.Path)
	require.Equal(t, emptyNil(req.Header), emptyNil(back.Header), "headers change through JSON")
	require.Equal(t, string(req.Body), string(back.Body))
}

// BenchmarkTranslate measures one seat call's translation on a: the
// BuildRequest of adapterName's "2kb" fixture and the ParseResponse of its
// "success" fixture per op. Every carrier's benchmark runs this same op.
func BenchmarkTranslate(b *testing.B, adapterName string, a core.Adapter) {
	b.Helper()
	set, err := Fixtures(adapterName)
	require.NoError(b, err)
	req, ok := set.Request("2kb")
	require.True(b, ok, "no 2kb request fixture")
	res, ok := set.Response("success")
	require.True(b, ok, "no success response fixture")
	ctx := b.Context()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := a.BuildRequest(ctx, req.Request); err != nil {
			b.Fatal(err)
		}
		if _, err := a.ParseResponse(ctx, res.Response); err != nil {
			b.Fatal(err)
		}
	}
}

// FuzzParseResponse fuzzes a's ParseResponse with CheckAnswer, seeded with
// the responses of adapterName's fixtures. Fuzz arguments are the status,
// the headers as "Name: value" lines, and the body.
func FuzzParseResponse(f *testing.F, adapterName string, a core.Adapter) {
	set, err := Fixtures(adapterName)
	require.NoError(f, err)
	for _, c := range set.Responses {
		f.Add(c.Response.Status, headerLines(c.Response.Header), c.Response.Body)
	}
	f.Fuzz(func(t *testing.T, status int, header string, body []byte) {
		res := &core.HTTPResponse{Status: status, Header: parseHeaderLines(header), Body: body}
		ans, err := a.ParseResponse(context.Background(), res)
		CheckAnswer(t, res, ans, err)
	})
}

func headerLines(h map[string]string) string {
	keys := make([]string, 0, len(h))
	for k := range h {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "%s: %s\n", k, h[k])
	}
	return b.String()
}

func parseHeaderLines(s string) map[string]string {
	var h map[string]string
	for line := range strings.Lines(s) {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		if h == nil {
			h = map[string]string{}
		}
		h[strings.TrimSpace(k)] = strings.TrimSpace(v)
	}
	return h
}

func emptyNil(h map[string]string) map[string]string {
	if len(h) == 0 {
		return nil
	}
	return h
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return string(b)
}
