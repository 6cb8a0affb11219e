// Package config loads Conclave's deployment configuration: the built-in
// default (default.yaml, embedded), then an optional conclave.yaml on top,
// then environment variables. Errors name the offending field.
package config

import (
	"bytes"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/core/carrier"
)

//go:embed default.yaml
var defaultYAML []byte

// Default returns the built-in configuration.
func Default() []byte { return bytes.Clone(defaultYAML) }

// Config is a whole deployment's configuration.
type Config struct {
	// DataDir is the one place Conclave keeps local state: the managed
	// PostgreSQL cluster (DataDir/pg), the WebAssembly compilation cache
	// (DataDir/wasm-cache) and the key `serve --demo` reuses
	// (DataDir/demo-key). serve and the admin commands read the same
	// setting, so that both find the same cluster. Env CONCLAVE_DATA_DIR,
	// flag --data-dir. Defaults to ./.data.
	DataDir   string    `yaml:"data_dir"`
	Server    Server    `yaml:"server"`
	Database  Database  `yaml:"database"`
	Policy    Policy    `yaml:"policy"`
	Auth      Auth      `yaml:"auth"`
	Limits    Limits    `yaml:"limits"`
	Log       Log       `yaml:"log"`
	Tracing   Tracing   `yaml:"tracing"`
	Plugins   Plugins   `yaml:"plugins"`
	Simulator Simulator `yaml:"simulator"`
	Egress    Egress    `yaml:"egress"`
	Jobs      Jobs      `yaml:"jobs"`
	Alerts    Alerts    `yaml:"alerts"`
	Genie     Genie     `yaml:"genie"`
	People    People    `yaml:"people"`
	Engines   []Engine  `yaml:"engines"`
	Modes     []Mode    `yaml:"modes"`
	// Plans are the plans organisations are on (`conclave org plan`), each
	// by name: what a connected app acting for a person of the
	// organisation may call and spend (docs/plans.md). An organisation on
	// a plan not listed here gets the lowest tier and no allowance through
	// connected apps; API keys and signed-in people are not bound by
	// plans. A file that sets plans replaces the whole list. Defaults to
	// free, plus, standard, pro and enterprise (default.yaml).
	Plans []Plan `yaml:"plans"`
	// Judges are the judges of test runs and certification: each a judge
	// name the spec uses and the engine that plays it. A file that sets
	// judges replaces the whole list (judges: [] for none). Defaults to the
	// spec's three judges, nova_pro, mistral_large and llama4_maverick, on
	// the simulated engines sim/nova-pro, sim/mistral-large and
	// sim/llama4-maverick; a file that sets engines without those and does
	// not set judges keeps only the judges whose engines it keeps. A server
	// missing a judge still serves and refuses the launches that need it.
	Judges []Judge `yaml:"judges"`
}

// Plan is one plan's configuration; see core.Plan.
type Plan struct {
	// Name is the plan's name, as organisations are put on it: lower-case
	// letters, digits, '-' and '_', unique.
	Name string `yaml:"name"`
	// MaxTier is the highest tier a connected app may ask for: experience
	// (also written free), plus or pro. Required.
	MaxTier string `yaml:"max_tier"`
	// Modes are the ids or tickers of the modes open to connected apps on
	// the plan. Defaults to [], every mode the organisation may use.
	Modes []string `yaml:"modes"`
	// MonthlyAllowanceUSD is what one person may spend through connected
	// apps in a calendar month (UTC), at real cost, from the
	// organisation's balance; a decimal number of dollars. 0 allows
	// nothing. Defaults to 0.
	MonthlyAllowanceUSD USD `yaml:"monthly_allowance_usd"`
	// Concurrency is how many deliberations one person may have in flight
	// through connected apps, across replicas (beside the organisation's
	// own limit), 1 to 1000. Defaults to 2.
	Concurrency int `yaml:"concurrency"`
	// RPM is one person's requests per minute through connected apps.
	// Defaults to 60.
	RPM int `yaml:"rpm"`
}

// Judge maps a judge name to the engine that plays it.
type Judge struct {
	// Name is the judge's name as runs and certificates report it
	// ("nova_pro"): lower-case letters, digits and underscores, starting
	// with a letter, unique.
	Name string `yaml:"name"`
	// Engine is the id of a configured engine. No two judges' engines may
	// share a family.
	Engine string `yaml:"engine"`
}

// JudgeEngine returns the engine id of the judge called name.
func (c *Config) JudgeEngine(name string) (string, bool) {
	for _, j := range c.Judges {
		if j.Name == name {
			return j.Engine, true
		}
	}
	return "", false
}

// Server configures the HTTP listeners.
type Server struct {
	// Addr is the public listen address: the API, /healthz and /readyz.
	// Env CONCLAVE_ADDR. Defaults to 127.0.0.1:8080.
	Addr string `yaml:"addr"`
	// OperatorAddr is the operator listen address: /metrics, /healthz and a
	// /readyz that names its cause. It asks for no key, so keep it where only
	// operators reach it. OperatorOff ("off") disables it; "" is an error,
	// so that a blank value never turns it off by accident. Env
	// CONCLAVE_OPERATOR_ADDR. Defaults to 127.0.0.1:8081.
	OperatorAddr string `yaml:"operator_addr"`
	// OperatorPublic allows OperatorAddr off loopback (any host but
	// 127.0.0.0/8, ::1 and localhost, and an empty host, which binds every
	// interface): without it such an address is refused, since whoever
	// reaches it reads the metrics and the readiness cause without a key.
	// Set it only where nobody but the monitoring network reaches that
	// address. Env CONCLAVE_OPERATOR_PUBLIC (true or false), flag
	// --operator-public. Defaults to false.
	OperatorPublic bool `yaml:"operator_public"`
	// PublicURL is the one origin clients and browsers reach the service
	// at ("https://conclave.example.com"): the MCP tool server names
	// PublicURL+"/mcp" as its resource in its protected-resource document
	// and 401 challenge, which clients check against the URL they used;
	// session cookies, the passkey relying party (its host) and every link
	// Conclave prints use it, and a page asked for on another host name is
	// redirected to it. It is never taken from a request. Env
	// CONCLAVE_PUBLIC_URL. Defaults to "": http://localhost and the public
	// listener's bound port — localhost, not 127.0.0.1, because WebAuthn
	// refuses an IP address as relying-party id.
	PublicURL string `yaml:"public_url"`
	// TrustedProxies are the CIDRs of the reverse proxies in front of
	// Conclave: only a request whose peer is one of them has its
	// X-Forwarded-For believed, and the client address (sign-in limits,
	// the audit trail) is then the right-most address in it that is not a
	// trusted proxy. Defaults to [] (the peer is the client).
	TrustedProxies []string `yaml:"trusted_proxies"`
	// H2C also serves unencrypted HTTP/2 (prior knowledge) on the public
	// listener, beside HTTP/1.1, for a proxy in front that speaks it to its
	// backends (Envoy, Caddy's h2c transport): its calls then share a few
	// connections instead of holding one each. TLS stays the proxy's; the
	// operator listener is unaffected. Defaults to false.
	H2C bool `yaml:"h2c"`
	// MaxBodyBytes caps request bodies; larger ones get 413 request_too_large.
	// Defaults to 1 MiB.
	MaxBodyBytes int64 `yaml:"max_body_bytes"`
	// ReadHeaderTimeout defaults to 10s.
	ReadHeaderTimeout time.Duration `yaml:"read_header_timeout"`
	// ReadTimeout bounds reading a whole request. Defaults to 30s.
	ReadTimeout time.Duration `yaml:"read_timeout"`
	// WriteTimeout bounds a whole response; deliberations run up to the
	// spec's 300 s client timeout. Defaults to 330s.
	WriteTimeout time.Duration `yaml:"write_timeout"`
	// IdleTimeout defaults to 120s.
	IdleTimeout time.Duration `yaml:"idle_timeout"`
	// ShutdownTimeout is how long a stopping server drains: it takes no new
	// calls and lets running deliberations finish, bill and store their
	// answers; past it the rest are stopped unbilled and connections
	// closed. Defaults to 30s.
	ShutdownTimeout time.Duration `yaml:"shutdown_timeout"`
	// MemoryLimitMiB is a soft limit on the process's memory, in MiB: the
	// Go runtime collects garbage more often as the heap nears it, trading
	// CPU for a lower peak. 0 leaves the runtime's default (or GOMEMLIMIT
	// from the environment). Defaults to 0.
	MemoryLimitMiB int `yaml:"memory_limit_mib"`
	// HeapFloorMiB is the heap size, in MiB, below which the Go collector
	// does not run (package heapfloor): a gateway's live heap is a few
	// MiB, and GOGC alone collects it every few MiB of allocation. Once
	// the live heap's own target passes it, GOGC applies unchanged; a
	// memory limit still bounds the heap. 0 leaves GOGC's rule alone, as
	// does GOGC=off. Defaults to 64.
	HeapFloorMiB int `yaml:"heap_floor_mib"`
}

