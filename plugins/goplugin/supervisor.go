package goplugin

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/conclavehq/conclave/plugins/manifest"
)

// exitGrace is how long a failed call waits to learn whether the plugin
// process died: the connection drops a moment before go-plugin has reaped
// the process.
const exitGrace = 2 * time.Second

// supervisor keeps one plugin process per manifest entry: it starts the
// process on first use, shares it between concurrent calls, and starts a
// fresh one on the first call after the old one died. It is the abi.Caller
// behind the adapters and protocols a Host returns.
type supervisor struct {
	entry manifest.Entry
	kind  string
	cfg   Config
	log   hclog.Logger

	mu     sync.Mutex
	closed bool
	cur    *generation
	starts sync.WaitGroup // start goroutines in flight
}

// generation is one attempt to start the plugin process.
type generation struct {
	ready chan struct{} // closed once proc or err is set
	proc  *process
	err   error
}

func (g *generation) started() bool {
	select {
	case <-g.ready:
		return true
	default:
		return false
	}
}

func newSupervisor(e manifest.Entry, cfg Config) *supervisor {
	return &supervisor{
		entry: e,
		kind:  e.Kind,
		cfg:   cfg,
		log:   newHCLogger(cfg.Logger.With("entry", e.Name)),
	}
}

// Call implements abi.Caller.
func (s *supervisor) Call(ctx context.Context, method string, in []byte) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.CallTimeout)
	defer cancel()
	p, err := s.acquire(ctx)
	if err != nil {
		return nil, err
	}
	out, err := p.remote.Call(ctx, method, in)
	if err != nil {
		return nil, s.callError(ctx, p, method, err)
	}
	return out, nil
}

// acquire returns the running process, starting one if there is none or the
// last one has exited. The start runs on its own goroutine so that a caller
// whose ctx ends stops waiting while the start completes for the next call.
func (s *supervisor) acquire(ctx context.Context) (*process, error) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, fmt.Errorf("goplugin: plugin %s: %w", s.entry.Name, ErrClosed)
	}
	g := s.cur
	var dead *process
	if g != nil && g.started() && (g.err != nil || g.proc.exited()) {
		dead, g = g.proc, nil
	}
	if g == nil {
		g = &generation{ready: make(chan struct{})}
		s.cur = g
		s.starts.Add(1)
		go func() {
			defer s.starts.Done()
			g.proc, g.err = s.start()
			close(g.ready)
		}()
	}
	s.mu.Unlock()
	if dead != nil {
		// Reaping an exited process is quick: it frees go-plugin's
		// goroutines and the process's socket directory.
		_ = dead.release()
	}

	if !g.started() {
		select {
		case <-g.ready:
		case <-ctx.Done():
			return nil, fmt.Errorf("goplugin: plugin %s: waiting for the process to start: %w", s.entry.Name, ctx.Err())
		}
	}
	return g.proc, g.err
}

// callError explains why a call to p failed.
func (s *supervisor) callError(ctx context.Context, p *process, method string, err error) error {
	name := s.entry.Name
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return fmt.Errorf("goplugin: plugin %s: %w", name, err) // ctx ended; the process is fine
	}
	switch status.Code(err) {
	case codes.Unimplemented:
		return fmt.Errorf("goplugin: plugin %s does not serve the %s service (is it a plugin of another kind?): %w", name, serviceName(s.kind), err)
	case codes.ResourceExhausted:
		return fmt.Errorf("goplugin: plugin %s: %w", name, err)
	}
	if !p.waitExit(ctx, exitGrace) {
		return fmt.Errorf("goplugin: plugin %s: %w", name, err)
	}
	if p.stopping.Load() {
		return fmt.Errorf("goplugin: plugin %s: %s: %w", name, method, ErrClosed)
	}
	detail := err.Error()
	var se interface{ GRPCStatus() *status.Status }
	if errors.As(err, &se) {
		detail = se.GRPCStatus().Message()
	}
	return fmt.Errorf("goplugin: plugin %s (pid %d): %s: %w (%s)", name, p.pid, method, ErrPluginCrashed, detail)
}

