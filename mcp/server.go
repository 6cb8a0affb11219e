package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/netip"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/core/access"
	"github.com/conclavehq/conclave/core/bench/runs"
	"github.com/conclavehq/conclave/core/calls"
	"github.com/conclavehq/conclave/core/carrier"
	"github.com/conclavehq/conclave/core/genie"
	"github.com/conclavehq/conclave/core/modes"
	"github.com/conclavehq/conclave/core/telemetry"
)

// Paths the handler serves.
const (
	// Path is the tool endpoint.
	Path = "/mcp"
	// MetadataPath is the RFC 9728 protected-resource document of Path.
	MetadataPath = "/.well-known/oauth-protected-resource" + Path
	// RootMetadataPath is the same document where clients that ignore the
	// resource's path look for it.
	RootMetadataPath = "/.well-known/oauth-protected-resource"
)

// Config configures the tool server.
type Config struct {
	// BaseURL is the public base URL clients reach the service at
	// ("https://conclave.example.com", with a path prefix if it has one):
	// the protected-resource document names BaseURL+"/mcp" as the resource
	// and the 401 challenge points at its metadata. It is configuration,
	// never read from a request. Required.
	BaseURL string
	// AuthorizationServers are the issuer URLs of the OAuth authorization
	// servers that grant tokens for the tool server. Required: at least one.
	AuthorizationServers []string
	// MaxBodyBytes caps request bodies; larger ones are refused with 413.
	// Defaults to 1 MiB.
	MaxBodyBytes int64
	// TrustedProxies are the proxies whose X-Forwarded-For names the
	// client address the audit trail records. Defaults to none.
	TrustedProxies []netip.Prefix
	// MaxSelfAnswered is how many calls to self-answered tools one batch may
	// run; the calls past it get batch_too_large. Defaults to 8, the spec's
	// limit.
	MaxSelfAnswered int
	// MaxBatchMessages is how many messages of one batch run; every request
	// past it gets batch_too_large, unrun. Defaults to 64.
	MaxBatchMessages int
	// MaxBatchAnswerBytes bounds the answers of a batch's messages that
	// ran: once that many bytes of answer are written, each further answer
	// is replaced by a short batch_too_large. Defaults to 4 MiB.
	MaxBatchAnswerBytes int64
	// Version is the server version reported by initialize. Defaults to
	// "dev".
	Version string
	// ProgressInterval is the longest a deliberation's event stream stays
	// silent: past it the last step is sent again as progress, so that a
	// slow seat does not run out a client's timeout. Defaults to 15s.
	ProgressInterval time.Duration
}

// WithDefaults returns c with zero fields set to their defaults.
func (c Config) WithDefaults() Config {
	if c.MaxBodyBytes == 0 {
		c.MaxBodyBytes = carrier.DefaultMaxBodyBytes
	}
	if c.MaxSelfAnswered == 0 {
		c.MaxSelfAnswered = 8
	}
	if c.MaxBatchMessages == 0 {
		c.MaxBatchMessages = 64
	}
	if c.MaxBatchAnswerBytes == 0 {
		c.MaxBatchAnswerBytes = 4 << 20
	}
	if c.Version == "" {
		c.Version = "dev"
	}
	if c.ProgressInterval == 0 {
		c.ProgressInterval = 15 * time.Second
	}
	c.BaseURL = strings.TrimRight(c.BaseURL, "/")
	return c
}

func (c Config) validate() error {
	if err := carrier.CheckBaseURL(c.BaseURL); err != nil {
		return fmt.Errorf("mcp: BaseURL: %w", err)
	}
	if len(c.AuthorizationServers) == 0 {
		return errors.New("mcp: AuthorizationServers needs at least one issuer")
	}
	for _, s := range c.AuthorizationServers {
		if err := carrier.CheckBaseURL(s); err != nil {
			return fmt.Errorf("mcp: AuthorizationServers: %w", err)
		}
	}
	switch {
	case c.MaxBodyBytes < 0:
		return errors.New("mcp: MaxBodyBytes cannot be negative")
	case c.MaxSelfAnswered < 0:
		return errors.New("mcp: MaxSelfAnswered cannot be negative")
	case c.MaxBatchMessages < 0:
		return errors.New("mcp: MaxBatchMessages cannot be negative")
	case c.MaxBatchAnswerBytes < 0:
		return errors.New("mcp: MaxBatchAnswerBytes cannot be negative")
	case c.ProgressInterval < 0:
		return errors.New("mcp: ProgressInterval cannot be negative")
	}
	return nil
}

