package egress

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"reflect"
	"syscall"
	"time"
	"unicode/utf8"

	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/core/expiring"
)

// Egress sends provider requests for seat calls. It is safe for concurrent
// use; construct it with New.
type Egress struct {
	cfg    Config
	creds  core.Credentials
	allow  allowList
	client *http.Client
	// rt is the client's transport when calls can skip the client (see
	// New); nil when they go through it.
	rt      http.RoundTripper
	log     *slog.Logger
	metrics *metrics
	signer  *v4.Signer
	infos   infoCache
	eps     endpointCache

	// Seams for tests: the signing clock and the back-off wait.
	now   func() time.Time
	sleep func(ctx context.Context, d time.Duration) error
}

// New returns an Egress that injects credentials from creds. engines are
// the deployment's engines: when cfg.AllowHosts is empty their endpoints'
// hosts (and ports) form the allow-list. An engine whose endpoint is not an
// http(s) URL is an error.
func New(cfg Config, creds core.Credentials, engines []*core.Engine) (*Egress, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if creds == nil {
		return nil, errors.New("egress: credentials are required")
	}
	var allow allowList
	for _, h := range cfg.AllowHosts {
		r, _ := parseHostRule(h) // validate checked it
		allow = append(allow, r)
	}
	derive := len(allow) == 0
	eps := newEndpointCache() // the engines' endpoints, parsed here, are not parsed again per call
	for _, eng := range engines {
		if eng == nil || eng.Endpoint == "" {
			continue
		}
		ep, err := eps.parse(eng.Endpoint)
		if err != nil {
			return nil, fmt.Errorf("egress: engine %q: %w", eng.ID, err)
		}
		if derive {
			allow = append(allow, hostRule{host: ep.host, port: ep.port})
		} else if !allow.allows(ep.host, ep.port) {
			cfg.Logger.Warn("egress: engine endpoint is outside AllowHosts; its calls will be refused", "engine", eng.ID)
		}
	}
	m, err := newMetrics(cfg.Registerer)
	if err != nil {
		return nil, fmt.Errorf("egress: registering metrics: %w", err)
	}
	client := *cfg.HTTPClient
	client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	client.Jar = nil
	// A client that follows no redirect, keeps no cookie and sets no
	// overall timeout adds nothing to its transport but a copy of each
	// request's headers, made for redirects and kept while the call waits:
	// calls then go to the transport itself.
	var rt http.RoundTripper
	if client.Timeout == 0 {
		rt = client.Transport
		if rt == nil {
			rt = http.DefaultTransport
		}
	}
	return &Egress{
		cfg: cfg, creds: creds, allow: allow, client: &client, rt: rt, log: cfg.Logger, metrics: m,
		signer: newSigner(), now: time.Now, sleep: sleepCtx,
		infos: infoCache{m: expiring.New[core.Adapter, core.AdapterInfo](maxCached)}, eps: eps,
	}, nil
}

// CloseIdleConnections closes the HTTP client's idle connections. Egress
// stays usable; it is meant for shutdown and tests.
func (e *Egress) CloseIdleConnections() { e.client.CloseIdleConnections() }

// Call runs one seat call: build, check, authorise, send, parse, retry. It
// implements core.Egress. The answer is never nil when the error is nil; a
// provider failure, a refusal and an adapter failure are answers with Error
// set. The error is non-nil only when the caller's ctx ended (ctx.Err()),
// the call is incomplete, or no credential could be had. The answer's
// Source is the Source of the credential the call carried ("" for none):
// whatever an adapter put there is replaced.
func (e *Egress) Call(ctx context.Context, c *core.EgressCall) (*core.SeatAnswer, error) {
	if c == nil || c.Engine == nil || c.Adapter == nil || c.Request == nil {
		return nil, errors.New("egress: a call needs an engine, an adapter and a request")
	}
	start := time.Now()
	ans, err := e.call(ctx, c)
	outcome := outcomeOK
	switch {
	case err != nil && ctx.Err() != nil:
		outcome = outcomeCanceled
	case err != nil:
		outcome = outcomeError
	case ans.Error != nil:
		outcome = string(ans.Error.Class)
	}
	e.metrics.call(c.Engine.ID, outcome, time.Since(start))
	return ans, err
}

func (e *Egress) call(ctx context.Context, c *core.EgressCall) (*core.SeatAnswer, error) {
	var p prepared
	if failure, err := e.prepare(ctx, c, &p); failure != nil || err != nil {
		return failure, err
	}
	for attempt := 1; ; attempt++ {
		e.metrics.attempt(c.Engine.ID)
		start := time.Now()
		r, err := e.attempt(ctx, c, &p)
		if err != nil {
			return nil, err
		}
		ans := e.attempted(ctx, c, r, attempt, start)
		if ans.Error == nil || !ans.Error.Class.Retryable() || attempt >= e.cfg.MaxAttempts {
			return ans, nil
		}
		d := e.backoff(attempt, r.retryAfter)
		if dl, ok := ctx.Deadline(); ok && time.Until(dl) <= d {
			return ans, nil // no time to try again: the answer beats a bare deadline error
		}
		if err := e.sleep(ctx, d); err != nil {
			return nil, err
		}
	}
}

