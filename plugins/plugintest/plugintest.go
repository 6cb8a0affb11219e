// Package plugintest gives tests real plugins: the built-in adapters and
// judging protocols as WebAssembly modules and go-plugin binaries, pinned in a
// manifest, and any other package built the same way. `make test` prebuilds
// the built-ins into CONCLAVE_PLUGIN_DIR; without it they are built once per
// test process (the Go build cache keeps that cheap).
package plugintest

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/conclavehq/conclave/plugins/manifest"
)

const module = "github.com/conclavehq/conclave"

// Built-in plugin names.
var (
	Adapters  = []string{"openai", "anthropic", "gemini", "bedrock"}
	Protocols = []string{"direct", "pairwise", "plurality"}
)

var (
	mu       sync.Mutex
	buildDir string
)

// Main runs the tests and removes what this process built.
func Main(m *testing.M) {
	code := m.Run()
	Cleanup()
	os.Exit(code)
}

// Cleanup removes what this process built; for a TestMain that cannot use
// Main.
func Cleanup() {
	mu.Lock()
	defer mu.Unlock()
	if buildDir != "" {
		_ = os.RemoveAll(buildDir)
		buildDir = ""
	}
}

func dir(t testing.TB) string {
	mu.Lock()
	defer mu.Unlock()
	if buildDir == "" {
		d, err := os.MkdirTemp("", "conclave-plugins")
		if err != nil {
			t.Fatalf("plugintest: %v", err)
		}
		buildDir = d
	}
	return buildDir
}

// Builtin returns the manifest of the built-in plugins: entries named
// "<name>-wasm" and "<name>-goplugin" for every adapter and protocol. A
// prebuilt manifest in CONCLAVE_PLUGIN_DIR may list more (make plugins also
// pins the example adapters); only the built-ins are returned.
func Builtin(t testing.TB) *manifest.Manifest {
	t.Helper()
	if d := os.Getenv("CONCLAVE_PLUGIN_DIR"); d != "" {
		if m, err := manifest.Load(filepath.Join(d, "plugins.yaml")); err == nil {
			want := map[string]bool{}
			for _, n := range append(slices.Clone(Adapters), Protocols...) {
				want[n+"-wasm"], want[n+"-goplugin"] = true, true
			}
			m.Plugins = slices.DeleteFunc(m.Plugins, func(e manifest.Entry) bool { return !want[e.Name] })
			if len(m.Plugins) == len(want) {
				return m
			}
		}
	}
	m := &manifest.Manifest{}
	for _, n := range Adapters {
		m.Plugins = append(m.Plugins, *Wasm(t, n+"-wasm", manifest.KindAdapter, module+"/plugins/builtin/wasm/"+n),
			*GoPlugin(t, n+"-goplugin", manifest.KindAdapter, module+"/plugins/builtin/goplugin/"+n))
	}
	for _, n := range Protocols {
		m.Plugins = append(m.Plugins, *Wasm(t, n+"-wasm", manifest.KindProtocol, module+"/plugins/builtin/wasm/"+n),
			*GoPlugin(t, n+"-goplugin", manifest.KindProtocol, module+"/plugins/builtin/goplugin/"+n))
	}
	return m
}

var built sync.Map // output path → *sync.Once-guarded result

type result struct {
	once sync.Once
	err  error
}

// Wasm builds pkg as a wasip1 reactor module and returns its pinned entry.
func Wasm(t testing.TB, name, kind, pkg string) *manifest.Entry {
	t.Helper()
	out := filepath.Join(dir(t), name+".wasm")
	build(t, out, []string{"GOOS=wasip1", "GOARCH=wasm"}, "-buildmode=c-shared", pkg)
	return entry(t, name, kind, manifest.CarrierWasm, out)
}

// GoPlugin builds pkg as a go-plugin binary and returns its pinned entry.
func GoPlugin(t testing.TB, name, kind, pkg string) *manifest.Entry {
	t.Helper()
	out := filepath.Join(dir(t), name)
	build(t, out, nil, "", pkg)
	return entry(t, name, kind, manifest.CarrierGoPlugin, out)
}

func build(t testing.TB, out string, env []string, mode, pkg string) {
	t.Helper()
	r, _ := built.LoadOrStore(out, &result{})
	res := r.(*result)
	res.once.Do(func() {
		args := []string{"build", "-trimpath"}
		if mode != "" {
			args = append(args, mode)
		}
		args = append(args, "-o", out, pkg)
		cmd := exec.Command("go", args...)
		cmd.Env = append(os.Environ(), env...)
		if b, err := cmd.CombinedOutput(); err != nil {
			res.err = fmt.Errorf("go %s: %v\n%s", strings.Join(args, " "), err, b)
		}
	})
	if res.err != nil {
		t.Fatalf("plugintest: %v", res.err)
	}
}

func entry(t testing.TB, name, kind, carrier, path string) *manifest.Entry {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("plugintest: %v", err)
	}
	sum := sha256.Sum256(b)
	return &manifest.Entry{Name: name, Kind: kind, Carrier: carrier, Path: path, SHA256: hex.EncodeToString(sum[:])}
}

// WriteManifest writes m as a plugins.yaml in a fresh directory and returns
// its path.
func WriteManifest(t testing.TB, m *manifest.Manifest) string {
	t.Helper()
	var b strings.Builder
	b.WriteString("plugins:\n")
	for _, e := range m.Plugins {
		fmt.Fprintf(&b, "  - {name: %s, kind: %s, carrier: %s, path: %q, sha256: %s}\n", e.Name, e.Kind, e.Carrier, e.Path, e.SHA256)
	}
	path := filepath.Join(t.TempDir(), "plugins.yaml")
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatalf("plugintest: %v", err)
	}
	return path
}