// Deps are the core services the tools call.
type Deps struct {
	// Access authenticates, authorizes and meters callers. Required.
	Access *access.Service
	// Calls runs billed calls, estimates, receipt reads and listings.
	// Required.
	Calls *calls.Service
	// Modes is mode authoring: the tools validate_mode, save_mode and
	// list_mode call it, and are listed only when it is set.
	Modes *modes.Service
	// Runs launches and polls benchmark runs: the tools run_test and
	// certify_mode call it, and are listed only when it is set.
	Runs *runs.Service
	// Asker is the mode assistant: the tool ask_genie calls it, and is
	// listed only when it is set.
	Asker *genie.Asker
	// Quotes approves the assistant's quotes: the tool approve_quote calls
	// it, and is listed only when it is set.
	Quotes *genie.Quotes
	// Proposer designs modes from descriptions: the tool
	// genie_propose_mode calls it, and is listed only when it is set.
	Proposer *genie.Proposer
	// Logger receives one line per request (observe.go) and the causes
	// of failures. Defaults to a logger that discards.
	Logger *slog.Logger
	// HTTPMetrics are the public listener's HTTP series, which the REST
	// handler defines (api.NewHTTPMetrics): /mcp is counted in them under
	// its route. Defaults to none: requests are logged but not counted.
	HTTPMetrics carrier.HTTPMetrics
	// Registerer receives the tool calls' series (metrics.go). The handler
	// does not serve them. Defaults to a fresh registry.
	Registerer prometheus.Registerer
	// Telemetry traces each message (its span continues a caller's
	// traceparent). Defaults to none.
	Telemetry telemetry.Telemetry
}

// Handler serves the tool endpoint and its protected-resource document. It
// is safe for concurrent use.
type Handler struct {
	cfg      Config
	access   *access.Service
	calls    *calls.Service
	modes    *modes.Service  // nil: the authoring tools are not served
	runs     *runs.Service   // nil: run_test and certify_mode are not served
	asker    *genie.Asker    // nil: ask_genie is not served
	quotes   *genie.Quotes   // nil: approve_quote is not served
	proposer *genie.Proposer // nil: genie_propose_mode is not served
	log      *slog.Logger
	tel      telemetry.Telemetry
	metrics  *metrics
	tools    *toolSet
	// started is the created time of the modes list_modes lists.
	started time.Time
	// metadata is the protected-resource document, encoded once.
	metadata []byte
	// pastLimit answers a request past a batch's length limit.
	pastLimit idTemplate
	// onDispatch, when set (by tests), is told the method of every message
	// the handler dispatches.
	onDispatch func(method string)
}

// New returns the tool server's handler. It serves Path, MetadataPath and
// RootMetadataPath, and answers 404 elsewhere; Alongside mounts it beside
// the REST handler.
func New(cfg Config, d Deps) (*Handler, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if d.Access == nil || d.Calls == nil {
		return nil, errors.New("mcp: Access and Calls are required")
	}
	if d.Logger == nil {
		d.Logger = slog.New(slog.DiscardHandler)
	}
	if d.Registerer == nil {
		d.Registerer = prometheus.NewRegistry()
	}
	m, err := newMetrics(d.Registerer, d.HTTPMetrics)
	if err != nil {
		return nil, err
	}
	h := &Handler{cfg: cfg, access: d.Access, calls: d.Calls, modes: d.Modes, runs: d.Runs, asker: d.Asker, quotes: d.Quotes, log: d.Logger, tel: d.Telemetry,
		metrics: m, proposer: d.Proposer, started: time.Now()}
	h.tools = h.newTools()
	meta, err := marshal(resourceMetadata{
		Resource: cfg.BaseURL + Path, AuthorizationServers: cfg.AuthorizationServers,
		BearerMethodsSupported: []string{"header"}, ResourceName: "Conclave", ScopesSupported: core.AllScopes,
	})
	if err != nil {
		return nil, err
	}
	h.metadata = meta
	if h.pastLimit, err = newIDTemplate(h.pastBatchLimit(nil)); err != nil {
		return nil, err
	}
	return h, nil
}

