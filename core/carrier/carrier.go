// Package carrier holds the HTTP rules that every carrier of the wire
// contract (REST under /v1, the MCP tool server at /mcp) applies before it
// decodes a request: browsers are refused, the bearer credential is read
// from one header in one way, and bodies are capped; and the one rule for
// the caller strings that reach the database (Text), which the core
// services those strings are decoded into apply. Each carrier renders
// the *core.Error these rules return in its own form. Everything here is
// safe for concurrent use.
package carrier

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"time"

	"github.com/conclavehq/conclave/core"
)

// DefaultMaxBodyBytes is the body cap of a carrier configured with none.
const DefaultMaxBodyBytes = 1 << 20

// RefuseBrowser returns browser_origin_not_allowed when r carries an Origin
// header — even an empty one or "null" — whatever its key: the service is
// server-to-server only. It returns nil otherwise.
func RefuseBrowser(r *http.Request) *core.Error {
	if _, ok := r.Header["Origin"]; !ok {
		return nil
	}
	return core.Errorf(core.CodeBrowserOriginNotAllowed,
		"Requests from browsers are refused: the API is server-to-server only. Call it from your server.")
}

// Bearer returns the credential of r's "Authorization: Bearer …" header
// (the scheme in any case, spaces after it skipped), and whether there was
// a non-empty one.
func Bearer(r *http.Request) (string, bool) {
	v := r.Header.Get("Authorization")
	const scheme = "bearer "
	if len(v) <= len(scheme) || !strings.EqualFold(v[:len(scheme)], scheme) {
		return "", false
	}
	tok := strings.TrimLeft(v[len(scheme):], " ")
	return tok, tok != ""
}

// BodyTooLarge is the refusal of a body over a carrier's cap of max bytes.
func BodyTooLarge(max int64) *core.Error {
	return core.Errorf(core.CodeRequestTooLarge, "The request body is over the %d-byte limit.", max)
}

// RetryAfterSeconds is how long a refusal asks the caller to wait, in whole
// seconds rounded up (REST sends it as Retry-After): e's own RetryAfter, or
// one second for any 429 that names none; 0 when it asks for no wait.
func RetryAfterSeconds(e *core.Error) int {
	if e.RetryAfter > 0 {
		return int((e.RetryAfter + time.Second - 1) / time.Second)
	}
	if core.InfoFor(e.Code).Status == http.StatusTooManyRequests {
		return 1
	}
	return 0
}

// CheckBaseURL refuses a configured base URL (the service's public URL, an
// OAuth issuer) that is not an absolute http or https URL with a host and
// without a query or fragment.
func CheckBaseURL(s string) error {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return fmt.Errorf("%q is not an absolute http(s) URL without query or fragment", s)
	}
	return nil
}

// StatusWriter records the status its handler wrote — 0 until it writes —
// for a carrier's request log and metrics. It passes Flush through (an
// event stream needs it) and unwraps to the writer it wraps.
type StatusWriter struct {
	http.ResponseWriter
	Status int
}

// WriteHeader records the first status written.
func (w *StatusWriter) WriteHeader(code int) {
	if w.Status == 0 {
		w.Status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

// Write records 200 when nothing was written before.
func (w *StatusWriter) Write(b []byte) (int, error) {
	if w.Status == 0 {
		w.Status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// Flush flushes the wrapped writer when it can.
func (w *StatusWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap returns the wrapped writer, for http.ResponseController.
func (w *StatusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// ClientAddress is the address r came from: its peer, or — when the peer
// is one of trusted (server.trusted_proxies) — the first hop of its
// X-Forwarded-For that no trusted proxy added (core.ClientAddress).
func ClientAddress(r *http.Request, trusted []netip.Prefix) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	return core.ClientAddress(host, r.Header.Values("X-Forwarded-For"), trusted)
}

// HTTPMetrics counts the public listener's requests into one set of series
// (conclave_http_requests_total, conclave_http_request_duration_seconds,
// conclave_auth_failures_total): the REST handler defines and registers
// them (api.NewHTTPMetrics), and the tool server counts /mcp into the same
// ones, so that a dashboard of the listener sees both carriers.
type HTTPMetrics interface {
	// Request counts one request by route, status and wire code ("ok" on
	// success) and observes its latency, with ctx's trace as the exemplar
	// when it is traced.
	Request(ctx context.Context, route string, status int, code string, elapsed time.Duration)
	// AuthFailure counts a refusal before a caller was accepted.
	AuthFailure(code string)
}

// StatusClientClosed and CodeClientClosed are what a request whose caller
// left before any answer was written is logged and counted with, by REST
// and the tool server alike: nginx's "client closed request".
const (
	StatusClientClosed = 499
	CodeClientClosed   = "client_closed_request"
)