// Origin is the service's one origin (server.public_url) given the public
// listener's bound address: the configured URL without a trailing slash,
// else http://localhost and the bound port.
func (s *Server) Origin(bound string) string {
	if s.PublicURL != "" {
		return strings.TrimRight(s.PublicURL, "/")
	}
	_, port, err := net.SplitHostPort(bound)
	if err != nil {
		return "http://" + bound
	}
	return "http://localhost:" + port
}

// Proxies are the parsed server.trusted_proxies (validated by Validate).
func (s *Server) Proxies() []netip.Prefix {
	out := make([]netip.Prefix, 0, len(s.TrustedProxies))
	for _, c := range s.TrustedProxies {
		if p, err := parseProxy(c); err == nil {
			out = append(out, p)
		}
	}
	return out
}

// parseProxy reads a CIDR, or a bare address as a one-address prefix.
func parseProxy(c string) (netip.Prefix, error) {
	if a, err := netip.ParseAddr(c); err == nil {
		return netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen()), nil
	}
	p, err := netip.ParsePrefix(c)
	if err != nil {
		return netip.Prefix{}, err
	}
	return p.Masked(), nil
}

// People configures sign-in, sessions and invitations (docs/people.md).
type People struct {
	// SessionIdle ends a session unused for this long. Defaults to 12h.
	SessionIdle time.Duration `yaml:"session_idle"`
	// SessionMaxAge ends a session this long after its sign-in, used or
	// not. Defaults to 168h (7 days).
	SessionMaxAge time.Duration `yaml:"session_max_age"`
	// LinkTTL is how long an invitation or set-up link can be used.
	// Defaults to 168h (7 days).
	LinkTTL time.Duration `yaml:"link_ttl"`
	// MaxConcurrentHashes bounds the password hashes computed at once.
	// Defaults to 2.
	MaxConcurrentHashes int `yaml:"max_concurrent_hashes"`
	// AccountAttempts and AddressAttempts are the sign-in attempts one
	// account (by email) and one client address may make in
	// AttemptWindow. Default to 10 and 50 in 15m.
	AccountAttempts int           `yaml:"account_attempts"`
	AddressAttempts int           `yaml:"address_attempts"`
	AttemptWindow   time.Duration `yaml:"attempt_window"`
	// PersonRPM is the requests per minute of a signed-in person's calls
	// made from the pages. Defaults to 60.
	PersonRPM int `yaml:"person_rpm"`
	// Argon2 are the cost parameters of new password hashes (stored with
	// each hash, so raising them leaves existing ones valid). Default to
	// time 2, memory_kib 19456, threads 1.
	Argon2 Argon2 `yaml:"argon2"`
}

// Argon2 are argon2id's cost parameters.
type Argon2 struct {
	Time      uint32 `yaml:"time"`
	MemoryKiB uint32 `yaml:"memory_kib"`
	Threads   uint8  `yaml:"threads"`
}

// OperatorOff as server.operator_addr disables the operator listener.
const OperatorOff = "off"

// WasmCacheOff as plugins.wasm_cache_dir keeps the WebAssembly compilation
// cache in memory.
const WasmCacheOff = "off"

// ClusterDir is the managed PostgreSQL cluster's directory: pg in the data
// directory.
func (c *Config) ClusterDir() string { return filepath.Join(c.DataDir, "pg") }

// WasmCache is the WebAssembly compilation cache's directory: the one
// plugins.wasm_cache_dir names, else wasm-cache in the data directory; ""
// when it is off (in memory).
func (c *Config) WasmCache() string {
	switch c.Plugins.WasmCacheDir {
	case WasmCacheOff:
		return ""
	case "":
		return filepath.Join(c.DataDir, "wasm-cache")
	}
	return c.Plugins.WasmCacheDir
}

// Database configures PostgreSQL.
type Database struct {
	// URL is a PostgreSQL connection string. Env DATABASE_URL. Defaults to
	// "", which means: manage a local cluster in the data directory (see
	// Config.ClusterDir).
	URL string `yaml:"url"`
	// RetiredDataDir is the former database.data_dir, read only to refuse
	// it with a pointer to data_dir: two settings locating one cluster let
	// serve and the admin commands disagree about where it is.
	RetiredDataDir string `yaml:"data_dir"`
	// MaxConns caps the connection pool. Defaults to 20.
	MaxConns int32 `yaml:"max_conns"`
}

// Policy configures the OPA policies.
type Policy struct {
	// Dir replaces the embedded policies with the .rego files in it.
	// Defaults to "" (the embedded set).
	Dir string `yaml:"dir"`
}

