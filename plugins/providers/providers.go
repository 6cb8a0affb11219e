// Package providers wires the engines of a deployment to the outside world:
// each engine's adapter on its carrier (compiled in, a WebAssembly module,
// or a go-plugin process), the egress layer that sends their requests with
// the right credentials, and — for engines whose endpoint is "sim" — the
// simulated provider, started in-process on loopback.
//
// The deliberation engine calls Providers.Call; nothing else in Conclave
// talks to a provider.
package providers

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/conclavehq/conclave/adapters"
	"github.com/conclavehq/conclave/adapters/sim"
	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/plugins/byok"
	"github.com/conclavehq/conclave/plugins/egress"
	"github.com/conclavehq/conclave/plugins/egress/creds"
	"github.com/conclavehq/conclave/plugins/goplugin"
	"github.com/conclavehq/conclave/plugins/manifest"
	"github.com/conclavehq/conclave/plugins/wasmhost"
)

// SimEndpoint is the endpoint value that points an engine at the in-process
// simulated provider.
const SimEndpoint = "sim"

// simFamilies returns the simulator's engine overrides with the configured
// family of every simulated engine filled in where the overrides name none,
// so that the simulated judges' self-family preference follows the
// deployment's configuration. The overrides are not changed.
func simFamilies(cat *core.Catalog, ids []string, overrides map[string]sim.EngineProfile) map[string]sim.EngineProfile {
	out := make(map[string]sim.EngineProfile, len(overrides))
	for model, p := range overrides {
		out[strings.TrimPrefix(model, "sim/")] = p
	}
	for _, id := range ids {
		e := cat.Engines()[id]
		if e.Endpoint != SimEndpoint || e.Family == "" {
			continue
		}
		model := strings.TrimPrefix(e.Model, "sim/")
		if p := out[model]; p.Family == "" {
			p.Family = e.Family
			out[model] = p
		}
	}
	return out
}

// Config configures Start.
type Config struct {
	// Catalog holds the engines to wire. Required.
	Catalog *core.Catalog
	// ManifestPath is the plugin manifest; required only when an engine's
	// carrier is wasm or goplugin. Defaults to "".
	ManifestPath string
	Wasm         wasmhost.Config
	GoPlugin     goplugin.Config
	// Simulator configures the in-process simulated provider (Addr, APIKey
	// and Logger are set by Start).
	Simulator sim.Config
	Egress    egress.Config
	// Credentials for engines outside the simulator. Defaults to the
	// service's credentials from the environment (API keys from the
	// variables engines name; AWS base credentials from AWS_ACCESS_KEY_ID
	// and AWS_SECRET_ACCESS_KEY).
	Credentials core.Credentials
	// BYOK finds organisations' own provider credentials (bring-your-own-
	// key). A seat call that names an organisation with a credential for
	// its engine's provider runs on it: an API key as stored, or the
	// organisation's AWS role assumed with the service's base AWS identity
	// (from the environment; the simulator's for simulated engines). Calls
	// that name no organisation — judge, synthesis, classifier — never do.
	// Defaults to nil: every call runs on the service's credentials.
	BYOK *byok.Resolver
	// Logger defaults to a logger that discards.
	Logger *slog.Logger
	// Registerer receives the egress metrics. Defaults to none.
	Registerer prometheus.Registerer
}

// Providers is the wired set. It is safe for concurrent use.
type Providers struct {
	engines  map[string]*core.Engine
	adapters map[string]core.Adapter
	egress   *egress.Egress
	sim      *sim.Server
	wasm     *wasmhost.Host
	goplugin *goplugin.Host
	roles    []*creds.AWSRoleCredentials
	simKey   string // the key the simulator requires; only simulated engines carry it
	// simOwn holds the fingerprints of organisations' own keys handed to
	// simulated engines, which the simulator accepts besides simKey.
	simOwn   *keySet
	stopOnce sync.Once
}