// prepared is what every attempt of a call shares: the adapter's
// description, the endpoint and the attempt's timeout.
type prepared struct {
	info    core.AdapterInfo
	ep      *endpoint
	timeout time.Duration
}

// prepare checks the call against egress's rules and fills in p. When the
// call cannot go on it returns the answer saying why (failure), or ctx's
// error when ctx ended.
//
// A call's goroutine waits for the provider's answer below call, attempt
// and send, and keeps the stack its deepest point needed. So what the wait
// does not need (these checks, the request's forming, the answer's
// reading) runs in functions of its own and stays out of those three
// frames (docs/rationale.md, "A waiting call keeps a small stack").
func (e *Egress) prepare(ctx context.Context, c *core.EgressCall, p *prepared) (failure *core.SeatAnswer, err error) {
	info, err := e.infos.describe(ctx, c.Adapter)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return failed(core.ErrorAdapterFailed, 0, "adapter could not describe itself: "+adapterMessage(err)), nil
	}
	if !knownScheme(info.Auth) {
		return failed(core.ErrorAdapterFailed, 0, fmt.Sprintf("adapter %q names unknown credential scheme %q", info.Name, info.Auth)), nil
	}
	ep, err := e.eps.parse(c.Engine.Endpoint)
	if err != nil {
		return failed(core.ErrorEgressRefused, 0, "engine "+err.Error()), nil
	}
	if !e.allow.allows(ep.host, ep.port) {
		return failed(core.ErrorEgressRefused, 0, "engine endpoint host is not in the egress allow-list"), nil
	}
	if info.Auth != core.AuthNone && ep.url.Scheme == "http" && !ep.loopback() && !e.cfg.AllowPlainHTTP {
		return failed(core.ErrorEgressRefused, 0, "refusing to send a credential over plain http to a host that is not loopback"), nil
	}
	timeout := c.Engine.Timeout
	if timeout <= 0 {
		timeout = e.cfg.DefaultTimeout
	}
	*p = prepared{info: info, ep: ep, timeout: timeout}
	return nil, nil
}

// attempted is an attempt's answer, carrying the Source of the credential
// it was sent with, logged at debug level.
func (e *Egress) attempted(ctx context.Context, c *core.EgressCall, r result, attempt int, start time.Time) *core.SeatAnswer {
	ans := r.ans
	if ans.Source != r.source {
		a := *ans
		a.Source = r.source
		ans = &a
	}
	if e.log.Enabled(ctx, slog.LevelDebug) {
		var class core.ErrorClass
		if ans.Error != nil {
			class = ans.Error.Class
		}
		e.log.DebugContext(ctx, "egress attempt", "engine", c.Engine.ID, "attempt", attempt,
			"status", r.status, "class", string(class), "duration", time.Since(start))
	}
	return ans
}

// backoff is the wait before retry number n (1 for the first retry): the
// provider's Retry-After when it gave one, else full jitter below
// BaseBackoff·2ⁿ⁻¹; both capped by MaxBackoff.
func (e *Egress) backoff(n int, retryAfter time.Duration) time.Duration {
	if retryAfter > 0 {
		return min(retryAfter, e.cfg.MaxBackoff)
	}
	ceil := e.cfg.BaseBackoff
	for i := 1; i < n && ceil < e.cfg.MaxBackoff; i++ {
		ceil *= 2
	}
	ceil = min(ceil, e.cfg.MaxBackoff)
	if ceil <= 0 {
		return 0
	}
	return rand.N(ceil + 1)
}

// result is what one attempt produced.
type result struct {
	ans        *core.SeatAnswer // never nil
	status     int              // the provider's HTTP status; 0 when none arrived
	retryAfter time.Duration    // the provider's requested wait; 0 when none
	source     string           // the credential's Source; "" when none was fetched
}

// answer is the result of an attempt that ended in a failure of egress's
// own finding (refusal, transport, adapter).
func answer(ans *core.SeatAnswer) (result, error) {
	return result{ans: ans, status: ans.Error.Status}, nil
}

// attempt sends the call once. The error is set only when the call cannot
// go on at all.
func (e *Egress) attempt(ctx context.Context, c *core.EgressCall, p *prepared) (result, error) {
	var source string
	r, err := e.send(ctx, c, p, &source)
	r.source = source
	return r, err
}