// Auth configures key authentication.
type Auth struct {
	// KeyCacheTTL is how long a key lookup is cached (by hash, never the
	// secret); a revocation takes effect within it. At most 10s. Defaults to 3s.
	KeyCacheTTL time.Duration `yaml:"key_cache_ttl"`
	// GrantCacheTTL is how long a connected app's grant check is reused
	// per replica; a revocation, or its person leaving the organisation,
	// takes effect within it. 0 turns caching off. At most 30s. Defaults
	// to 10s.
	GrantCacheTTL time.Duration `yaml:"grant_cache_ttl"`
	// AuthorizationServers are the issuer URLs of the OAuth authorization
	// servers whose access tokens the MCP tool server accepts, as its
	// protected-resource document lists them. Defaults to [] — the public
	// URL (server.public_url) as the one issuer, and Conclave's own
	// authorization server on; naming another server turns it off.
	AuthorizationServers []string `yaml:"authorization_servers"`
	// RegisteredClientRetention is how long an app that registered itself
	// (dynamic client registration) is kept unused; the oauth sweep job
	// deletes it after, and the app registers again. At least 1h. Defaults
	// to 720h (30 days).
	RegisteredClientRetention time.Duration `yaml:"registered_client_retention"`
}

// Limits are the per-key and per-organisation defaults a key can override.
type Limits struct {
	// RPM is requests per minute per key. Defaults to 60.
	RPM int `yaml:"rpm"`
	// RateLease is the most requests of a key's rate one replica leases
	// from PostgreSQL at once, for the requests that only spend the rate
	// (reads, self-answered tools); 1 turns leasing off (a statement per
	// request). A key of under 16 requests a minute is never leased more
	// than one. Defaults to 32.
	RateLease int `yaml:"rate_lease"`
	// RateLeaseTTL is how long a replica may spend a lease; what is left
	// goes back with its next lease. Defaults to 1s.
	RateLeaseTTL time.Duration `yaml:"rate_lease_ttl"`
	// Concurrency is calls in flight per organisation. Defaults to 5.
	Concurrency int `yaml:"concurrency"`
	// MaxInputTokens is the per-request input limit. Defaults to 8000.
	MaxInputTokens int `yaml:"max_input_tokens"`
	// CallCeilingUSD is the floor of a call's bill ceiling (the ceiling is
	// the higher of it and the mode's price). Defaults to 2.00.
	CallCeilingUSD USD `yaml:"call_ceiling_usd"`
	// ActivationAllowanceUSD is what an unverified organisation may spend
	// before calls answer verification_required. Defaults to 10.00.
	ActivationAllowanceUSD USD `yaml:"activation_allowance_usd"`
	// Lease is how long a call's hold, concurrency slot and idempotency
	// claim live unless the call's process renews them (every third of
	// it); a replica that dies lets them lapse. Defaults to 30s.
	Lease time.Duration `yaml:"lease"`
	// ConcurrencyRetryAfter is the Retry-After of
	// concurrency_limit_exceeded, and of request_in_progress for a mode
	// with neither a finished deliberation yet to learn its latency from
	// nor a straggler deadline to estimate it from. Defaults to 5s.
	ConcurrencyRetryAfter time.Duration `yaml:"concurrency_retry_after"`
	// DeliberationTimeout bounds one deliberation whether or not its caller
	// still waits: a caller that leaves does not stop it, this does (the
	// call is then not billed). Defaults to 300s, the client timeout the
	// spec recommends.
	DeliberationTimeout time.Duration `yaml:"deliberation_timeout"`
	// RepeatWait is how long a repeat of an idempotency key whose call runs
	// on this replica waits for that call to end — and then answers with
	// its replay — before it answers request_in_progress. 0s turns the wait
	// off. Defaults to 20s.
	RepeatWait time.Duration `yaml:"repeat_wait"`
	// TestLaunchesPerDay is how many test runs (POST /v1/tests, dry runs
	// aside) an organisation may launch in any 24 hours; past it a launch
	// is test_launch_limit_exceeded. Defaults to 20.
	TestLaunchesPerDay int `yaml:"test_launches_per_day"`
	// CertifyLaunchesPerDay is how many certifications an organisation may
	// launch in any 24 hours; past it a launch is
	// certify_launch_limit_exceeded. Defaults to 3.
	CertifyLaunchesPerDay int `yaml:"certify_launches_per_day"`
	// ModesPerOrg is how many modes an organisation may hold; past it a new
	// mode is conflict (a new draft of one it holds is not held back).
	// Defaults to 100.
	ModesPerOrg int `yaml:"modes_per_org"`
}

// Log configures structured logging.
type Log struct {
	// Level is debug, info, warn or error. Defaults to info.
	Level string `yaml:"level"`
	// Format is json or text. Defaults to json.
	Format string `yaml:"format"`
}

// Tracing configures OpenTelemetry traces (docs/observability.md). They
// are off unless an OTLP endpoint is set, here or by the standard
// environment, which wins: OTEL_EXPORTER_OTLP_TRACES_ENDPOINT or
// OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_TRACES_SAMPLER and
// OTEL_TRACES_SAMPLER_ARG, OTEL_SERVICE_NAME, and
// OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT; OTEL_SDK_DISABLED=true
// or OTEL_TRACES_EXPORTER=none turn them off.
type Tracing struct {
	// Endpoint is the OTLP/HTTP collector's base URL; spans go to
	// {endpoint}/v1/traces. Defaults to "" (tracing off).
	Endpoint string `yaml:"endpoint"`
	// Sampler is always_on, always_off, traceidratio or one of them
	// prefixed parentbased_ (OTEL_TRACES_SAMPLER's values). Defaults to
	// parentbased_always_on.
	Sampler string `yaml:"sampler"`
	// SamplerArg is traceidratio's ratio, 0 to 1. Defaults to 1.
	SamplerArg float64 `yaml:"sampler_arg"`
	// TrustIncoming lets a caller's traceparent decide whether its call is
	// sampled (the parentbased_ samplers). Off, a caller's trace is still
	// continued as the parent, but this server's sampler decides, so that
	// a caller cannot have every call traced. Defaults to false.
	TrustIncoming bool `yaml:"trust_incoming"`
	// ServiceName is the service.name of every span. Defaults to conclave.
	ServiceName string `yaml:"service_name"`
	// CaptureContent puts prompts and answers on the spans. Defaults to
	// false.
	CaptureContent bool `yaml:"capture_content"`
}

// TracingSamplers are the values of tracing.sampler (and of
// OTEL_TRACES_SAMPLER that Conclave accepts).
var TracingSamplers = []string{"always_on", "always_off", "traceidratio",
	"parentbased_always_on", "parentbased_always_off", "parentbased_traceidratio"}

func (t Tracing) validate() error {
	fe := fieldErrors("tracing.")
	switch {
	case !slices.Contains(TracingSamplers, t.Sampler):
		return fe("sampler", "%q is not one of %s", t.Sampler, strings.Join(TracingSamplers, ", "))
	case !(t.SamplerArg >= 0 && t.SamplerArg <= 1):
		return fe("sampler_arg", "must be between 0 and 1")
	case t.Endpoint != "" && !strings.HasPrefix(t.Endpoint, "http://") && !strings.HasPrefix(t.Endpoint, "https://"):
		return fe("endpoint", "must be an http:// or https:// URL")
	case t.ServiceName == "":
		return fe("service_name", "required")
	}
	return nil
}

