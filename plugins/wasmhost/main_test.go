package wasmhost_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/plugins/manifest"
	"github.com/conclavehq/conclave/plugins/wasmhost"
)

// The canary is set in the test process's environment; the hostile guest
// must not see it.
const (
	canaryEnv   = "CONCLAVE_WASM_CANARY"
	canaryValue = "canary-4f1d0c9e-must-not-leak"
)

// buildDir holds the guests this run builds (those CONCLAVE_PLUGIN_DIR does
// not hold prebuilt) and the compilation cache the tests' Hosts share.
var buildDir string

func TestMain(m *testing.M) {
	if err := os.Setenv(canaryEnv, canaryValue); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	dir, err := os.MkdirTemp("", "wasmhost-guests-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	buildDir = dir
	goleak.VerifyTestMain(m, goleak.Cleanup(func(int) { os.RemoveAll(dir) }))
}

// guestPackages maps a guest's name to its package, relative to this one.
var guestPackages = map[string]string{
	"hostile":   "./testdata/hostile",
	"openai":    "../builtin/wasm/openai",
	"anthropic": "../builtin/wasm/anthropic",
	"gemini":    "../builtin/wasm/gemini",
	"bedrock":   "../builtin/wasm/bedrock",
	"direct":    "../builtin/wasm/direct",
	"pairwise":  "../builtin/wasm/pairwise",
	"plurality": "../builtin/wasm/plurality",
}

var builds sync.Map // guest name → func() (string, error)

// guestPath returns the path of the guest's .wasm file: the prebuilt one in
// CONCLAVE_PLUGIN_DIR if there is one, else one built once per test run.
func guestPath(tb testing.TB, name string) string {
	tb.Helper()
	if dir := os.Getenv("CONCLAVE_PLUGIN_DIR"); dir != "" {
		p := filepath.Join(dir, name+".wasm")
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	pkg, ok := guestPackages[name]
	require.True(tb, ok, "no guest named %q", name)
	f, _ := builds.LoadOrStore(name, sync.OnceValues(func() (string, error) { return buildGuest(name, pkg) }))
	p, err := f.(func() (string, error))()
	require.NoError(tb, err)
	return p
}

var warmed sync.Map // guest name → func() error

// warm compiles the guest into the shared compilation cache once, so that
// tests running in parallel do not all compile it at the same time.
func warm(tb testing.TB, e *manifest.Entry) {
	tb.Helper()
	f, _ := warmed.LoadOrStore(e.Name, sync.OnceValue(func() error {
		ctx := context.Background()
		h, err := wasmhost.New(ctx, wasmhost.Config{PoolSize: 1, CacheDir: sharedCache()})
		if err != nil {
			return err
		}
		// Compiling is what fills the cache; whether the module then passes
		// its handshake is for the test to find out.
		if e.Kind == manifest.KindProtocol {
			_, _ = h.LoadProtocol(ctx, e)
		} else {
			_, _ = h.LoadAdapter(ctx, e)
		}
		return h.Close(ctx)
	}))
	require.NoError(tb, f.(func() error)())
}

func sharedCache() string { return filepath.Join(buildDir, "cache") }

func buildGuest(name, pkg string) (string, error) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		return "", fmt.Errorf("building guest %s: %w", name, err)
	}
	out := filepath.Join(buildDir, name+".wasm")
	cmd := exec.Command(goBin, "build", "-buildmode=c-shared", "-o", out, pkg)
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm", "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building guest %s: %w\n%s", name, err, b)
	}
	return out, nil
}

// entry returns a manifest entry pinning the guest's current bytes.
func entry(tb testing.TB, guest, kind string) *manifest.Entry {
	tb.Helper()
	p := guestPath(tb, guest)
	sum, err := manifest.Digest(p)
	require.NoError(tb, err)
	e := &manifest.Entry{Name: guest, Kind: kind, Carrier: manifest.CarrierWasm, Path: p, SHA256: sum}
	warm(tb, e)
	return e
}

// newHost starts a Host that the test closes. Unless the test sets one, the
// Host shares an on-disk compilation cache with the rest of the run, so each
// guest compiles once.
func newHost(tb testing.TB, cfg wasmhost.Config) *wasmhost.Host {
	tb.Helper()
	if cfg.CacheDir == "" {
		cfg.CacheDir = sharedCache()
	}
	h, err := wasmhost.New(context.Background(), cfg)
	require.NoError(tb, err)
	tb.Cleanup(func() { require.NoError(tb, h.Close(context.Background())) })
	return h
}

func statsOf(tb testing.TB, h *wasmhost.Host, name string) wasmhost.ModuleStats {
	tb.Helper()
	for _, s := range h.Stats() {
		if s.Name == name {
			return s
		}
	}
	tb.Fatalf("no stats for module %s", name)
	return wasmhost.ModuleStats{}
}

// requireCarrierErr checks that err is a carrier failure of the given kind.
func requireCarrierErr(tb testing.TB, err, kind error) *wasmhost.CallError {
	tb.Helper()
	require.ErrorIs(tb, err, kind)
	require.ErrorIs(tb, err, wasmhost.ErrCarrier)
	var ce *wasmhost.CallError
	require.ErrorAs(tb, err, &ce)
	return ce
}

// echo makes a well-behaved call and checks its answer.
func echo(tb testing.TB, a core.Adapter) {
	tb.Helper()
	req, err := a.BuildRequest(context.Background(), &core.SeatRequest{Model: "echo", Messages: []core.Message{{Role: "user", Content: "hello"}}})
	require.NoError(tb, err)
	require.Equal(tb, "/echo", req.Path)
	var got core.SeatRequest
	require.NoError(tb, json.Unmarshal(req.Body, &got))
	require.Equal(tb, "echo", got.Model)
}