// send is attempt's body. It stores the credential's Source in *source once
// it has the credential, so that every answer from then on carries it.
func (e *Egress) send(ctx context.Context, c *core.EgressCall, p *prepared, source *string) (result, error) {
	req, cancel, cred, failure, err := e.request(ctx, c, p, source)
	switch {
	case err != nil:
		return result{}, err
	case failure != nil:
		return answer(failure)
	}
	defer cancel()
	res, err := e.do(req)
	if err != nil {
		return e.transportFailure(ctx, err, p.timeout)
	}
	return e.receive(ctx, c, res, cred, p.timeout)
}

// request has the adapter build the attempt's request and forms it for
// HTTP, under its own timeout (cancel ends it), with the credential it
// carries. Nothing keeps the built request past the round trip that sends
// it, as an answer may be a long time coming. When it cannot, the attempt
// ends with the answer saying why (failure), or with err when the call
// cannot go on.
func (e *Egress) request(ctx context.Context, c *core.EgressCall, p *prepared, source *string) (req *http.Request, cancel context.CancelFunc, cred *core.Credential, failure *core.SeatAnswer, err error) {
	hreq, err := c.Adapter.BuildRequest(ctx, c.Request)
	if err != nil || hreq == nil {
		if ctx.Err() != nil {
			return nil, nil, nil, nil, ctx.Err()
		}
		msg := "adapter built no request"
		if err != nil {
			msg = "adapter could not build the request: " + adapterMessage(err)
		}
		return nil, nil, nil, failed(core.ErrorAdapterFailed, 0, msg), nil
	}
	u, err := resolve(p.ep, hreq)
	if err != nil {
		return nil, nil, nil, failed(core.ErrorEgressRefused, 0, err.Error()), nil
	}
	header, err := requestHeader(hreq.Header)
	if err != nil {
		return nil, nil, nil, failed(core.ErrorEgressRefused, 0, err.Error()), nil
	}
	if cred, err = e.credential(ctx, c, p.info.Auth); err != nil {
		return nil, nil, nil, nil, err
	}
	if cred != nil {
		*source = cred.Source
	}
	actx, cancel := context.WithTimeout(ctx, p.timeout)
	if req, err = newRequest(actx, hreq.Method, u, header, hreq.Body); err != nil {
		cancel()
		return nil, nil, nil, failed(core.ErrorEgressRefused, 0, "request could not be formed"), nil
	}
	if err := e.authorize(ctx, req, hreq.Body, p.info.Auth, cred, c.Engine.AWSRegion); err != nil {
		cancel()
		return nil, nil, nil, nil, fmt.Errorf("egress: authorising the call for engine %q: %w", c.Engine.ID, err)
	}
	return req, cancel, cred, nil, nil
}

// receive reads and parses the provider's answer to an attempt sent with
// cred.
func (e *Egress) receive(ctx context.Context, c *core.EgressCall, res *http.Response, cred *core.Credential, timeout time.Duration) (result, error) {
	defer res.Body.Close()
	raw, err := readBody(res, e.cfg.MaxResponseBytes)
	switch {
	case errors.Is(err, errTooLarge):
		return answer(failed(core.ErrorEgressRefused, res.StatusCode,
			fmt.Sprintf("response body is larger than %d bytes", e.cfg.MaxResponseBytes)))
	case err != nil:
		return e.transportFailure(ctx, err, timeout)
	}
	wait := retryAfter(res.Header, e.now())

	sec := secrets(cred)
	hres := &core.HTTPResponse{Status: res.StatusCode, Header: responseHeader(res.Header, sec), Body: scrub(raw, sec)}
	ans, err := c.Adapter.ParseResponse(ctx, hres)
	if err != nil || ans == nil {
		if ctx.Err() != nil {
			return result{}, ctx.Err()
		}
		msg := "adapter returned no answer"
		if err != nil {
			msg = "adapter could not parse the response: " + adapterMessage(err)
		}
		return answer(failed(core.ErrorAdapterFailed, res.StatusCode, msg))
	}
	if ans.Error != nil && ans.Error.Status == 0 {
		a, pe := *ans, *ans.Error
		pe.Status = res.StatusCode
		a.Error = &pe
		ans = &a
	}
	return result{ans: ans, status: res.StatusCode, retryAfter: wait}, nil
}

// credential fetches and checks the credential a call to c's engine
// carries under scheme: nil for AuthNone. The error is ctx's when it ended.
func (e *Egress) credential(ctx context.Context, c *core.EgressCall, scheme core.AuthScheme) (*core.Credential, error) {
	if scheme == core.AuthNone {
		return nil, nil
	}
	cred, err := e.creds.Credential(ctx, &core.CredentialRequest{Engine: c.Engine, Scheme: scheme, OrgID: c.OrgID})
	if err == nil {
		err = checkCredential(scheme, cred)
	}
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("egress: credential for engine %q (scheme %s): %w", c.Engine.ID, scheme, err)
	}
	return cred, nil
}