// Plugins configures the plugin carriers.
type Plugins struct {
	// Manifest is the plugin manifest (plugins.yaml) listing the WebAssembly
	// and go-plugin plugins engines may name, each pinned by sha256.
	// Defaults to "" (native adapters only).
	Manifest string `yaml:"manifest"`
	// WasmCacheDir holds wazero's compilation cache; WasmCacheOff keeps it
	// in memory. Read it through Config.WasmCache. Defaults to "", the
	// data directory's wasm-cache.
	WasmCacheDir string `yaml:"wasm_cache_dir"`
	// WasmPoolSize is the number of warm instances per module. Defaults to
	// 0, one per core.
	WasmPoolSize int `yaml:"wasm_pool_size"`
	// WasmMemoryLimitMiB caps a module instance's memory. Defaults to 64.
	WasmMemoryLimitMiB int `yaml:"wasm_memory_limit_mib"`
	// CallTimeout bounds one call into a plugin. Defaults to 5s.
	CallTimeout time.Duration `yaml:"call_timeout"`
}

// Simulator configures the in-process simulated provider.
type Simulator struct {
	// Profile is quick (a panel answers in a few seconds) or seed (the
	// spec's published latency). Defaults to quick.
	Profile string `yaml:"profile"`
	// TimeScale multiplies every simulated latency. Defaults to 1.
	TimeScale float64 `yaml:"time_scale"`
	// Seed makes the simulation repeatable. Defaults to 1.
	Seed int64 `yaml:"seed"`
	// Quality is the quality model of the simulated answers
	// (docs/simulator.md#quality): what the simulated judges of test runs
	// and certification compare. Defaults to no lift.
	Quality SimQuality `yaml:"quality"`
}

// SimQuality is the simulator's quality model (sim.QualityConfig).
type SimQuality struct {
	// AnswerNoise is the standard deviation of an answer's quality around
	// its engine's skill; negative means none. Defaults to 1 (0 also
	// means the default).
	AnswerNoise float64 `yaml:"answer_noise"`
	// SynthesisLift is added to the quality of a panel's synthesis:
	// positive for deliberation that improves on its seats. Defaults to 0.
	SynthesisLift float64 `yaml:"synthesis_lift"`
	// SynthesisBest is the weight, 0 to 1, of the best seat answer in a
	// synthesis's quality (the rest is the seats' mean). Defaults to 0.
	SynthesisBest float64 `yaml:"synthesis_best"`
	// Difficulty is, per bucket, how hard the question bank's verifiable
	// items are for simulated answers (sim.Difficulty): an answer of
	// quality q is right with probability σ(q − difficulty). Defaults to
	// sim.DefaultDifficulty, set to the certification bands, when absent.
	Difficulty *SimDifficulty `yaml:"difficulty"`
}

// SimDifficulty is sim.Difficulty: one value per bucket, each −10 to 10.
type SimDifficulty struct {
	Light  float64 `yaml:"light"`
	Medium float64 `yaml:"medium"`
	Hard   float64 `yaml:"hard"`
}

// Egress configures the layer that sends provider requests.
type Egress struct {
	// AllowHosts lists the hosts provider requests may go to ("host",
	// "host:port" or "*.example.com"). Defaults to [] — the hosts of the
	// configured engine endpoints.
	AllowHosts []string `yaml:"allow_hosts"`
	// DefaultTimeout bounds one attempt when an engine sets none. Defaults
	// to 120s.
	DefaultTimeout time.Duration `yaml:"default_timeout"`
	// MaxResponseBytes caps a provider response. Defaults to 8 MiB.
	MaxResponseBytes int64 `yaml:"max_response_bytes"`
	// MaxAttempts counts the first try and the retries of retryable
	// failures. Defaults to 3.
	MaxAttempts int `yaml:"max_attempts"`
	// BaseBackoff is the first retry's back-off, doubled per attempt with
	// jitter. Defaults to 250ms.
	BaseBackoff time.Duration `yaml:"base_backoff"`
	// H2C speaks unencrypted HTTP/2 (prior knowledge) to http:// engine
	// endpoints, multiplexing their calls over a few connections, with no
	// goroutine per call beyond its caller's (plugins/egress/h2c); the
	// endpoints must accept it (`conclave sim` does). https endpoints are
	// unaffected. Defaults to false.
	H2C bool `yaml:"h2c"`
}

// Alerts configures spend alerts' background work (core/alerts,
// internal/jobs; docs/dashboard.md#spend-alerts).
type Alerts struct {
	// Interval is how often the alert check compares each organisation's
	// month-to-date spend and balance with its thresholds. Defaults to 1m.
	Interval time.Duration `yaml:"interval"`
	// WebhookAttempts is how many times a crossing's webhook post is tried
	// before it is given up. Defaults to 8.
	WebhookAttempts int `yaml:"webhook_attempts"`
	// WebhookTimeout bounds one webhook post, connection included.
	// Defaults to 10s.
	WebhookTimeout time.Duration `yaml:"webhook_timeout"`
	// AllowLoopbackWebhooks is for tests only: it lets a webhook URL be
	// http and name a loopback address, which is otherwise refused (posts
	// go only to public addresses). It is refused unless server.addr
	// listens on a loopback address. Defaults to false.
	AllowLoopbackWebhooks bool `yaml:"allow_loopback_webhooks"`
}

func (a *Alerts) validate(serverAddr string) error {
	fe := fieldErrors("alerts.")
	switch {
	case a.Interval < time.Second:
		return fe("interval", "must be at least 1s")
	case a.WebhookAttempts < 1 || a.WebhookAttempts > 25:
		return fe("webhook_attempts", "must be 1 to 25")
	case a.WebhookTimeout < time.Second || a.WebhookTimeout > time.Minute:
		return fe("webhook_timeout", "must be 1s to 1m")
	}
	if a.AllowLoopbackWebhooks {
		host, _, err := net.SplitHostPort(serverAddr)
		ip, perr := netip.ParseAddr(host)
		if err != nil || (host != "localhost" && (perr != nil || !ip.IsLoopback())) {
			return fe("allow_loopback_webhooks", "is for tests only, and only with server.addr on a loopback address")
		}
	}
	return nil
}

// Genie configures the mode assistant (core/genie; docs/genie.md): its
// conversations and its quotes.
type Genie struct {
	// ChatHistory keeps the assistant's conversations in PostgreSQL, per
	// principal and mode; quotes (ask_genie's, approve_quote) need it.
	// Off, answers still work, ask_genie gives quote_unavailable:
	// chat_history_required and approve_quote 503 chat_history_required.
	// Defaults to true.
	ChatHistory bool `yaml:"chat_history"`
	// HistoryRetention is how long a turn of a conversation is kept; the
	// hourly genie_history_reap job deletes older ones. At least 1h.
	// Defaults to 720h (30 days).
	HistoryRetention time.Duration `yaml:"history_retention"`
	// QuoteTTL is how long a quote may be approved. 1m to 24h. Defaults
	// to 15m.
	QuoteTTL time.Duration `yaml:"quote_ttl"`
}