// Alongside returns a handler that serves h's paths with h and passes
// every other request, untouched, to other (the REST handler): the public
// listener's handler.
func (h *Handler) Alongside(other http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case Path, MetadataPath, RootMetadataPath:
			h.ServeHTTP(w, r)
		default:
			other.ServeHTTP(w, r)
		}
	})
}

// resourceMetadata is the RFC 9728 protected-resource document.
type resourceMetadata struct {
	Resource               string   `json:"resource"`
	AuthorizationServers   []string `json:"authorization_servers"`
	BearerMethodsSupported []string `json:"bearer_methods_supported"`
	ResourceName           string   `json:"resource_name"`
	// ScopesSupported are the scopes a token may carry: the keys' scopes
	// (core.AllScopes). A client asks for them when it signs a person in.
	ScopesSupported []string `json:"scopes_supported"`
}

// ServeHTTP routes to the tool endpoint or the protected-resource
// document; every request is observed as REST's are (observe.go).
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.observe(w, r, h.route)
}

// route serves r by its path.
func (h *Handler) route(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case Path:
		h.serveEndpoint(w, r)
	case MetadataPath, RootMetadataPath:
		h.serveMetadata(w, r)
	default:
		http.NotFound(w, r)
	}
}

// serveMetadata answers the protected-resource document to anyone: it
// holds nothing secret, and a client reads it before it has a credential.
func (h *Handler) serveMetadata(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "Use GET.", http.StatusMethodNotAllowed)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "public, max-age=3600")
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodGet {
		_, _ = w.Write(h.metadata)
	}
}

// challenge is the WWW-Authenticate header of a 401: where the resource's
// metadata, and from it the authorization server, are found, and the
// scopes to ask for (the MCP authorization specification: SHOULD).
func (h *Handler) challenge() string {
	return `Bearer resource_metadata="` + h.cfg.BaseURL + MetadataPath + `", scope="` + strings.Join(core.AllScopes, " ") + `"`
}

// serveEndpoint answers one POST to the tool endpoint: checks that need no
// body first (method, browser, credential), then the body, then each
// message. Nothing is dispatched, initialize included, before the caller is
// authenticated.
func (h *Handler) serveEndpoint(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		writeRefusal(w, r, codeServerError, "Method not allowed: the tool server is stateless Streamable HTTP; send every message as a POST.",
			core.Errorf(core.CodeMethodNotAllowed, "%s is not allowed on %s.", r.Method, Path))
		return
	}
	p, ok := h.authenticate(w, r)
	if !ok {
		return
	}
	// Changes the request makes are its key's in the audit trail.
	p.Address = carrier.ClientAddress(r, h.cfg.TrustedProxies)
	r = r.WithContext(core.WithActor(r.Context(), p.Actor()))
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, h.cfg.MaxBodyBytes))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			e := carrier.BodyTooLarge(h.cfg.MaxBodyBytes)
			writeRefusal(w, r, codeInvalidRequest, e.Message, e)
			return
		}
		// The connection ended before the body did: nobody to answer.
		noteCode(r.Context(), carrier.CodeClientClosed)
		return
	}
	switch firstByte(body) {
	case '{':
		h.serveOne(w, r, p, body)
	case '[':
		h.serveBatch(w, r, p, body)
	default:
		if !json.Valid(body) {
			answer(w, r, http.StatusBadRequest, errorOf(nil, codeParseError, "Parse error: the body is not valid JSON.", nil))
			return
		}
		answer(w, r, http.StatusBadRequest, errorOf(nil, codeInvalidRequest,
			"Invalid Request: the body must be a JSON-RPC message (an object) or a batch of them (an array).", nil))
	}
}