// do sends req as the client would, through its transport when it can.
func (e *Egress) do(req *http.Request) (*http.Response, error) {
	if e.rt == nil {
		return e.client.Do(req)
	}
	res, err := e.rt.RoundTrip(req)
	switch {
	case err != nil:
		if res != nil && res.Body != nil {
			_ = res.Body.Close()
		}
		return nil, err
	case res == nil:
		return nil, errors.New("egress: the transport returned no response and no error")
	case res.Body == nil:
		res.Body = http.NoBody
	}
	return res, nil
}

// transportFailure classifies a failure to send or to read the answer. When
// the caller's ctx ended, that is the result, not a provider failure.
func (e *Egress) transportFailure(ctx context.Context, err error, timeout time.Duration) (result, error) {
	if ctx.Err() != nil {
		return result{}, ctx.Err()
	}
	var ne net.Error
	var (
		unknownCA  x509.UnknownAuthorityError
		badHost    x509.HostnameError
		badCert    x509.CertificateInvalidError
		verify     *tls.CertificateVerificationError
		recordHead tls.RecordHeaderError
	)
	switch {
	case errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout()):
		return answer(failed(core.ErrorTimeout, 0, fmt.Sprintf("provider did not answer within %s", timeout)))
	case errors.As(err, &unknownCA), errors.As(err, &badHost), errors.As(err, &badCert),
		errors.As(err, &verify), errors.As(err, &recordHead):
		return answer(failed(core.ErrorEgressRefused, 0, "provider's TLS identity could not be verified"))
	case errors.Is(err, syscall.ECONNREFUSED):
		return answer(failed(core.ErrorOverloaded, 0, "provider refused the connection"))
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return answer(failed(core.ErrorOverloaded, 0, "provider closed the connection"))
	}
	return answer(failed(core.ErrorOverloaded, 0, "provider could not be reached"))
}

func failed(class core.ErrorClass, status int, msg string) *core.SeatAnswer {
	return &core.SeatAnswer{Error: &core.ProviderError{Class: class, Message: msg, Status: status}}
}

// adapterMessage is an adapter error's text, bounded. Adapters never hold a
// credential, so their errors cannot carry one.
func adapterMessage(err error) string {
	const max = 256
	s := err.Error()
	if len(s) <= max {
		return s
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// maxCached bounds each of egress's caches: a caller that makes a new
// adapter value or endpoint text per call empties them rather than grows
// them.
const maxCached = 256

// forever is when entries of egress's caches lapse: never, since what they
// hold does not change for one adapter value or endpoint text.
var forever = time.Date(9999, time.January, 1, 0, 0, 0, 0, time.UTC)

// infoCache remembers each adapter's Describe answer: a plugin carrier pays
// a round trip for it, and it never changes for one adapter value.
type infoCache struct {
	m *expiring.Map[core.Adapter, core.AdapterInfo]
}

func (c infoCache) describe(ctx context.Context, a core.Adapter) (core.AdapterInfo, error) {
	cacheable := hashable(reflect.TypeOf(a))
	if cacheable {
		if info, ok := c.m.Get(a, time.Now()); ok {
			return info, nil
		}
	}
	p, err := a.Describe(ctx)
	if err != nil {
		return core.AdapterInfo{}, err
	}
	if p == nil {
		return core.AdapterInfo{}, errors.New("adapter described nothing")
	}
	if cacheable {
		c.m.Put(a, *p, forever, time.Now())
	}
	return *p, nil
}

// endpointCache remembers parsed endpoints by their text, so that an
// engine's endpoint is parsed once rather than on every call.
type endpointCache struct {
	m *expiring.Map[string, *endpoint]
}

func newEndpointCache() endpointCache {
	return endpointCache{m: expiring.New[string, *endpoint](maxCached)}
}

func (c endpointCache) parse(s string) (*endpoint, error) {
	if ep, ok := c.m.Get(s, time.Now()); ok {
		return ep, nil
	}
	ep, err := parseEndpoint(s)
	if err != nil {
		return nil, err
	}
	c.m.Put(s, ep, forever, time.Now())
	return ep, nil
}

// hashable reports whether values of t can be map keys without a run-time
// panic: no interfaces, maps, slices or funcs inside.
func hashable(t reflect.Type) bool {
	if t == nil {
		return false
	}
	switch t.Kind() {
	case reflect.Interface, reflect.Map, reflect.Slice, reflect.Func:
		return false
	case reflect.Array:
		return hashable(t.Elem())
	case reflect.Struct:
		for i := range t.NumField() {
			if !hashable(t.Field(i).Type) {
				return false
			}
		}
	}
	return true
}

var _ core.Egress = (*Egress)(nil)
