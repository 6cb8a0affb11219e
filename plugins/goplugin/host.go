package goplugin

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/plugins/abi"
	"github.com/conclavehq/conclave/plugins/manifest"
)

// ErrPluginCrashed: the plugin process died while a call was in flight. The
// call fails; the next call to the same plugin starts a fresh process,
// checking its digest again.
var ErrPluginCrashed = errors.New("plugin process crashed")

// ErrClosed: the Host was closed.
var ErrClosed = errors.New("go-plugin host is closed")

// Config configures a Host.
type Config struct {
	// CallTimeout bounds each call to a plugin, including a restart after a
	// crash; a shorter deadline on the caller's ctx wins. Defaults to 5s.
	CallTimeout time.Duration
	// StartTimeout bounds starting a plugin process and its handshake.
	// Defaults to 10s.
	StartTimeout time.Duration
	// Logger receives go-plugin's logs and each plugin's stderr and stdout,
	// with an "entry" attribute naming it. Nothing a plugin prints reaches
	// the host's stdout. Defaults to discarding them.
	Logger *slog.Logger
}

// WithDefaults returns c with every zero or negative field set to its
// default.
func (c Config) WithDefaults() Config {
	if c.CallTimeout <= 0 {
		c.CallTimeout = 5 * time.Second
	}
	if c.StartTimeout <= 0 {
		c.StartTimeout = 10 * time.Second
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

// Host runs go-plugin plugin processes: one process per manifest entry,
// shared by every call to that plugin and restarted after a crash. It is
// safe for concurrent use. Close it to stop the processes.
type Host struct {
	cfg Config

	mu      sync.Mutex
	closed  bool
	plugins map[string]*supervisor // by entry name
}

// New returns a Host. It starts nothing until a plugin is loaded.
func New(cfg Config) *Host {
	return &Host{cfg: cfg.WithDefaults(), plugins: map[string]*supervisor{}}
}

// LoadAdapter starts the adapter plugin e names, once its file matches the
// pinned digest, and returns the adapter. Loading an entry again returns an
// adapter on the same process. The adapter is safe for concurrent use; its
// calls fail with ErrClosed once the Host is closed.
func (h *Host) LoadAdapter(ctx context.Context, e *manifest.Entry) (core.Adapter, error) {
	s, err := h.load(ctx, e, kindAdapter)
	if err != nil {
		return nil, err
	}
	return abi.Adapter{C: s}, nil
}

// LoadProtocol starts the judging-protocol plugin e names. See LoadAdapter.
func (h *Host) LoadProtocol(ctx context.Context, e *manifest.Entry) (core.Protocol, error) {
	s, err := h.load(ctx, e, kindProtocol)
	if err != nil {
		return nil, err
	}
	return abi.Protocol{C: s}, nil
}

func (h *Host) load(ctx context.Context, e *manifest.Entry, kind string) (*supervisor, error) {
	switch {
	case e == nil:
		return nil, errors.New("goplugin: loading a plugin: no manifest entry")
	case e.Carrier != manifest.CarrierGoPlugin:
		return nil, fmt.Errorf("goplugin: loading plugin %s: its carrier is %q, not %q", e.Name, e.Carrier, manifest.CarrierGoPlugin)
	case e.Kind != kind:
		return nil, fmt.Errorf("goplugin: loading plugin %s: the manifest lists it as kind %q, not %q", e.Name, e.Kind, kind)
	}
	// go-plugin checks the digest again right before each exec; this first
	// check gives the clearer error and starts nothing.
	if err := e.Verify(); err != nil {
		return nil, fmt.Errorf("goplugin: loading %w", err)
	}

	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return nil, fmt.Errorf("goplugin: loading plugin %s: %w", e.Name, ErrClosed)
	}
	s, loaded := h.plugins[e.Name]
	if loaded && s.entry != *e {
		h.mu.Unlock()
		return nil, fmt.Errorf("goplugin: loading plugin %s: already loaded from %s (sha256 %s)", e.Name, s.entry.Path, s.entry.SHA256)
	}
	if !loaded {
		s = newSupervisor(*e, h.cfg)
		h.plugins[e.Name] = s
	}
	h.mu.Unlock()

	// Describe proves the process started and serves this kind.
	var err error
	if kind == kindAdapter {
		_, err = abi.Adapter{C: s}.Describe(ctx)
	} else {
		_, err = abi.Protocol{C: s}.Describe(ctx)
	}
	if err != nil {
		if !loaded {
			h.mu.Lock()
			if h.plugins[e.Name] == s {
				delete(h.plugins, e.Name)
			}
			h.mu.Unlock()
			_ = s.close()
		}
		return nil, err // it names the plugin and what failed
	}
	return s, nil
}

// Close stops every plugin process and waits for them to exit. Calls in
// flight fail with ErrClosed. Close is safe to call twice.
func (h *Host) Close() error {
	h.mu.Lock()
	h.closed = true
	plugins := h.plugins
	h.plugins = map[string]*supervisor{}
	h.mu.Unlock()

	errs := make(chan error, len(plugins))
	var wg sync.WaitGroup
	for _, s := range plugins {
		wg.Go(func() { errs <- s.close() })
	}
	wg.Wait()
	close(errs)
	var all []error
	for err := range errs {
		all = append(all, err)
	}
	return errors.Join(all...)
}