// authenticate refuses a browser (403), then resolves the bearer
// credential to its principal: 401 with the challenge when there is no
// usable one, the refusal's own status otherwise. It reports false when it
// answered. As on REST, every refusal but a spent rate counts as an
// authentication failure.
func (h *Handler) authenticate(w http.ResponseWriter, r *http.Request) (*access.Principal, bool) {
	if e := carrier.RefuseBrowser(r); e != nil {
		h.authFailure(w, r, codeServerError, e.Message, e)
		return nil, false
	}
	secret, sent := carrier.Bearer(r)
	p, err := h.access.AuthenticateBearer(r.Context(), secret)
	noteCaller(r.Context(), p)
	if err == nil {
		return p, true
	}
	e := core.AsError(err)
	switch {
	case core.InfoFor(e.Code).Status == http.StatusUnauthorized:
		msg := "Unauthorized: sign in with OAuth, or send your API key as a bearer token ('Authorization: Bearer ccl_live_…')."
		if sent {
			msg += " " + e.Message
		}
		w.Header().Set("WWW-Authenticate", h.challenge())
		h.authFailure(w, r, codeUnauthorized, msg, e)
	case e.Code == core.CodeRateLimitExceeded:
		writeRefusal(w, r, codeServerError, e.Message, e) // known spent: refused before any other work
	default:
		h.logFailure(r.Context(), e, requestID(r.Context()))
		h.authFailure(w, r, codeServerError, e.Message, e)
	}
	return nil, false
}

// authFailure answers a refusal before the caller was accepted, counting
// it in REST's conclave_auth_failures_total.
func (h *Handler) authFailure(w http.ResponseWriter, r *http.Request, rpcCode int, msg string, e *core.Error) {
	h.metrics.http.AuthFailure(string(e.Code))
	writeRefusal(w, r, rpcCode, msg, e)
}

// serveOne answers a body holding one message: a tool call it makes runs
// under the request's own id (soleCall).
func (h *Handler) serveOne(w http.ResponseWriter, r *http.Request, p *access.Principal, body []byte) {
	if !json.Valid(body) {
		answer(w, r, http.StatusBadRequest, errorOf(nil, codeParseError, "Parse error: the body is not valid JSON.", nil))
		return
	}
	m, bad := decodeMessage(body)
	h.note(r.Context(), m)
	if bad != nil {
		answer(w, r, http.StatusBadRequest, bad)
		return
	}
	r = soleCall(r)
	if !m.hasID {
		h.notify(r.Context(), m)
		w.WriteHeader(http.StatusAccepted)
		return
	}
	if h.refuseScope(w, r, p, m) {
		return
	}
	if h.streams(r, m) {
		h.serveStream(w, r, p, m)
		return
	}
	answer(w, r, http.StatusOK, h.dispatch(r.Context(), p, m, nil))
}

// refuseScope answers HTTP 403 with an insufficient_scope challenge, and
// reports true, when m is a connected app's tool call that its token was
// granted no scope for: the client can ask its person for the scope. (In
// a batch, such a call gets the tool error instead, as a key's does.)
func (h *Handler) refuseScope(w http.ResponseWriter, r *http.Request, p *access.Principal, m *message) bool {
	if p.Kind != core.PrincipalOAuthApp || m.Method == nil || *m.Method != "tools/call" {
		return false
	}
	t, _, bad := h.tools.parseCall(m)
	if bad != nil || t.action == "" {
		return false
	}
	lacks, err := h.access.LacksScope(r.Context(), p, t.action)
	if err != nil || !lacks {
		return false // a failed check is answered by the call itself
	}
	w.Header().Set("WWW-Authenticate", `Bearer error="insufficient_scope", scope="`+strings.Join(core.AllScopes, " ")+
		`", resource_metadata="`+h.cfg.BaseURL+MetadataPath+`"`)
	e := core.Errorf(core.CodeInsufficientScope, "Forbidden: the app was not granted the scope %s needs. Sign in again and grant it.", t.desc.Name)
	answer(w, r, http.StatusForbidden, errorOf(m.ID, codeServerError, e.Message,
		refusalData{HTTPStatus: http.StatusForbidden, Code: string(e.Code)}))
	return true
}

