package wasmhost

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/plugins/abi"
	"github.com/conclavehq/conclave/plugins/manifest"
)

// Host runs WebAssembly plugins. It owns one wazero runtime; every module it
// loads is compiled once and runs in its own pool of instances. Safe for
// concurrent use.
type Host struct {
	cfg    Config
	log    *slog.Logger
	rt     wazero.Runtime
	cache  wazero.CompilationCache // nil without Config.CacheDir
	modCfg wazero.ModuleConfig

	done      chan struct{} // closed by Close
	closeOnce sync.Once
	closeErr  error

	loadMu  sync.Mutex // serialises loads: compiling is slow, rare, and must happen once per module
	mu      sync.Mutex // guards modules
	modules []*module
}

// New starts a Host: a wazero runtime that interrupts a call when its
// context ends, with the memory cap and compilation cache of cfg, and the
// only two import modules a plugin may use: WASI preview 1 (which the Go
// runtime needs) and "conclave" (log).
func New(ctx context.Context, cfg Config) (*Host, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	h := &Host{cfg: cfg, log: cfg.Logger, done: make(chan struct{})}
	rc := wazero.NewRuntimeConfig().
		WithCloseOnContextDone(true).
		WithMemoryLimitPages(cfg.MemoryLimitPages)
	if cfg.CacheDir != "" {
		cache, err := wazero.NewCompilationCacheWithDir(cfg.CacheDir)
		if err != nil {
			return nil, fmt.Errorf("wasmhost: Config.CacheDir: %w", err)
		}
		h.cache = cache
		rc = rc.WithCompilationCache(cache)
	}
	h.rt = wazero.NewRuntimeWithConfig(ctx, rc)
	if _, err := wasi_snapshot_preview1.Instantiate(ctx, h.rt); err != nil {
		return nil, errors.Join(fmt.Errorf("wasmhost: instantiating WASI: %w", err), h.Close(ctx))
	}
	_, err := h.rt.NewHostModuleBuilder(importModule).
		NewFunctionBuilder().
		WithGoModuleFunction(api.GoModuleFunc(h.guestLog), []api.ValueType{api.ValueTypeI32, api.ValueTypeI32}, nil).
		WithParameterNames("ptr", "len").
		Export("log").
		Instantiate(ctx)
	if err != nil {
		return nil, errors.Join(fmt.Errorf("wasmhost: instantiating the %q host module: %w", importModule, err), h.Close(ctx))
	}
	// The sandbox is what this configuration leaves out: no WithArgs, WithEnv,
	// WithFS or WithFSConfig (so no preopened directory), and no WithSysWalltime,
	// WithSysNanotime or WithSysNanosleep, so the guest's clocks are wazero's
	// deterministic fakes. Stdin reads EOF; stdout, stderr and the random
	// source are set per instance. Instances are anonymous so that no other
	// module can import from one.
	h.modCfg = wazero.NewModuleConfig().WithName("").WithStartFunctions()
	return h, nil
}

// LoadAdapter loads the adapter plugin e names: it reads the file and checks
// its pinned digest on the bytes it compiles, checks the module's exports,
// and creates a first instance to check that it speaks abi.Version and is an
// adapter. Loading the same entry again returns the same pool.
func (h *Host) LoadAdapter(ctx context.Context, e *manifest.Entry) (core.Adapter, error) {
	m, err := h.load(ctx, e, abi.KindAdapter)
	if err != nil {
		return nil, err
	}
	return abi.Adapter{C: m}, nil
}

// LoadProtocol loads the judging-protocol plugin e names, as LoadAdapter.
func (h *Host) LoadProtocol(ctx context.Context, e *manifest.Entry) (core.Protocol, error) {
	m, err := h.load(ctx, e, abi.KindProtocol)
	if err != nil {
		return nil, err
	}
	return abi.Protocol{C: m}, nil
}

