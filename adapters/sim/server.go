package sim

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/conclavehq/conclave/core"
)

// maxBodyBytes caps a request body.
const maxBodyBytes = 8 << 20

// Server is a running simulated provider. Its methods are safe for
// concurrent use.
type Server struct {
	cfg      Config
	log      *slog.Logger
	url      string
	engines  map[string]EngineProfile // resolved per model id; others use fallback
	fallback EngineProfile
	srv      *http.Server
	cancel   context.CancelFunc // ends every handler's context
	sts      *stsStore
	stats    stats
	quality  QualityConfig // cfg.Quality with its defaults
	memo     memo          // the answers written, for the judges
	classes  classCache    // questions' buckets and task types

	attempts counters // per model and prompt: which attempt this call is
	retries  counters // per directive scope and prompt: for count=N

	mu        sync.Mutex
	cond      *sync.Cond
	closing   bool
	active    int
	serveDone chan struct{}
	closeOnce sync.Once
	closeErr  error
}

// Start listens on cfg.Addr and serves in the background until Close. ctx
// bounds only the start-up; it is not the server's lifetime.
func Start(ctx context.Context, cfg Config) (*Server, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", cfg.Addr)
	if err != nil {
		return nil, fmt.Errorf("sim: listening on %s: %w", cfg.Addr, err)
	}
	// Every answer looks its question up in the question bank. The lookup
	// is built here, once per process, and not by the first answer, which
	// would take its tens of milliseconds as latency nobody sampled.
	bankItems()
	s := &Server{
		cfg:       cfg,
		log:       cfg.Logger,
		url:       "http://" + ln.Addr().String(),
		engines:   map[string]EngineProfile{},
		fallback:  DefaultEngineProfile(cfg.Profile, ""),
		sts:       newSTSStore(),
		quality:   cfg.Quality.withDefaults(),
		serveDone: make(chan struct{}),
	}
	s.cond = sync.NewCond(&s.mu)
	for model := range builtinEngines {
		s.engines[model] = DefaultEngineProfile(cfg.Profile, model)
	}
	for model, override := range cfg.Engines {
		model = normalizeModel(model)
		base, ok := s.engines[model]
		if !ok {
			base = DefaultEngineProfile(cfg.Profile, model)
		}
		s.engines[model] = base.merge(override)
	}

	base, cancel := context.WithCancel(context.WithoutCancel(ctx))
	s.cancel = cancel
	protocols := new(http.Protocols)
	protocols.SetHTTP1(true)
	protocols.SetUnencryptedHTTP2(true) // lets a load test multiplex thousands of calls
	// No ReadTimeout or WriteTimeout: a call may rightly take minutes (the
	// seed profile's stragglers, error=timeout), and net/http would cancel
	// its context when either deadline passed. Bodies are capped instead.
	s.srv = &http.Server{
		Handler:           s.routes(),
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		BaseContext:       func(net.Listener) context.Context { return base },
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelDebug),
		Protocols:         protocols,
		HTTP2:             &http.HTTP2Config{MaxConcurrentStreams: 1000},
	}
	go func() {
		defer close(s.serveDone)
		if err := s.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Error("simulated provider stopped serving", slog.Any("error", err))
		}
	}()
	s.log.Info("simulated provider listening", slog.String("url", s.url),
		slog.String("profile", cfg.Profile), slog.Float64("time_scale", cfg.TimeScale), slog.Int64("seed", cfg.Seed))
	return s, nil
}

// ListenAndServe runs a simulated provider until ctx is done; it is what
// `conclave sim` runs.
func ListenAndServe(ctx context.Context, cfg Config) error {
	s, err := Start(ctx, cfg)
	if err != nil {
		return err
	}
	log := s.log
	for _, a := range []string{"openai", "anthropic", "gemini", "bedrock", "sts"} {
		log.Info("simulated provider endpoint", slog.String("adapter", a), slog.String("endpoint", s.Endpoint(a)))
	}
	<-ctx.Done()
	return s.Close()
}

// URL is the server's base URL, "http://127.0.0.1:port".
func (s *Server) URL() string { return s.url }

// Endpoint is the base URL for engines served through adapter ("openai",
// "anthropic", "gemini", "bedrock"; "sts" for the role-assumption
// endpoint); the adapters append their own paths. It is "" for an
// unknown adapter.
func (s *Server) Endpoint(adapter string) string {
	switch adapter {
	case "openai":
		return s.url + "/openai/v1"
	case "anthropic", "gemini", "bedrock", "sts":
		return s.url + "/" + adapter
	}
	return ""
}

// Stats is a snapshot of what the server has done so far.
func (s *Server) Stats() Stats { return s.stats.snapshot() }