// fieldErrors makes the errors of one section's fields: with prefix
// "server.", fe("addr", "required") is a core.FieldError naming
// server.addr. The message is a fmt format.
func fieldErrors(prefix string) func(field, format string, args ...any) error {
	return func(field, format string, args ...any) error {
		return &core.FieldError{Field: prefix + field, Msg: fmt.Sprintf(format, args...)}
	}
}

// validate checks the server's fields.
func (s *Server) validate() error {
	fe := fieldErrors("server.")
	switch {
	case s.Addr == "":
		return fe("addr", "required")
	case s.MaxBodyBytes < 1024:
		return fe("max_body_bytes", "must be at least 1024")
	case s.MemoryLimitMiB < 0:
		return fe("memory_limit_mib", "cannot be negative")
	case s.HeapFloorMiB < 0:
		return fe("heap_floor_mib", "cannot be negative")
	case s.ReadHeaderTimeout <= 0:
		return fe("read_header_timeout", "must be positive")
	case s.ReadTimeout <= 0:
		return fe("read_timeout", "must be positive")
	case s.WriteTimeout <= 0:
		return fe("write_timeout", "must be positive")
	case s.IdleTimeout <= 0:
		return fe("idle_timeout", "must be positive")
	case s.ShutdownTimeout <= 0:
		return fe("shutdown_timeout", "must be positive")
	}
	if err := s.validateOperatorAddr(); err != nil {
		return err
	}
	if s.PublicURL != "" {
		if err := carrier.CheckBaseURL(s.PublicURL); err != nil {
			return fe("public_url", "%v", err)
		}
	}
	for i, cidr := range s.TrustedProxies {
		if _, err := parseProxy(cidr); err != nil {
			return fe(fmt.Sprintf("trusted_proxies[%d]", i), "%q is not a CIDR (10.0.0.0/8) or an address", cidr)
		}
	}
	return nil
}

func (l *Limits) validate() error {
	fe := fieldErrors("limits.")
	switch {
	case l.RPM < 1:
		return fe("rpm", "must be at least 1")
	case l.Concurrency < 1:
		return fe("concurrency", "must be at least 1")
	case l.MaxInputTokens < 1:
		return fe("max_input_tokens", "must be at least 1")
	case l.ActivationAllowanceUSD <= 0:
		return fe("activation_allowance_usd", "must be positive")
	case l.Lease < time.Second:
		return fe("lease", "must be at least 1s")
	case l.RateLease < 1 || l.RateLease > 1024:
		return fe("rate_lease", "must be between 1 (off) and 1024")
	case l.RateLeaseTTL < 10*time.Millisecond || l.RateLeaseTTL > 10*time.Second:
		return fe("rate_lease_ttl", "must be between 10ms and 10s")
	case l.ConcurrencyRetryAfter < time.Second:
		return fe("concurrency_retry_after", "must be at least 1s")
	case l.DeliberationTimeout < time.Second:
		return fe("deliberation_timeout", "must be at least 1s")
	case l.RepeatWait < 0 || l.RepeatWait > l.DeliberationTimeout:
		return fe("repeat_wait", "must be between 0s (off) and limits.deliberation_timeout")
	case l.CallCeilingUSD <= 0:
		return fe("call_ceiling_usd", "must be positive")
	case l.TestLaunchesPerDay < 1:
		return fe("test_launches_per_day", "must be at least 1")
	case l.CertifyLaunchesPerDay < 1:
		return fe("certify_launches_per_day", "must be at least 1")
	case l.ModesPerOrg < 1:
		return fe("modes_per_org", "must be at least 1")
	}
	return nil
}

func (g *Genie) validate() error {
	fe := fieldErrors("genie.")
	switch {
	case g.HistoryRetention < time.Hour:
		return fe("history_retention", "must be at least 1h")
	case g.QuoteTTL < time.Minute || g.QuoteTTL > 24*time.Hour:
		return fe("quote_ttl", "must be 1m to 24h")
	}
	return nil
}

// Jobs configures the background jobs every replica runs on River
// (internal/jobs; docs/operations.md).
type Jobs struct {
	// TrialPeriod is how long after an organisation's creation the unused
	// part of its trial credit is deducted. Defaults to 720h (30 days).
	TrialPeriod time.Duration `yaml:"trial_period"`
	// TrialExpiryInterval is how often trial expiry runs. Defaults to 5m.
	TrialExpiryInterval time.Duration `yaml:"trial_expiry_interval"`
	// SweepInterval is how often the hold sweeper runs. Defaults to 30s.
	SweepInterval time.Duration `yaml:"sweep_interval"`
	// HoldGrace is how long past its expiry a call's hold, slot or claim
	// lease must be before the sweeper treats the call as dead. Defaults
	// to 30s.
	HoldGrace time.Duration `yaml:"hold_grace"`
	// ReapInterval is how often the idempotency reaper runs. Defaults to 1h.
	ReapInterval time.Duration `yaml:"reap_interval"`
	// SpendInterval is how often the spend job adds new journal postings
	// to the daily spend sums the dashboard reads. Defaults to 15s.
	SpendInterval time.Duration `yaml:"spend_interval"`
	// SpendGrace is how long the spend job waits on a gap in the posting
	// ids (a transaction that may still commit) before taking it for a
	// rollback. Defaults to 30s.
	SpendGrace time.Duration `yaml:"spend_grace"`
	// IdempotencyRetention is how long a finished idempotency claim (and
	// so a replay with its key) is kept. Defaults to 24h.
	IdempotencyRetention time.Duration `yaml:"idempotency_retention"`
	// StopTimeout is how long a stopping server lets running jobs finish
	// before cancelling them (River retries them). Defaults to 10s.
	StopTimeout time.Duration `yaml:"stop_timeout"`
	// BenchWorkers is how many benchmark questions (test runs and
	// certifications) one replica works at once, on a queue of their own;
	// they take none of the organisations' concurrency slots. Defaults
	// to 32: a question mostly waits on providers (a question's answers
	// and judgments use well under a millisecond of the gateway's CPU per
	// second of waiting), and 32 at once finish a certification on the
	// seed latency profile in about 5 minutes (docs/benchmarks.md).
	BenchWorkers int `yaml:"bench_workers"`
	// BenchQuestionTime is about how long one benchmark question takes
	// (its two answers, then its slowest judgment): with BenchWorkers, what
	// a launch's estimated_minutes is worked out from. Defaults to 1m, a
	// question's mean on the seed latency profile.
	BenchQuestionTime time.Duration `yaml:"bench_question_time"`
	// BenchTimeout bounds one run of a benchmark question's job: its two
	// answers and every judgment. A run past it is cancelled and retried.
	// Defaults to 15m.
	BenchTimeout time.Duration `yaml:"bench_timeout"`
	// BenchAttempts is how many times a benchmark question's job runs
	// before the question is given up on (its batch finishes without it).
	// Defaults to 5.
	BenchAttempts int `yaml:"bench_attempts"`
}