func (h *Host) load(ctx context.Context, e *manifest.Entry, kind string) (*module, error) {
	if e == nil {
		return nil, errors.New("wasmhost: no manifest entry")
	}
	if e.Carrier != manifest.CarrierWasm {
		return nil, fmt.Errorf("wasmhost: plugin %s: carrier is %q, not %q", e.Name, e.Carrier, manifest.CarrierWasm)
	}
	if e.Kind != kind {
		return nil, fmt.Errorf("wasmhost: plugin %s: %w: the manifest says %q, loaded as %q", e.Name, ErrKind, e.Kind, kind)
	}
	h.loadMu.Lock()
	defer h.loadMu.Unlock()
	if h.closed() {
		return nil, fmt.Errorf("wasmhost: plugin %s: %w", e.Name, ErrClosed)
	}
	if m := h.find(e.Name); m != nil {
		if m.digest != e.SHA256 || m.kind != kind {
			return nil, fmt.Errorf("wasmhost: plugin %s is already loaded as a %s with sha256 %s", e.Name, m.kind, m.digest)
		}
		return m, nil
	}
	b, err := e.ReadVerified()
	if err != nil {
		return nil, fmt.Errorf("wasmhost: %w", err)
	}
	start := time.Now()
	compiled, err := h.rt.CompileModule(ctx, b)
	if err != nil {
		return nil, fmt.Errorf("wasmhost: plugin %s: compiling: %w", e.Name, err)
	}
	compileTime := time.Since(start)
	if err := checkShape(compiled, kind); err != nil {
		return nil, errors.Join(fmt.Errorf("wasmhost: plugin %s: %w", e.Name, err), compiled.Close(ctx))
	}
	m := newModule(h, e, kind, compiled)
	if err := m.handshake(ctx); err != nil {
		var ce *CallError
		if !errors.As(err, &ce) { // a CallError names the plugin already
			err = fmt.Errorf("wasmhost: plugin %s: %w", e.Name, err)
		}
		return nil, errors.Join(err, m.close(ctx))
	}
	h.mu.Lock()
	h.modules = append(h.modules, m)
	h.mu.Unlock()
	h.log.Info("wasm plugin loaded", "plugin", e.Name, "kind", kind, "sha256", e.SHA256,
		"bytes", len(b), "compile", compileTime, "instantiate", time.Duration(m.instantiateNanos.Load()))
	return m, nil
}

func (h *Host) find(name string) *module {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, m := range h.modules {
		if m.name == name {
			return m
		}
	}
	return nil
}

func (h *Host) closed() bool {
	select {
	case <-h.done:
		return true
	default:
		return false
	}
}

// ModuleStats describes one loaded module's pool.
type ModuleStats struct {
	Name   string // the manifest entry's name
	Kind   string // adapter or protocol
	SHA256 string // the pinned digest of the bytes loaded
	// PoolSize is the most instances that may exist at once.
	PoolSize int
	// Instances is how many instances are alive now.
	Instances int
	// MemoryBytes is the linear memory of the largest live instance, as it
	// stood after that instance's last call.
	MemoryBytes uint64
	// Calls counts calls into the module, failed ones included.
	Calls uint64
	// Created counts instances created; Discarded, instances closed after a
	// failure.
	Created, Discarded uint64
	// InstantiateTime is how long the most recent instance took to create,
	// _initialize included.
	InstantiateTime time.Duration
}

// Stats reports on every loaded module, in load order.
func (h *Host) Stats() []ModuleStats {
	h.mu.Lock()
	mods := append([]*module(nil), h.modules...)
	h.mu.Unlock()
	stats := make([]ModuleStats, 0, len(mods))
	for _, m := range mods {
		stats = append(stats, m.stats())
	}
	return stats
}

// Close closes every instance and module and the runtime. A call running in
// an instance is interrupted and returns ErrClosed; Close does not wait for
// it. Safe to call more than once.
func (h *Host) Close(ctx context.Context) error {
	h.closeOnce.Do(func() {
		close(h.done)
		if h.rt != nil {
			h.closeErr = h.rt.Close(ctx)
		}
		if h.cache != nil {
			h.closeErr = errors.Join(h.closeErr, h.cache.Close(ctx))
		}
	})
	return h.closeErr
}