// Close stops the server: it ends every call in progress (a hanging call
// returns nothing), closes every connection and waits for the handlers to
// return. It is safe to call twice.
func (s *Server) Close() error {
	s.closeOnce.Do(func() {
		if err := s.srv.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
			s.closeErr = fmt.Errorf("sim: closing: %w", err)
		}
		s.cancel() // wakes any handler still waiting
		<-s.serveDone
		s.mu.Lock()
		s.closing = true
		for s.active > 0 {
			s.cond.Wait()
		}
		s.mu.Unlock()
		s.log.Info("simulated provider stopped", slog.String("url", s.url))
	})
	return s.closeErr
}

// enter registers a handler; false means the server is closing.
func (s *Server) enter() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing {
		return false
	}
	s.active++
	return true
}

func (s *Server) leave() {
	s.mu.Lock()
	s.active--
	if s.active == 0 {
		s.cond.Broadcast()
	}
	s.mu.Unlock()
}

// tracked wraps a handler so that Close can wait for it.
func (s *Server) tracked(h http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.enter() {
			http.Error(w, "simulated provider is closing", http.StatusServiceUnavailable)
			return
		}
		defer s.leave()
		h(w, r)
	})
}

func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("POST /openai/v1/chat/completions", s.tracked(s.handleCall(openaiFormat{})))
	mux.Handle("POST /anthropic/v1/messages", s.tracked(s.handleCall(anthropicFormat{})))
	mux.Handle("POST /gemini/v1beta/models/{target}", s.tracked(s.handleCall(geminiFormat{})))
	mux.Handle("POST /bedrock/model/{modelId}/converse", s.tracked(s.handleCall(bedrockFormat{})))
	mux.Handle("/sts", s.tracked(s.handleSTS))
	mux.Handle("/sts/", s.tracked(s.handleSTS))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok\n") })
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusNotFound, nil, map[string]any{"error": map[string]any{
			"message": "the simulated provider has no route " + r.Method + " " + r.URL.Path, "type": "not_found", "code": http.StatusNotFound,
		}})
	})
	return mux
}

// engine is the resolved profile of a model id.
func (s *Server) engine(model string) EngineProfile {
	if p, ok := s.engines[model]; ok {
		return p
	}
	return s.fallback
}

// sleep waits for a simulated duration scaled by TimeScale; false means
// the request's context ended first (the client gave up or Close ran).
func (s *Server) sleep(ctx context.Context, d time.Duration) bool {
	wait := time.Duration(float64(d) * s.cfg.TimeScale)
	if wait <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// handleCall serves one model call in any wire format.
func (s *Server) handleCall(f format) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		s.stats.begin()
		model, outcome := s.serveCall(f, w, r, start)
		s.stats.end(model, outcome)
		// Never the prompt: only what the call was and how it ended.
		s.log.LogAttrs(r.Context(), slog.LevelDebug, "simulated call",
			slog.String("format", f.name()), slog.String("model", model),
			slog.String("outcome", string(outcome)), slog.Duration("elapsed", time.Since(start)))
		if r.Context().Err() != nil && (outcome == OutcomeTimeout || outcome == OutcomeCanceled) {
			// The call was abandoned (the client left, or Close ran): send
			// nothing, not even an empty 200.
			panic(http.ErrAbortHandler)
		}
	}
}

