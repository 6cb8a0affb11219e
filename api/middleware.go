package api

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/core/access"
	"github.com/conclavehq/conclave/core/calls"
	"github.com/conclavehq/conclave/core/carrier"
	"github.com/conclavehq/conclave/core/telemetry"
)

type ctxKey int

const (
	stateKey ctxKey = iota
	principalKey
)

// reqState is what the outer middleware learns about a request as it runs.
type reqState struct {
	id     string
	code   string // the error code answered, if any
	orgID  string
	keyID  string // the API key's id, when one authenticated the request
	logger *slog.Logger
}

func stateOf(r *http.Request) *reqState {
	st, _ := r.Context().Value(stateKey).(*reqState)
	return st
}

// RequestID returns the id of the request ctx belongs to, or "".
func RequestID(ctx context.Context) string {
	if st, ok := ctx.Value(stateKey).(*reqState); ok {
		return st.id
	}
	return ""
}

// RequestIDHeader carries the request id on every response.
const RequestIDHeader = "X-Request-Id"

// observe gives every request an id (header X-Request-Id), recovers panics
// into 500 internal_error, and records one log line and the metrics when the
// request ends. Log lines carry ids, route, status and code — never a key,
// a header value or a body.
func (h *handler) observe(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		st := &reqState{id: core.NewID("req"), logger: h.log}
		w.Header().Set(RequestIDHeader, st.id)
		ctx, span := h.tel.StartRequest(r.Context(), r.Method, r.Header, st.id)
		r = r.WithContext(context.WithValue(ctx, stateKey, st))
		sw := &carrier.StatusWriter{ResponseWriter: w}
		defer func() {
			if p := recover(); p != nil {
				if p == http.ErrAbortHandler {
					panic(p)
				}
				h.log.ErrorContext(r.Context(), "panic serving request", slog.String("request_id", st.id), slog.Any("panic", p))
				if sw.Status == 0 {
					writeError(sw, r, core.Errorf(core.CodeInternalError, "The service failed to complete the request. Retry with the same Idempotency-Key."))
				}
			}
			// The answer goes out before the log line and the metrics: a
			// body of known length is complete for the client once flushed,
			// so a slow log writer never delays it.
			if sw.Status != 0 {
				if f, ok := sw.ResponseWriter.(http.Flusher); ok {
					f.Flush()
				}
			}
			route := h.routeLabel(r, st)
			status := sw.Status
			if status == 0 {
				status = http.StatusOK
				if r.Context().Err() != nil {
					// The caller left before its answer (a deliberation goes
					// on without it): nginx's "client closed request".
					status, st.code = carrier.StatusClientClosed, carrier.CodeClientClosed
				}
			}
			code := st.code
			if code == "" {
				code = "ok"
			}
			elapsed := time.Since(start)
			h.metrics.Request(r.Context(), route, status, code, elapsed)
			telemetry.EndRequest(span, r.Method, route, status, code, st.orgID, st.keyID)
			attrs := []slog.Attr{
				slog.String("request_id", st.id), slog.String("method", r.Method), slog.String("route", route),
				slog.Int("status", status), slog.String("code", code), slog.Duration("duration", elapsed),
			}
			if st.orgID != "" {
				attrs = append(attrs, slog.String("org_id", st.orgID))
			}
			h.log.LogAttrs(r.Context(), slog.LevelInfo, "request", attrs...)
		}()
		next.ServeHTTP(sw, r)
	})
}

// routeLabel is the bounded route label of a request: the pattern of the
// route it reached, or of the route it was aimed at when admission refused it
// before routing finished; "unmatched" for paths no route serves.
func (h *handler) routeLabel(r *http.Request, st *reqState) string {
	if st.code == string(core.CodeUnknownURL) {
		return "unmatched"
	}
	if rc := chi.RouteContext(r.Context()); rc != nil {
		if p := rc.RoutePattern(); p != "" && !strings.HasSuffix(p, "*") {
			return p
		}
	}
	if p := h.router.Find(chi.NewRouteContext(), r.Method, r.URL.Path); p != "" {
		return p
	}
	for _, m := range routeMethods { // the path exists under another method
		if p := h.router.Find(chi.NewRouteContext(), m, r.URL.Path); p != "" {
			return p
		}
	}
	return "unmatched"
}

// refuseBrowsers answers 403 browser_origin_not_allowed to any request that
// carries an Origin header, whatever its key: the API is server-to-server.
func (h *handler) refuseBrowsers(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if e := carrier.RefuseBrowser(r); e != nil {
			h.authFailure(w, r, e)
			return
		}
		next.ServeHTTP(w, r)
	})
}

func principalOf(ctx context.Context) *access.Principal {
	p, _ := ctx.Value(principalKey).(*access.Principal)
	return p
}

// authenticate resolves the bearer key to its principal (core/access): 401
// invalid_api_key for a missing, malformed or unknown key; 401
// revoked_api_key for a revoked or expired one; 403 org_suspended.
func (h *handler) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		secret, _ := carrier.Bearer(r)
		p, err := h.access.Authenticate(r.Context(), secret)
		if p != nil {
			stateOf(r).orgID = p.Org.ID
			if p.Key != nil {
				stateOf(r).keyID = p.Key.ID
			}
		}
		if err != nil {
			if e := core.AsError(err); e.Code == core.CodeRateLimitExceeded {
				writeError(w, r, e) // known spent: refused before any other work
			} else {
				h.authFailure(w, r, e)
			}
			return
		}
		// Changes the request makes are its key's in the audit trail.
		p.Address = carrier.ClientAddress(r, h.cfg.TrustedProxies)
		ctx := core.WithActor(context.WithValue(r.Context(), principalKey, p), p.Actor())
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

func (h *handler) authFailure(w http.ResponseWriter, r *http.Request, e *core.Error) {
	h.metrics.AuthFailure(string(e.Code))
	writeError(w, r, e)
}

// requireScope refuses the request unless the policy allows action.
func (h *handler) requireScope(action string) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if err := h.access.Authorize(r.Context(), principalOf(r.Context()), action, nil, ""); err != nil {
				writeError(w, r, err)
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}

// meter spends one request of the key's rate for a read; billed calls and
// estimates spend theirs in their own admission.
func (h *handler) meter(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := h.access.Meter(r.Context(), principalOf(r.Context()), RequestID(r.Context())); err != nil {
			writeError(w, r, err)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// callOf names the request to the call service: its id and its route.
func callOf(r *http.Request) calls.Call {
	endpoint := r.URL.Path
	if rc := chi.RouteContext(r.Context()); rc != nil && rc.RoutePattern() != "" {
		endpoint = rc.RoutePattern()
	}
	return calls.Call{RequestID: RequestID(r.Context()), Endpoint: endpoint}
}

// refuse answers a request refused before its admission. An authenticated
// one still spends the key's rate, and gets 429 instead once it is spent.
func (h *handler) refuse(w http.ResponseWriter, r *http.Request, err error) {
	if p := principalOf(r.Context()); p != nil {
		err = h.access.Refused(r.Context(), p, RequestID(r.Context()), err)
	}
	writeError(w, r, err)
}