// notify handles a notification: the tool server is stateless, so there is
// nothing to record; it is accepted and dropped.
func (h *Handler) notify(ctx context.Context, m *message) {
	if h.onDispatch != nil && m.Method != nil {
		h.onDispatch(*m.Method)
	}
}

// dispatch answers one request; progress, when set, is told the steps of a
// deliberation it runs. A fault in a method is the spec's -32603. A
// tools/call is counted in the tool series, fault included.
func (h *Handler) dispatch(ctx context.Context, p *access.Principal, m *message, progress func(calls.Progress)) (res *response) {
	ctx, span := h.messageSpan(ctx, p, m)
	start := time.Now()
	defer func() {
		if *m.Method == "tools/call" {
			h.countCall(ctx, m, res, time.Since(start))
		}
		endMessageSpan(span, res)
	}()
	defer func() {
		if v := recover(); v != nil {
			h.log.ErrorContext(ctx, "panic serving an MCP request", slog.String("method", *m.Method), slog.Any("panic", v))
			res = errorOf(m.ID, codeInternalError, internalErrorMessage, nil)
		}
	}()
	if h.onDispatch != nil {
		h.onDispatch(*m.Method)
	}
	switch *m.Method {
	case "initialize":
		return resultOf(m.ID, h.initialize(m.Params))
	case "ping":
		return resultOf(m.ID, struct{}{})
	case "tools/list":
		return resultOf(m.ID, toolList{Tools: h.tools.list})
	case "tools/call":
		if p.Refusal != nil {
			return h.refuseCall(ctx, m, p.Refusal)
		}
		return h.tools.call(ctx, p, m, progress)
	}
	return errorOf(m.ID, codeMethodNotFound, fmt.Sprintf("Method not found: %s.", *m.Method), nil)
}

// refuseCall answers a tool call of a principal that may do nothing (a
// connected app whose grant no longer stands) with the refusal, in the
// tool's error shape.
func (h *Handler) refuseCall(ctx context.Context, m *message, refusal *core.Error) *response {
	t, _, bad := h.tools.parseCall(m)
	if bad != nil {
		return bad
	}
	id := messageRequestID(ctx)
	if t.selfAnswered {
		return resultOf(m.ID, h.selfFailure(ctx, refusal, id))
	}
	return resultOf(m.ID, h.forwardFailure(ctx, refusal, id))
}

// logFailure logs the cause of a 5xx refusal, with the tool call's
// request id when there is one; the cause is never sent.
func (h *Handler) logFailure(ctx context.Context, e *core.Error, requestID string) {
	if core.InfoFor(e.Code).Status >= 500 && e.Err != nil {
		h.log.ErrorContext(ctx, "mcp request failed", slog.String("request_id", requestID), slog.String("code", string(e.Code)),
			slog.String("error", e.Err.Error()))
	}
}

// Protocol versions the server speaks, newest first.
var protocolVersions = []string{"2025-11-25", "2025-06-18", "2025-03-26"}

type initializeParams struct {
	ProtocolVersion string `json:"protocolVersion"`
}

type initializeResult struct {
	ProtocolVersion string         `json:"protocolVersion"`
	Capabilities    capabilities   `json:"capabilities"`
	ServerInfo      implementation `json:"serverInfo"`
	Instructions    string         `json:"instructions"`
}

type capabilities struct {
	Tools struct{} `json:"tools"`
}

type implementation struct {
	Name    string `json:"name"`
	Title   string `json:"title"`
	Version string `json:"version"`
}

// initialize answers the version the client asked for when the server
// speaks it, else the newest it speaks (the client then decides).
func (h *Handler) initialize(params json.RawMessage) initializeResult {
	var ip initializeParams
	_ = json.Unmarshal(params, &ip) // a missing or odd version gets the newest
	version := protocolVersions[0]
	for _, v := range protocolVersions {
		if ip.ProtocolVersion == v {
			version = v
		}
	}
	return initializeResult{
		ProtocolVersion: version,
		ServerInfo:      implementation{Name: "conclave", Title: "Conclave", Version: h.cfg.Version},
		Instructions:    guidance,
	}
}