func (s *Server) serveCall(f format, w http.ResponseWriter, r *http.Request, start time.Time) (string, Outcome) {
	body, readErr := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBodyBytes))
	var c *call
	var decodeErr error
	if readErr == nil {
		c, decodeErr = f.decode(r, body)
	}
	model := f.pathModel(r)
	if c != nil && model == "" {
		model = c.model
	}
	model = normalizeModel(model)

	caller, denied := s.authenticate(f, r, body)
	if denied != nil {
		s.writeFailure(w, f, denied, nil)
		return model, OutcomeAuthRefused
	}
	s.stats.caller(caller)
	switch {
	case readErr != nil:
		s.writeFailure(w, f, &failure{class: core.ErrorBadRequest, message: "reading the request body: " + readErr.Error()}, nil)
		return model, OutcomeBadRequest
	case decodeErr != nil:
		s.writeFailure(w, f, &failure{class: core.ErrorBadRequest, message: decodeErr.Error()}, nil)
		return model, OutcomeBadRequest
	}
	c.model = model
	prof := s.engine(model)
	text := c.text()
	dirs, err := parseDirectives(text, model)
	if err != nil {
		s.writeFailure(w, f, &failure{class: core.ErrorBadRequest, message: err.Error()}, nil)
		return model, OutcomeBadRequest
	}

	// Every draw is keyed by what was asked, so a run is reproducible
	// whatever order concurrent calls arrive in.
	key := digest(text)
	attempt := s.attempts.next(model + "\x00" + key)
	c.attempt = attempt
	rng := seeded(s.cfg.Seed, "call", model, key, strconv.Itoa(attempt))
	u := rng.Float64()
	latency := prof.Latency.sample(rng)

	var fail core.ErrorClass
	switch {
	case dirs.failure != "":
		if dirs.count == 0 || s.retries.next(dirs.scope+"\x00"+key) < dirs.count {
			fail = dirs.failure
		}
	default:
		fail = pickFailure(prof.ErrorRates, u)
		if fail == "" && prof.ContextTokens > 0 && c.inputTokens() > prof.ContextTokens {
			fail = core.ErrorContextTooLong
		}
	}
	if dirs.hasDelay {
		latency = dirs.delay
	} else if fail != "" && fail != core.ErrorMalformed {
		latency = 0 // a refusal comes back at once
	}

	ctx := r.Context()
	if fail == core.ErrorTimeout {
		<-ctx.Done() // hang until the client gives up
		return model, OutcomeTimeout
	}
	if !s.sleep(ctx, latency) {
		return model, OutcomeCanceled
	}
	hdr := http.Header{}
	hdr.Set("X-Sim-Latency-Ms", strconv.FormatFloat(float64(latency)/float64(time.Millisecond), 'f', 3, 64))
	hdr.Set("X-Sim-Attempt", strconv.Itoa(attempt+1))
	switch fail {
	case "", core.ErrorMalformed:
	case errorTimeoutResponse:
		s.writeFailure(w, f, &failure{class: fail, message: "the model did not answer in time"}, hdr)
		return model, OutcomeTimeout
	default:
		fl := &failure{class: fail, message: defaultMessage(fail)}
		if fail == core.ErrorContextTooLong {
			fl.inputTokens, fl.limit = c.inputTokens(), prof.ContextTokens
			if fl.limit <= 0 || fl.limit >= fl.inputTokens { // forced by a directive
				fl.limit = max(fl.inputTokens-1, 1)
			}
			fl.message = fmt.Sprintf("prompt is too long: %d tokens > %d maximum", fl.inputTokens, fl.limit)
		}
		s.writeFailure(w, f, fl, hdr)
		return model, Outcome(fail)
	}

	rep := s.reply(r.Context(), c, prof, dirs)
	meta := responseMeta{
		id:      fmt.Sprintf("%016x%08x", rng.Uint64(), rng.Uint32()),
		created: start.Unix(),
		elapsed: time.Since(start),
	}
	out := f.success(c, rep, meta)
	if fail == core.ErrorMalformed {
		writeMalformed(w, hdr, out)
		return model, OutcomeMalformed
	}
	writeJSON(w, http.StatusOK, hdr, out)
	return model, OutcomeOK
}

// pickFailure draws a failure class from rates with the uniform u.
func pickFailure(rates map[core.ErrorClass]float64, u float64) core.ErrorClass {
	acc := 0.0
	for _, class := range randomFailures { // a stable order
		acc += rates[class]
		if u < acc {
			return class
		}
	}
	return ""
}

func defaultMessage(class core.ErrorClass) string {
	switch class {
	case core.ErrorRateLimited:
		return "rate limit reached for requests; please retry shortly"
	case core.ErrorOverloaded:
		return "the model is currently overloaded; please retry later"
	case core.ErrorAuthRefused:
		return "the credential was refused"
	case core.ErrorBadRequest:
		return "the request was rejected as invalid"
	}
	return string(class)
}

// authenticate checks the credential the format expects and returns who
// called, as Stats.Callers names it.
func (s *Server) authenticate(f format, r *http.Request, body []byte) (string, *failure) {
	if f.name() == "bedrock" {
		if fail := s.sts.verify(r, body, time.Now()); fail != nil {
			return "", fail
		}
		// verify found the issued credential by the signature's key id.
		m := authzRe.FindStringSubmatch(r.Header.Get("Authorization"))
		cred, _ := s.sts.lookup(m[1])
		return RoleCaller(cred.role), nil
	}
	key := f.apiKey(r)
	switch {
	case key == "":
		return "", &failure{class: core.ErrorAuthRefused, unauthenticated: true, message: "no API key was provided"}
	case s.cfg.APIKey != "" && key != s.cfg.APIKey && (s.cfg.AcceptKey == nil || !s.cfg.AcceptKey(key)):
		return "", &failure{class: core.ErrorAuthRefused, unauthenticated: true, message: "the API key is not valid"}
	}
	return KeyCaller(key), nil
}

func (s *Server) writeFailure(w http.ResponseWriter, f format, fail *failure, hdr http.Header) {
	status, extra, body := f.failure(fail)
	if hdr == nil {
		hdr = http.Header{}
	}
	for k, v := range extra {
		hdr[k] = v
	}
	if fail.class == core.ErrorRateLimited {
		// Retry-After in real seconds, scaled like every other delay.
		hdr.Set("Retry-After", strconv.Itoa(int(s.cfg.TimeScale+0.5)))
	}
	writeJSON(w, status, hdr, body)
}
