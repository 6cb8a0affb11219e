package goplugin_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"

	"github.com/conclavehq/conclave/internal/logtest"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/plugins/goplugin"
	"github.com/conclavehq/conclave/plugins/goplugin/internal/testplugin"
	"github.com/conclavehq/conclave/plugins/manifest"
)

const module = "github.com/conclavehq/conclave"

// buildDir holds the plugin binaries the tests build.
var buildDir string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "goplugin-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	buildDir = dir
	code := m.Run()
	_ = os.RemoveAll(dir)
	if code == 0 {
		// Every test closes its Host, which waits for go-plugin's
		// goroutines; none may outlive it.
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// binary is a plugin binary the tests run. The tests use
// $CONCLAVE_PLUGIN_DIR/<name>-goplugin when it exists (an absolute path;
// make can prebuild the built-in plugins there, e.g. openai-goplugin) and
// otherwise build pkg once into buildDir; the build cache makes that cheap.
type binary struct {
	pkg string

	once   sync.Once
	path   string
	sha256 string
	err    error
}

var binaries = map[string]*binary{
	"testadapter":  {pkg: module + "/plugins/goplugin/testdata/adapterplugin"},
	"testprotocol": {pkg: module + "/plugins/goplugin/testdata/protocolplugin"},
	"openai":       {pkg: module + "/plugins/builtin/goplugin/openai"},
	"anthropic":    {pkg: module + "/plugins/builtin/goplugin/anthropic"},
	"gemini":       {pkg: module + "/plugins/builtin/goplugin/gemini"},
	"bedrock":      {pkg: module + "/plugins/builtin/goplugin/bedrock"},
	"direct":       {pkg: module + "/plugins/builtin/goplugin/direct"},
	"pairwise":     {pkg: module + "/plugins/builtin/goplugin/pairwise"},
	"plurality":    {pkg: module + "/plugins/builtin/goplugin/plurality"},
}

// pluginPath returns the path and digest of the named plugin binary.
func pluginPath(t testing.TB, name string) (path, sha256 string) {
	t.Helper()
	b, ok := binaries[name]
	require.True(t, ok, "no plugin binary %q", name)
	b.once.Do(func() {
		if dir := os.Getenv("CONCLAVE_PLUGIN_DIR"); dir != "" {
			if !filepath.IsAbs(dir) {
				// Tests run in their package's directory.
				b.err = fmt.Errorf("CONCLAVE_PLUGIN_DIR=%s: must be an absolute path", dir)
				return
			}
			if p := filepath.Join(dir, name+"-goplugin"); fileExists(p) {
				b.path = p
			}
		}
		if b.path == "" {
			p := filepath.Join(buildDir, name+"-goplugin")
			if out, err := exec.Command("go", "build", "-o", p, b.pkg).CombinedOutput(); err != nil {
				b.err = fmt.Errorf("building %s: %w\n%s", b.pkg, err, out)
				return
			}
			b.path = p
		}
		b.sha256, b.err = manifest.Digest(b.path)
	})
	require.NoError(t, b.err)
	return b.path, b.sha256
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// entry returns a manifest entry for the named binary, listed as plugin
// entryName (so that one binary can back several plugins, each its own
// process).
func entry(t testing.TB, binaryName, entryName, kind string) *manifest.Entry {
	t.Helper()
	path, sum := pluginPath(t, binaryName)
	return &manifest.Entry{Name: entryName, Kind: kind, Carrier: manifest.CarrierGoPlugin, Path: path, SHA256: sum}
}

// testBundle is what most tests need: a Host and what it logged.
type testBundle struct {
	host *goplugin.Host
	logs *logtest.Buffer
}

func setup(t testing.TB, cfg goplugin.Config) *testBundle {
	t.Helper()
	logs := &logtest.Buffer{}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	h := goplugin.New(cfg)
	t.Cleanup(func() {
		require.NoError(t, h.Close())
		if t.Failed() {
			t.Logf("plugin logs:\n%s", logs.String())
		}
	})
	return &testBundle{host: h, logs: logs}
}

func (b *testBundle) loadAdapter(t testing.TB, name string) core.Adapter {
	t.Helper()
	a, err := b.host.LoadAdapter(t.Context(), entry(t, "testadapter", name, manifest.KindAdapter))
	require.NoError(t, err)
	return a
}

// probe asks the test adapter for its pid and the number of calls blocked
// in it.
func probe(ctx context.Context, t testing.TB, a core.Adapter) (pid, blocked int) {
	t.Helper()
	req, err := a.BuildRequest(ctx, &core.SeatRequest{Model: testplugin.ModelPID})
	require.NoError(t, err)
	pid, err = strconv.Atoi(req.Header["pid"])
	require.NoError(t, err)
	blocked, err = strconv.Atoi(req.Header["blocked"])
	require.NoError(t, err)
	return pid, blocked
}

func seatRequest() *core.SeatRequest {
	temp := 0.2
	return &core.SeatRequest{
		Model:       "test-model",
		System:      "You are terse.",
		Messages:    []core.Message{{Role: core.RoleUser, Content: "What is 2+2?"}},
		MaxTokens:   64,
		Temperature: &temp,
		JSONOutput:  true,
	}
}