// start starts a plugin process. go-plugin checks the binary against the
// pinned digest right before it executes it.
func (s *supervisor) start() (*process, error) {
	e := &s.entry
	sum, err := hex.DecodeString(e.SHA256)
	if err != nil {
		return nil, fmt.Errorf("goplugin: plugin %s: sha256: %w", e.Name, err)
	}
	// The process gets a private working and temporary directory (0700,
	// where go-plugin puts its socket), removed once it has exited.
	dir, err := os.MkdirTemp("", "conclave-goplugin-")
	if err != nil {
		return nil, fmt.Errorf("goplugin: starting plugin %s: %w", e.Name, err)
	}
	cmd := exec.Command(e.Path)
	cmd.Dir = dir
	cmd.SysProcAttr = procAttr()
	// Only what the plugin needs: go-plugin adds its handshake variables
	// (the cookie, PLUGIN_MIN_PORT, PLUGIN_MAX_PORT,
	// PLUGIN_PROTOCOL_VERSIONS); nothing of the host's environment, and so
	// no credential, reaches the plugin.
	cmd.Env = []string{"TMPDIR=" + dir}
	client := plugin.NewClient(&plugin.ClientConfig{
		HandshakeConfig:  Handshake(),
		Plugins:          PluginSet(),
		Cmd:              cmd,
		SkipHostEnv:      true,
		SecureConfig:     &plugin.SecureConfig{Checksum: sum, Hash: sha256.New()},
		AllowedProtocols: []plugin.Protocol{plugin.ProtocolGRPC},
		StartTimeout:     s.cfg.StartTimeout,
		Logger:           s.log,
		SyncStdout:       lineLogger{l: s.cfg.Logger, attrs: []any{"entry", e.Name, "stream", "stdout"}},
		SyncStderr:       lineLogger{l: s.cfg.Logger, attrs: []any{"entry", e.Name, "stream", "stderr"}},
	})
	p := &process{client: client, dir: dir}
	fail := func(err error) (*process, error) {
		_ = p.release()
		return nil, err
	}

	rpc, err := client.Client()
	if errors.Is(err, plugin.ErrChecksumsDoNotMatch) {
		// Hash again for an error that shows both digests.
		verr := e.Verify()
		if !errors.Is(verr, manifest.ErrDigestMismatch) {
			verr = fmt.Errorf("plugin %s (%s): %w", e.Name, e.Path, manifest.ErrDigestMismatch)
		}
		return fail(fmt.Errorf("goplugin: refusing to start %w", verr))
	}
	if err != nil {
		return fail(fmt.Errorf("goplugin: starting plugin %s (%s): %w", e.Name, e.Path, err))
	}
	raw, err := rpc.Dispense(s.kind)
	if err != nil {
		return fail(fmt.Errorf("goplugin: starting plugin %s: %w", e.Name, err))
	}
	p.remote = raw.(*remote)
	p.pid = cmd.Process.Pid
	return p, nil
}

// close stops the running process, if any, and waits for it to exit. Later
// calls fail with ErrClosed.
func (s *supervisor) close() error {
	s.mu.Lock()
	s.closed = true
	g := s.cur
	s.cur = nil
	s.mu.Unlock()

	s.starts.Wait()
	if g == nil || g.proc == nil {
		return nil
	}
	return g.proc.stop()
}

// process is one running plugin process.
type process struct {
	client *plugin.Client
	remote *remote
	pid    int
	dir    string

	// stopping is set when the host stops the process on purpose, so that
	// calls failing meanwhile are not reported as crashes.
	stopping   atomic.Bool
	releaseOne sync.Once
	releaseErr error
}

func (p *process) exited() bool {
	select {
	case <-p.remote.exited:
		return true
	default:
		return false
	}
}

// waitExit reports whether the process exits within d.
func (p *process) waitExit(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-p.remote.exited:
		return true
	case <-t.C:
	case <-ctx.Done():
	}
	return p.exited()
}

// stop stops the process on purpose and releases it.
func (p *process) stop() error {
	p.stopping.Store(true)
	return p.release()
}

// release kills the process if it still runs (go-plugin first asks it to
// exit, then kills it after 2s), waits for go-plugin's goroutines and
// removes the process's directory. It is safe to call more than once.
func (p *process) release() error {
	p.releaseOne.Do(func() {
		p.client.Kill()
		if err := os.RemoveAll(p.dir); err != nil {
			p.releaseErr = fmt.Errorf("goplugin: removing a plugin's directory: %w", err)
		}
	})
	return p.releaseErr
}