// Engine is one engine's configuration; see core.Engine.
type Engine struct {
	ID               string        `yaml:"id"`
	Family           string        `yaml:"family"`
	MaxTier          string        `yaml:"max_tier"`
	Adapter          string        `yaml:"adapter"`
	Endpoint         string        `yaml:"endpoint"`
	Credential       string        `yaml:"credential"`
	InputUSDPerMTok  USD           `yaml:"input_usd_per_mtok"`
	OutputUSDPerMTok USD           `yaml:"output_usd_per_mtok"`
	Model            string        `yaml:"model"`
	Carrier          string        `yaml:"carrier"`
	Plugin           string        `yaml:"plugin"`
	Timeout          time.Duration `yaml:"timeout"`
	AWSRegion        string        `yaml:"aws_region"`
	AWSRoleARN       string        `yaml:"aws_role_arn"`
	AWSExternalID    string        `yaml:"aws_external_id"`
	STSEndpoint      string        `yaml:"sts_endpoint"`
}

// Mode is one mode's configuration; see core.Mode.
type Mode struct {
	Key                  string                 `yaml:"key"`
	ID                   string                 `yaml:"id"`
	Ticker               string                 `yaml:"ticker"`
	Name                 string                 `yaml:"name"`
	Description          string                 `yaml:"description"`
	UseWhen              string                 `yaml:"use_when"`
	PriceTier            string                 `yaml:"price_tier"`
	Plans                []string               `yaml:"plans"`
	IncludesDeliberation bool                   `yaml:"includes_deliberation"`
	Seats                map[string][]core.Seat `yaml:"seats"`
	Staff                map[string]core.Staff  `yaml:"staff"`
	Critique             string                 `yaml:"critique"`
	MaxRounds            int                    `yaml:"max_rounds"`
	Quorum               int                    `yaml:"quorum"`
	StragglerDeadline    time.Duration          `yaml:"straggler_deadline"`
	ExpressThreshold     float64                `yaml:"express_threshold"`
	HedgePercentile      float64                `yaml:"hedge_percentile"`
	CostCeilingUSD       USD                    `yaml:"cost_ceiling_usd"`
	Pricing              Pricing                `yaml:"pricing"`
}

// Pricing is a mode's surcharges in dollars.
type Pricing struct {
	SurchargeByDepth map[string]USD `yaml:"surcharge_by_depth"`
	SurchargeUSD     *USD           `yaml:"surcharge_usd"`
	ExpressUSD       *USD           `yaml:"express_usd"`
}

// USD is a dollar amount read exactly from its YAML text.
type USD core.Micros

// UnmarshalYAML implements yaml.Unmarshaler.
func (u *USD) UnmarshalYAML(n *yaml.Node) error {
	m, err := core.ParseUSD(n.Value)
	if err != nil {
		return fmt.Errorf("line %d: %w", n.Line, err)
	}
	*u = USD(m)
	return nil
}

// Builtin returns the validated built-in configuration, without reading
// any file or the environment.
func Builtin() (*Config, error) {
	var c Config
	if err := decode(defaultYAML, &c); err != nil {
		return nil, fmt.Errorf("built-in configuration: %w", err)
	}
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("built-in configuration: %w", err)
	}
	return &c, nil
}

// Load reads the built-in default, then the file at path (if path is not
// ""), then the environment (DATABASE_URL, CONCLAVE_DATA_DIR, CONCLAVE_ADDR,
// CONCLAVE_OPERATOR_ADDR, CONCLAVE_OPERATOR_PUBLIC), and validates the
// result.
func Load(path string) (*Config, error) {
	var c Config
	if err := decode(defaultYAML, &c); err != nil {
		return nil, fmt.Errorf("built-in configuration: %w", err)
	}
	if path != "" {
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("reading configuration: %w", err)
		}
		if err := decode(b, &c); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if !setsKey(b, "judges") {
			c.Judges = c.judgesWithEngines()
		}
	}
	if v := os.Getenv("DATABASE_URL"); v != "" {
		c.Database.URL = v
	}
	if v := os.Getenv("CONCLAVE_DATA_DIR"); v != "" {
		c.DataDir = v
	}
	if v := os.Getenv("CONCLAVE_ADDR"); v != "" {
		c.Server.Addr = v
	}
	if v := os.Getenv("CONCLAVE_OPERATOR_ADDR"); v != "" {
		c.Server.OperatorAddr = v
	}
	if v := os.Getenv("CONCLAVE_OPERATOR_PUBLIC"); v != "" {
		public, err := strconv.ParseBool(v)
		if err != nil {
			return nil, &core.FieldError{Field: "server.operator_public",
				Msg: fmt.Sprintf("CONCLAVE_OPERATOR_PUBLIC=%q: want true or false", v)}
		}
		c.Server.OperatorPublic = public
	}
	if v := os.Getenv("CONCLAVE_PUBLIC_URL"); v != "" {
		c.Server.PublicURL = v
	}
	if err := c.Validate(); err != nil {
		if path != "" {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		return nil, err
	}
	return &c, nil
}

// setsKey reports whether the YAML document b sets the top-level key.
func setsKey(b []byte, key string) bool {
	var top map[string]yaml.Node
	if err := yaml.Unmarshal(b, &top); err != nil {
		return false
	}
	_, ok := top[key]
	return ok
}

// judgesWithEngines is the judges whose engines are configured: a file
// that does not set judges keeps the built-in judges whose engines it
// keeps and drops the others, and the server refuses the test runs and
// certifications that need those (docs/operations.md).
func (c *Config) judgesWithEngines() []Judge {
	engines := make(map[string]bool, len(c.Engines))
	for _, e := range c.Engines {
		engines[e.ID] = true
	}
	var kept []Judge
	for _, j := range c.Judges {
		if engines[j.Engine] {
			kept = append(kept, j)
		}
	}
	return kept
}

func decode(b []byte, c *Config) error {
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	// An empty file decodes to io.EOF: it changes nothing.
	if err := dec.Decode(c); err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	return nil
}

// Validate checks every field and names the first offending one.
func (c *Config) Validate() error {
	fe := fieldErrors("")
	if err := c.Server.validate(); err != nil {
		return err
	}
	switch {
	case c.DataDir == "":
		return fe("data_dir", "required (env CONCLAVE_DATA_DIR, flag --data-dir)")
	case c.Database.RetiredDataDir != "":
		return fe("database.data_dir", "replaced by data_dir: the managed cluster lives in <data_dir>/pg; "+
			"set data_dir (env CONCLAVE_DATA_DIR, flag --data-dir) to the directory that holds pg")
	case c.Database.MaxConns < 2:
		return fe("database.max_conns", "must be at least 2")
	case c.Auth.KeyCacheTTL < 0 || c.Auth.KeyCacheTTL > 10*time.Second:
		return fe("auth.key_cache_ttl", "must be between 0s and 10s")
	case c.Auth.GrantCacheTTL < 0 || c.Auth.GrantCacheTTL > 30*time.Second:
		return fe("auth.grant_cache_ttl", "must be between 0s and 30s")
	case c.Auth.RegisteredClientRetention < time.Hour:
		return fe("auth.registered_client_retention", "must be at least 1h")
	}
	if err := c.Limits.validate(); err != nil {
		return err
	}
	if err := c.People.validate(); err != nil {
		return err
	}
	if err := c.Tracing.validate(); err != nil {
		return err
	}
	for i, u := range c.Auth.AuthorizationServers {
		if err := carrier.CheckBaseURL(u); err != nil {
			return fe(fmt.Sprintf("auth.authorization_servers[%d]", i), "%v", err)
		}
	}
	switch c.Log.Level {
	case "debug", "info", "warn", "error":
	default:
		return fe("log.level", "%q is not debug, info, warn or error", c.Log.Level)
	}
	switch c.Log.Format {
	case "json", "text":
	default:
		return fe("log.format", "%q is not json or text", c.Log.Format)
	}
	if err := c.validateCarriers(); err != nil {
		return err
	}
	if err := c.Jobs.validate(); err != nil {
		return err
	}
	if err := c.Genie.validate(); err != nil {
		return err
	}
	if err := c.Alerts.validate(c.Server.Addr); err != nil {
		return err
	}
	if _, err := c.Catalog(); err != nil {
		return err
	}
	if err := c.validatePlans(); err != nil {
		return err
	}
	return c.validateJudges()
}

