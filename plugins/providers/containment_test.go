package providers_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/internal/config"
	"github.com/conclavehq/conclave/plugins/egress/creds"
	"github.com/conclavehq/conclave/plugins/manifest"
	"github.com/conclavehq/conclave/plugins/plugintest"
	"github.com/conclavehq/conclave/plugins/providers"
	"github.com/conclavehq/conclave/plugins/wasmhost"
)

// provider stands in for a provider in containment tests: it records what
// arrives and echoes the body back.
type provider struct {
	srv  *httptest.Server
	mu   sync.Mutex
	auth []string
	body []string
}

func newProvider(t *testing.T) *provider {
	p := &provider{}
	p.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		p.mu.Lock()
		p.auth = append(p.auth, r.Header.Get("Authorization"))
		p.body = append(p.body, string(b))
		p.mu.Unlock()
		_, _ = w.Write([]byte(`{"ok":true}`))
	}))
	t.Cleanup(p.srv.Close)
	return p
}

func (p *provider) last() (auth, body string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.auth) == 0 {
		return "", ""
	}
	return p.auth[len(p.auth)-1], p.body[len(p.body)-1]
}

const (
	realCredential = "sk-real-credential-0123456789abcdef"
	canary         = "canary-value-the-guest-must-not-see"
)

// A hostile WebAssembly adapter and a crashing go-plugin adapter are stopped
// or refused, never see the credential, and the gateway keeps serving —
// through the same path every seat call takes: the egress layer.
func TestHostilePluginsAreContained(t *testing.T) {
	// Not parallel: it sets a process environment variable the guest must
	// not be able to read.
	require.NoError(t, os.Setenv("CONCLAVE_WASM_CANARY", canary))
	t.Cleanup(func() { _ = os.Unsetenv("CONCLAVE_WASM_CANARY") })
	ctx := context.Background()
	prov := newProvider(t)

	hostile := plugintest.Wasm(t, "hostile", manifest.KindAdapter, "github.com/conclavehq/conclave/plugins/wasmhost/testdata/hostile")
	crashing := plugintest.GoPlugin(t, "crashing", manifest.KindAdapter, "github.com/conclavehq/conclave/plugins/goplugin/testdata/adapterplugin")
	mpath := plugintest.WriteManifest(t, &manifest.Manifest{Plugins: []manifest.Entry{*hostile, *crashing}})

	cfg, err := config.Builtin()
	require.NoError(t, err)
	cfg.Engines = []config.Engine{
		{ID: "x/hostile", Family: "x", MaxTier: "plus", Adapter: "hostile", Endpoint: prov.srv.URL, Carrier: "wasm", Plugin: "hostile"},
		{ID: "x/crashing", Family: "x", MaxTier: "plus", Adapter: "testplugin", Endpoint: prov.srv.URL, Carrier: "goplugin", Plugin: "crashing"},
		{ID: "sim/atlas", Family: "sim-openai", MaxTier: "plus", Adapter: "openai", Endpoint: "sim"},
	}
	cfg.Modes = []config.Mode{{Key: "k", ID: "k-mode", Name: "K", Critique: "never", MaxRounds: 1,
		Seats: map[string][]core.Seat{"plus": {{Engine: "x/hostile"}, {Engine: "x/crashing"}, {Engine: "sim/atlas"}}}}}
	catalog, err := cfg.Catalog()
	require.NoError(t, err)
	p, err := providers.Start(ctx, providers.Config{
		Catalog: catalog, ManifestPath: mpath,
		Wasm:        wasmhost.Config{CallTimeout: 2 * time.Second, MemoryLimitPages: 1024, MaxOutputBytes: 1 << 20},
		Credentials: creds.StaticCredentials{Key: realCredential},
	})
	require.NoError(t, err)
	t.Cleanup(func() { p.Stop(context.Background()) })

	call := func(engine, model string) *core.SeatAnswer {
		t.Helper()
		ans, err := p.Call(ctx, engine, "", &core.SeatRequest{Model: model, Messages: []core.Message{{Role: core.RoleUser, Content: "hello"}}})
		require.NoError(t, err)
		return ans
	}
	servesNormally := func() {
		t.Helper()
		ans := call("x/hostile", "echo")
		require.Nil(t, ans.Error, "the wasm carrier serves again: %+v", ans.Error)
		auth, _ := prov.last()
		require.Equal(t, "Bearer "+realCredential, auth)
		ans = call("x/crashing", "echo")
		require.Nil(t, ans.Error, "the go-plugin carrier serves again: %+v", ans.Error)
		sim, err := p.Call(ctx, "sim/atlas", "", &core.SeatRequest{Messages: []core.Message{{Role: core.RoleUser, Content: "What is 2 + 3?"}}})
		require.NoError(t, err)
		require.Nil(t, sim.Error)
		require.Contains(t, sim.Text, "5", "other engines keep answering")
	}
	servesNormally()

	// The guest plants its own Authorization header: the egress layer strips
	// it and sends the real credential, which the guest never saw.
	ans := call("x/hostile", "auth")
	require.Nil(t, ans.Error)
	auth, _ := prov.last()
	require.Equal(t, "Bearer "+realCredential, auth)

	// It looks for files, environment, arguments, clock and host name, and
	// reports what it found in the request body: nothing.
	ans = call("x/hostile", "snoop")
	require.Nil(t, ans.Error)
	_, body := prov.last()
	var snoop struct {
		File     string   `json:"file"`
		FileErr  string   `json:"file_err"`
		Dir      []string `json:"dir"`
		Environ  []string `json:"environ"`
		Home     string   `json:"home"`
		Canary   string   `json:"canary"`
		Now      string   `json:"now"`
		Hostname string   `json:"hostname"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &snoop))
	require.Empty(t, snoop.File, "the guest read a file")
	require.NotEmpty(t, snoop.FileErr)
	require.Empty(t, snoop.Dir)
	require.Empty(t, snoop.Environ)
	require.Empty(t, snoop.Home)
	require.Empty(t, snoop.Canary)
	require.NotContains(t, body, realCredential)
	require.False(t, strings.HasPrefix(snoop.Now, time.Now().UTC().Format("2006")), "the guest read the real clock: %s", snoop.Now)

	// Infinite loop, memory bomb, panic, a 100 MB result: each call fails
	// as adapter_failed within the call timeout, the instance is discarded,
	// and the next call is served.
	for _, model := range []string{"loop", "membomb", "panic", "huge"} {
		start := time.Now()
		ans := call("x/hostile", model)
		require.NotNil(t, ans.Error, model)
		require.Equal(t, core.ErrorAdapterFailed, ans.Error.Class, model)
		require.Less(t, time.Since(start), 30*time.Second, "%s was stopped", model)
		servesNormally()
	}

	// A go-plugin that crashes mid-call fails that call and is restarted.
	for _, model := range []string{"crash", "panic"} {
		ans := call("x/crashing", model)
		require.NotNil(t, ans.Error, model)
		require.Equal(t, core.ErrorAdapterFailed, ans.Error.Class, model)
		servesNormally()
	}
}
