package ollama_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/core/adaptertest"
	"github.com/conclavehq/conclave/plugins/goplugin"
	"github.com/conclavehq/conclave/plugins/manifest"
	"github.com/conclavehq/conclave/plugins/plugintest"
	"github.com/conclavehq/conclave/plugins/wasmhost"
)

// The guest mains, and the names make plugins gives what it builds from
// them: files in CONCLAVE_PLUGIN_DIR and entries in its plugins.yaml.
const (
	wasmMain     = "github.com/conclavehq/conclave/adapters/example/ollama/wasm"
	goPluginMain = "github.com/conclavehq/conclave/adapters/example/ollama/goplugin"

	wasmFile       = "ollama-example.wasm"
	wasmEntry      = "ollama-example-wasm"
	goPluginFile   = "ollama-example-goplugin"
	goPluginEntry  = "ollama-example-goplugin"
	fixtureAdapter = "ollama"
)

// TestMain removes the plugins this test process built.
func TestMain(m *testing.M) { plugintest.Main(m) }

// TestConformanceWasm runs the same golden fixtures through the WebAssembly
// carrier: the wasm guest main, built and pinned, loaded into wazero.
func TestConformanceWasm(t *testing.T) {
	t.Parallel()
	adaptertest.Run(t, fixtureAdapter, loadWasm(t))
}

// TestConformanceGoPlugin runs the same golden fixtures through the
// go-plugin carrier: the go-plugin main, built and pinned, as a process.
func TestConformanceGoPlugin(t *testing.T) {
	t.Parallel()
	h := goplugin.New(goplugin.Config{})
	t.Cleanup(func() { require.NoError(t, h.Close()) })
	e := prebuilt(t, goPluginFile, goPluginEntry, manifest.CarrierGoPlugin)
	if e == nil {
		e = plugintest.GoPlugin(t, goPluginEntry, manifest.KindAdapter, goPluginMain)
	}
	a, err := h.LoadAdapter(t.Context(), e)
	require.NoError(t, err)
	adaptertest.Run(t, fixtureAdapter, a)
}

// loadWasm loads the wasm guest on a Host of its own, closed when the test
// ends.
func loadWasm(t *testing.T) core.Adapter {
	t.Helper()
	// The Host outlives t.Context(), which ends before cleanups run.
	h, err := wasmhost.New(context.Background(), wasmhost.Config{})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, h.Close(context.Background())) })
	e := prebuilt(t, wasmFile, wasmEntry, manifest.CarrierWasm)
	if e == nil {
		e = plugintest.Wasm(t, wasmEntry, manifest.KindAdapter, wasmMain)
	}
	a, err := h.LoadAdapter(t.Context(), e)
	require.NoError(t, err)
	return a
}

// prebuilt pins the file make plugins left in CONCLAVE_PLUGIN_DIR, or
// returns nil when there is none; the caller then builds the main itself.
func prebuilt(t *testing.T, file, name, carrier string) *manifest.Entry {
	t.Helper()
	dir := os.Getenv("CONCLAVE_PLUGIN_DIR")
	if dir == "" || !filepath.IsAbs(dir) {
		return nil
	}
	path := filepath.Join(dir, file)
	if _, err := os.Stat(path); err != nil {
		return nil
	}
	sum, err := manifest.Digest(path)
	require.NoError(t, err)
	return &manifest.Entry{Name: name, Kind: manifest.KindAdapter, Carrier: carrier, Path: path, SHA256: sum}
}