// validateCarriers checks what carries the engines' calls: the plugin
// carriers, the simulator and egress.
func (c *Config) validateCarriers() error {
	fe := fieldErrors("")
	switch {
	case c.Plugins.WasmPoolSize < 0:
		return fe("plugins.wasm_pool_size", "cannot be negative")
	case c.Plugins.WasmMemoryLimitMiB < 8 || c.Plugins.WasmMemoryLimitMiB > 4096:
		return fe("plugins.wasm_memory_limit_mib", "must be 8 to 4096")
	case c.Plugins.CallTimeout <= 0:
		return fe("plugins.call_timeout", "must be positive")
	case c.Simulator.Profile != "quick" && c.Simulator.Profile != "seed":
		return fe("simulator.profile", "%q is not quick or seed", c.Simulator.Profile)
	case c.Simulator.TimeScale <= 0:
		return fe("simulator.time_scale", "must be positive")
	case math.IsNaN(c.Simulator.Quality.AnswerNoise) || math.IsInf(c.Simulator.Quality.AnswerNoise, 0) || c.Simulator.Quality.AnswerNoise > 10:
		return fe("simulator.quality.answer_noise", "must be at most 10")
	case math.IsNaN(c.Simulator.Quality.SynthesisLift) || math.Abs(c.Simulator.Quality.SynthesisLift) > 10:
		return fe("simulator.quality.synthesis_lift", "must be -10 to 10")
	case !(c.Simulator.Quality.SynthesisBest >= 0 && c.Simulator.Quality.SynthesisBest <= 1):
		return fe("simulator.quality.synthesis_best", "must be 0 to 1")
	case c.Simulator.Quality.Difficulty != nil && !(math.Abs(c.Simulator.Quality.Difficulty.Light) <= 10 &&
		math.Abs(c.Simulator.Quality.Difficulty.Medium) <= 10 && math.Abs(c.Simulator.Quality.Difficulty.Hard) <= 10):
		return fe("simulator.quality.difficulty", "each bucket's must be -10 to 10")
	case c.Egress.DefaultTimeout <= 0:
		return fe("egress.default_timeout", "must be positive")
	case c.Egress.MaxResponseBytes < 1024:
		return fe("egress.max_response_bytes", "must be at least 1024")
	case c.Egress.MaxAttempts < 1 || c.Egress.MaxAttempts > 10:
		return fe("egress.max_attempts", "must be 1 to 10")
	case c.Egress.BaseBackoff < 0:
		return fe("egress.base_backoff", "cannot be negative")
	}
	return nil
}