// Start wires every engine of the catalog, or fails naming the engine that
// cannot be wired.
func Start(ctx context.Context, cfg Config) (_ *Providers, err error) {
	if cfg.Catalog == nil {
		return nil, errors.New("providers: Catalog is required")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	p := &Providers{engines: map[string]*core.Engine{}, adapters: map[string]core.Adapter{}}
	defer func() {
		if err != nil {
			p.Stop(context.WithoutCancel(ctx))
		}
	}()

	ids := make([]string, 0, len(cfg.Catalog.Engines()))
	for id := range cfg.Catalog.Engines() {
		ids = append(ids, id)
	}
	sort.Strings(ids)

	// The simulated provider, when any engine uses it.
	simKeys := map[string]string{}
	for _, id := range ids {
		e := *cfg.Catalog.Engines()[id] // a copy: endpoints are resolved here
		if e.Endpoint == SimEndpoint {
			if p.sim == nil {
				scfg := cfg.Simulator
				scfg.Addr = "127.0.0.1:0"
				scfg.Engines = simFamilies(cfg.Catalog, ids, scfg.Engines)
				p.simKey = randomKey()
				scfg.APIKey = p.simKey
				if cfg.BYOK != nil {
					// As a real provider accepts every account's key, the
					// simulator accepts an organisation's own key once the
					// egress layer has been handed it for a simulated engine.
					p.simOwn = &keySet{m: map[[32]byte]bool{}}
					scfg.AcceptKey = p.simOwn.has
				}
				scfg.Logger = cfg.Logger.With(slog.String("component", "sim"))
				if p.sim, err = sim.Start(ctx, scfg); err != nil {
					return nil, fmt.Errorf("starting the simulated provider: %w", err)
				}
				cfg.Logger.Info("simulated provider started", slog.String("url", p.sim.URL()), slog.String("profile", scfg.Profile))
			}
			p.sim.WireEngine(&e)
			simKeys[e.ID] = p.simKey
		}
		p.engines[e.ID] = &e
	}

	// Adapters, by carrier.
	var m *manifest.Manifest
	for _, id := range ids {
		e := p.engines[id]
		a, err := p.adapterFor(ctx, &cfg, &m, e)
		if err != nil {
			return nil, fmt.Errorf("engine %s: %w", e.ID, err)
		}
		info, err := a.Describe(ctx)
		if err != nil {
			return nil, fmt.Errorf("engine %s: describing its adapter: %w", e.ID, err)
		}
		if info.Name != e.Adapter {
			return nil, fmt.Errorf("engine %s: its plugin is the %q adapter, but the engine names adapter %q", e.ID, info.Name, e.Adapter)
		}
		p.adapters[e.ID] = a
	}

	// Credentials: the simulator's key for simulated engines (never sent
	// anywhere else), the service's own for the rest.
	service := cfg.Credentials
	var serviceRole core.Credentials // assumes organisations' roles for BYOK
	if service == nil {
		sc := creds.ServiceCredentials{APIKeys: creds.EnvCredentials{}}
		if base, err := creds.EnvBaseCredentials(nil); err == nil {
			role, err := creds.NewAWSRoleCredentials(creds.AWSRoleConfig{Base: base})
			if err != nil {
				return nil, fmt.Errorf("AWS role credentials: %w", err)
			}
			p.roles = append(p.roles, role)
			sc.AWS = role
			serviceRole = role
		}
		service = sc
	}
	if cfg.BYOK != nil {
		// An organisation's own credential first, for seat calls; the
		// service's when it has none for the engine's provider.
		service = creds.Chain{&byok.Credentials{Resolver: cfg.BYOK, AWS: serviceRole}, service}
	}
	if p.sim != nil {
		// The simulator's STS issues session credentials to anyone who
		// signs AssumeRole; its account's base credentials identify the
		// service to it.
		acct := p.sim.AWSAccount()
		base := credentials.NewStaticCredentialsProvider(acct.AccessKeyID, acct.SecretAccessKey, "")
		role, err := creds.NewAWSRoleCredentials(creds.AWSRoleConfig{Base: base})
		if err != nil {
			return nil, fmt.Errorf("simulated AWS role credentials: %w", err)
		}
		p.roles = append(p.roles, role)
		var simCreds core.Credentials = creds.ServiceCredentials{APIKeys: creds.StaticCredentials{Keys: simKeys}, AWS: role}
		if cfg.BYOK != nil {
			own := simOwnKeys{inner: &byok.Credentials{Resolver: cfg.BYOK, AWS: role}, keys: p.simOwn}
			simCreds = creds.Chain{own, simCreds}
		}
		service = engineSplit{sim: simKeys, simCreds: simCreds, rest: service}
	}

	engines := make([]*core.Engine, 0, len(ids))
	for _, id := range ids {
		engines = append(engines, p.engines[id])
	}
	ecfg := cfg.Egress
	ecfg.Logger = cfg.Logger.With(slog.String("component", "egress"))
	ecfg.Registerer = cfg.Registerer
	if p.egress, err = egress.New(ecfg, service, engines); err != nil {
		return nil, fmt.Errorf("starting the egress layer: %w", err)
	}
	return p, nil
}

// adapterFor loads the engine's adapter on its carrier.
func (p *Providers) adapterFor(ctx context.Context, cfg *Config, m **manifest.Manifest, e *core.Engine) (core.Adapter, error) {
	if e.Carrier == core.CarrierNative {
		a, ok := adapters.Builtin(e.Adapter)
		if !ok {
			return nil, fmt.Errorf("no built-in adapter %q (built in: %v); load it as a plugin with carrier wasm or goplugin", e.Adapter, adapters.BuiltinNames())
		}
		return a, nil
	}
	if *m == nil && cfg.ManifestPath != "" {
		loaded, err := manifest.Load(cfg.ManifestPath)
		if err != nil {
			return nil, err
		}
		*m = loaded
	}
	entry, err := (*m).AdapterFor(e.Carrier, e.Plugin)
	if err != nil {
		return nil, err
	}
	switch e.Carrier {
	case core.CarrierWasm:
		if p.wasm == nil {
			wcfg := cfg.Wasm
			wcfg.Logger = cfg.Logger.With(slog.String("component", "wasmhost"))
			h, err := wasmhost.New(ctx, wcfg)
			if err != nil {
				return nil, err
			}
			p.wasm = h
		}
		return p.wasm.LoadAdapter(ctx, entry)
	case core.CarrierGoPlugin:
		if p.goplugin == nil {
			gcfg := cfg.GoPlugin
			gcfg.Logger = cfg.Logger.With(slog.String("component", "goplugin"))
			p.goplugin = goplugin.New(gcfg)
		}
		return p.goplugin.LoadAdapter(ctx, entry)
	}
	return nil, fmt.Errorf("unknown carrier %q", e.Carrier)
}

// Call runs one engine call. orgID is the paying organisation on a seat
// call, whose own credential (Config.BYOK) the call may run on; "" for the
// service's own calls (judge, synthesis, classifier), which always run on
// the service's credentials. The answer's Source says which one did.
func (p *Providers) Call(ctx context.Context, engineID, orgID string, req *core.SeatRequest) (*core.SeatAnswer, error) {
	e, ok := p.engines[engineID]
	if !ok {
		return nil, fmt.Errorf("providers: no engine %q", engineID)
	}
	r := *req
	if r.Model == "" {
		r.Model = e.Model
	}
	return p.egress.Call(ctx, &core.EgressCall{Engine: e, Adapter: p.adapters[engineID], Request: &r, OrgID: orgID})
}

// Engine returns an engine as wired (its endpoint resolved).
func (p *Providers) Engine(id string) (*core.Engine, bool) {
	e, ok := p.engines[id]
	return e, ok
}

// Adapter returns the adapter an engine runs on.
func (p *Providers) Adapter(id string) (core.Adapter, bool) {
	a, ok := p.adapters[id]
	return a, ok
}

// Egress returns the egress layer the engines call through.
func (p *Providers) Egress() *egress.Egress { return p.egress }

// SimulatorKey is the key the in-process simulator requires, for tests that
// check it never leaks; "" without a simulator.
func (p *Providers) SimulatorKey() string { return p.simKey }

// Simulator returns the in-process simulated provider, or nil.
func (p *Providers) Simulator() *sim.Server { return p.sim }

// Stop closes plugins, the simulator and idle connections. Safe twice.
func (p *Providers) Stop(ctx context.Context) {
	p.stopOnce.Do(func() {
		if p.egress != nil {
			p.egress.CloseIdleConnections()
		}
		for _, r := range p.roles {
			r.CloseIdleConnections()
		}
		if p.wasm != nil {
			_ = p.wasm.Close(ctx)
		}
		if p.goplugin != nil {
			_ = p.goplugin.Close()
		}
		if p.sim != nil {
			_ = p.sim.Close()
		}
	})
}

// engineSplit gives simulated engines the simulator's credentials and every
// other engine the service's, so a simulator key can never reach a real
// provider.
type engineSplit struct {
	sim      map[string]string
	simCreds core.Credentials
	rest     core.Credentials
}

func (s engineSplit) Credential(ctx context.Context, req *core.CredentialRequest) (*core.Credential, error) {
	if _, ok := s.sim[req.Engine.ID]; ok {
		return s.simCreds.Credential(ctx, req)
	}
	return s.rest.Credential(ctx, req)
}

// keySet holds fingerprints of keys, never the keys. It is safe for
// concurrent use.
type keySet struct {
	mu sync.Mutex
	m  map[[32]byte]bool
}

// maxOwnKeys bounds a keySet; a full set is emptied (keys are added again
// as they are handed out).
const maxOwnKeys = 10_000

func (s *keySet) add(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.m) >= maxOwnKeys {
		clear(s.m)
	}
	s.m[sha256.Sum256([]byte(key))] = true
}

func (s *keySet) has(key string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.m[sha256.Sum256([]byte(key))]
}

// simOwnKeys hands out organisations' own credentials for simulated
// engines and tells the simulator which API keys it may accept.
type simOwnKeys struct {
	inner core.Credentials
	keys  *keySet
}

func (s simOwnKeys) Credential(ctx context.Context, req *core.CredentialRequest) (*core.Credential, error) {
	c, err := s.inner.Credential(ctx, req)
	if err == nil && c != nil && c.Secret != "" {
		s.keys.add(c.Secret)
	}
	return c, err
}

func randomKey() string {
	var b [24]byte
	_, _ = rand.Read(b[:])
	return "sim-" + hex.EncodeToString(b[:])
}