var planNameRe = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]*$`)

// validatePlans checks every plan: a unique name, a tier, a non-negative
// allowance, modes named, and limits in range.
func (c *Config) validatePlans() error {
	names := map[string]bool{}
	for i, p := range c.Plans {
		fe := fieldErrors(fmt.Sprintf("plans[%d].", i))
		switch {
		case !planNameRe.MatchString(p.Name):
			return fe("name", "%q: want lower-case letters, digits, '-' and '_'", p.Name)
		case names[p.Name]:
			return fe("name", "%q names two plans", p.Name)
		case p.MonthlyAllowanceUSD < 0:
			return fe("monthly_allowance_usd", "cannot be negative")
		case p.Concurrency < 0 || p.Concurrency > 1000:
			return fe("concurrency", "must be 1 to 1000 (0: the default, 2)")
		case p.RPM < 0:
			return fe("rpm", "cannot be negative (0: the default, 60)")
		}
		if _, ok := core.PlanTier(p.MaxTier); !ok {
			return fe("max_tier", "%q is not experience (or free), plus or pro", p.MaxTier)
		}
		for j, m := range p.Modes {
			if strings.TrimSpace(m) == "" {
				return fe(fmt.Sprintf("modes[%d]", j), "empty: name a mode by its id or ticker")
			}
		}
		names[p.Name] = true
	}
	return nil
}

// PlansByName builds the plans into core.Plans, the per-person limits
// defaulted.
func (c *Config) PlansByName() core.Plans {
	out := make(core.Plans, len(c.Plans))
	for _, p := range c.Plans {
		tier, _ := core.PlanTier(p.MaxTier)
		cp := core.Plan{Name: p.Name, MaxTier: tier, Modes: p.Modes, Allowance: core.Micros(p.MonthlyAllowanceUSD),
			Concurrency: p.Concurrency, RPM: p.RPM, Configured: true}
		if cp.Concurrency == 0 {
			cp.Concurrency = core.DefaultPlanConcurrency
		}
		if cp.RPM == 0 {
			cp.RPM = core.DefaultPlanRPM
		}
		out[p.Name] = cp
	}
	return out
}

var judgeNameRe = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)

// validateJudges checks the judges against the engines: known, each
// judge's name unique and each engine's family its own.
func (c *Config) validateJudges() error {
	engines := make(map[string]*Engine, len(c.Engines))
	for i := range c.Engines {
		engines[c.Engines[i].ID] = &c.Engines[i]
	}
	names := map[string]bool{}
	families := map[string]string{} // family (lower case) → judge name
	for i, j := range c.Judges {
		fe := fieldErrors(fmt.Sprintf("judges[%d].", i))
		switch {
		case !judgeNameRe.MatchString(j.Name):
			return fe("name", "%q: want lower-case letters, digits and underscores, starting with a letter", j.Name)
		case names[j.Name]:
			return fe("name", "%q names two judges", j.Name)
		case j.Engine == "":
			return fe("engine", "required")
		}
		names[j.Name] = true
		e, ok := engines[j.Engine]
		if !ok {
			return fe("engine", "unknown engine %q", j.Engine)
		}
		family := strings.ToLower(e.Family)
		if other, ok := families[family]; ok {
			return fe("engine", "engine %q is of family %q, as judge %s's is: judges must come from distinct families", j.Engine, e.Family, other)
		}
		families[family] = j.Name
	}
	return nil
}

// Catalog builds the engines and modes into a core.Catalog.
func (c *Config) Catalog() (*core.Catalog, error) {
	engines := make([]core.Engine, len(c.Engines))
	for i, e := range c.Engines {
		engines[i] = core.Engine{
			ID: e.ID, Family: e.Family, MaxTier: core.Tier(e.MaxTier), Adapter: e.Adapter,
			Endpoint: e.Endpoint, Credential: e.Credential, Model: e.Model, Carrier: e.Carrier, Plugin: e.Plugin,
			Timeout: e.Timeout, AWSRegion: e.AWSRegion, AWSRoleARN: e.AWSRoleARN, AWSExternalID: e.AWSExternalID,
			STSEndpoint:  e.STSEndpoint,
			InputPerMTok: core.Micros(e.InputUSDPerMTok), OutputPerMTok: core.Micros(e.OutputUSDPerMTok),
		}
	}
	modes := make([]core.Mode, len(c.Modes))
	for i, m := range c.Modes {
		seats := map[core.Tier][]core.Seat{}
		for tier, row := range m.Seats {
			seats[core.Tier(tier)] = row
		}
		pricing := core.Pricing{SurchargeByDepth: map[core.Depth]core.Micros{}}
		for d, v := range m.Pricing.SurchargeByDepth {
			depth, ok := core.ParseDepth(d)
			if !ok {
				return nil, &core.FieldError{Field: fmt.Sprintf("modes[%d].pricing.surcharge_by_depth", i), Msg: fmt.Sprintf("unknown depth %q (light, medium, deep)", d)}
			}
			pricing.SurchargeByDepth[depth] = core.Micros(v)
		}
		if len(pricing.SurchargeByDepth) == 0 {
			pricing.SurchargeByDepth = nil
		}
		if m.Pricing.SurchargeUSD != nil {
			v := core.Micros(*m.Pricing.SurchargeUSD)
			pricing.Surcharge = &v
		}
		if m.Pricing.ExpressUSD != nil {
			v := core.Micros(*m.Pricing.ExpressUSD)
			pricing.Express = &v
		}
		modes[i] = core.Mode{
			Key: m.Key, ID: m.ID, Ticker: strings.TrimSpace(m.Ticker), Name: m.Name, Description: m.Description,
			UseWhen: m.UseWhen, PriceTier: m.PriceTier, Plans: m.Plans, IncludesDeliberation: m.IncludesDeliberation,
			Deliberation: core.Deliberation{
				Seats: seats, Staff: m.Staff, Critique: m.Critique, MaxRounds: m.MaxRounds, Quorum: m.Quorum,
				StragglerDeadline: m.StragglerDeadline, ExpressThreshold: m.ExpressThreshold,
				HedgePercentile: m.HedgePercentile, CostCeiling: core.Micros(m.CostCeilingUSD),
			},
			Pricing: pricing,
		}
	}
	return core.NewCatalog(engines, modes)
}

func (s *Server) validateOperatorAddr() error {
	fe := fieldErrors("server.")
	switch s.OperatorAddr {
	case OperatorOff:
		return nil
	case "":
		return fe("operator_addr", "required; %q disables the operator listener", OperatorOff)
	}
	_, port, err := net.SplitHostPort(s.OperatorAddr)
	if err != nil {
		return fe("operator_addr", "%q is not HOST:PORT or %q", s.OperatorAddr, OperatorOff)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return fe("operator_addr", "%q: the port must be a number from 0 to 65535", s.OperatorAddr)
	}
	// Port 0 asks for any free port, so two listeners may both say it.
	if s.OperatorAddr == s.Addr && port != "0" {
		return fe("operator_addr", "%q is server.addr too; the two listeners need their own addresses", s.OperatorAddr)
	}
	if !s.OperatorPublic && !loopback(s.OperatorAddr) {
		return fe("operator_addr", "%q is not a loopback address, and whoever reaches it reads /metrics (every engine's calls) "+
			"and the cause of a failed /readyz without a key; bind it to loopback (127.0.0.1:%s), turn it off (%q), "+
			"or, if only your monitoring network reaches that address, say so with server.operator_public: true "+
			"(env CONCLAVE_OPERATOR_PUBLIC=true, flag --operator-public)", s.OperatorAddr, port, OperatorOff)
	}
	return nil
}

// loopback reports whether the host of addr (HOST:PORT) is loopback:
// localhost, or an address in 127.0.0.0/8 or ::1. An empty host binds every
// interface, and a name other than localhost may resolve anywhere: neither
// is.
func loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func (p *People) validate() error {
	fe := fieldErrors("people.")
	switch {
	case p.SessionIdle < time.Minute:
		return fe("session_idle", "must be at least 1m")
	case p.SessionMaxAge < p.SessionIdle:
		return fe("session_max_age", "must be at least people.session_idle")
	case p.LinkTTL < time.Minute:
		return fe("link_ttl", "must be at least 1m")
	case p.MaxConcurrentHashes < 1:
		return fe("max_concurrent_hashes", "must be at least 1")
	case p.AccountAttempts < 1:
		return fe("account_attempts", "must be at least 1")
	case p.AddressAttempts < 1:
		return fe("address_attempts", "must be at least 1")
	case p.AttemptWindow < time.Second:
		return fe("attempt_window", "must be at least 1s")
	case p.PersonRPM < 1:
		return fe("person_rpm", "must be at least 1")
	case p.Argon2.Time < 1:
		return fe("argon2.time", "must be at least 1")
	case p.Argon2.MemoryKiB < 8*1024 || p.Argon2.MemoryKiB > 1<<20:
		return fe("argon2.memory_kib", "must be 8192 (8 MiB) to 1048576 (1 GiB)")
	case p.Argon2.Threads < 1:
		return fe("argon2.threads", "must be at least 1")
	}
	return nil
}

func (j *Jobs) validate() error {
	fe := fieldErrors("jobs.")
	switch {
	case j.TrialPeriod <= 0:
		return fe("trial_period", "must be positive")
	case j.TrialExpiryInterval < time.Second:
		return fe("trial_expiry_interval", "must be at least 1s")
	case j.SweepInterval < time.Second:
		return fe("sweep_interval", "must be at least 1s")
	case j.HoldGrace < 0:
		return fe("hold_grace", "cannot be negative")
	case j.ReapInterval < time.Second:
		return fe("reap_interval", "must be at least 1s")
	case j.SpendInterval < time.Second:
		return fe("spend_interval", "must be at least 1s")
	case j.SpendGrace < time.Second:
		return fe("spend_grace", "must be at least 1s")
	case j.IdempotencyRetention < time.Minute:
		return fe("idempotency_retention", "must be at least 1m")
	case j.StopTimeout <= 0:
		return fe("stop_timeout", "must be positive")
	case j.BenchWorkers < 1:
		return fe("bench_workers", "must be at least 1")
	case j.BenchTimeout < time.Second:
		return fe("bench_timeout", "must be at least 1s")
	case j.BenchQuestionTime < time.Second:
		return fe("bench_question_time", "must be at least 1s")
	case j.BenchAttempts < 1 || j.BenchAttempts > 25:
		return fe("bench_attempts", "must be 1 to 25")
	}
	return nil
}
