package providers_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/conclavehq/conclave/internal/logtest"

	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/adapters/sim"
	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/internal/config"
	"github.com/conclavehq/conclave/plugins/plugintest"
	"github.com/conclavehq/conclave/plugins/providers"
)

func TestMain(m *testing.M) { plugintest.Main(m) }

func debugLogger(b *logtest.Buffer) *slog.Logger {
	return slog.New(slog.NewJSONHandler(b, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// catalogWithTitan is the built-in catalog plus a simulated Bedrock engine,
// sim/titan.
func catalogWithTitan(t *testing.T) *core.Catalog {
	t.Helper()
	cfg, err := config.Builtin()
	require.NoError(t, err)
	cfg.Engines = append(cfg.Engines, config.Engine{ID: "sim/titan", Family: "sim-aws", MaxTier: "plus", Adapter: "bedrock", Endpoint: "sim"})
	catalog, err := cfg.Catalog()
	require.NoError(t, err)
	return catalog
}

// The built-in configuration, plus a simulated Bedrock engine, answers
// through the real adapters, the egress layer and the in-process simulator.
func TestBuiltinEnginesAnswerThroughTheSimulator(t *testing.T) {
	t.Parallel()
	catalog := catalogWithTitan(t)
	ctx := context.Background()
	p, err := providers.Start(ctx, providers.Config{Catalog: catalog, Simulator: sim.Config{TimeScale: 0.05}})
	require.NoError(t, err)
	t.Cleanup(func() { p.Stop(context.Background()) })
	require.NotNil(t, p.Simulator())

	for id := range catalog.Engines() {
		t.Run(id, func(t *testing.T) {
			t.Parallel()
			e, ok := p.Engine(id)
			require.True(t, ok)
			require.True(t, strings.HasPrefix(e.Endpoint, p.Simulator().URL()), "endpoint resolved to the simulator: %s", e.Endpoint)
			ans, err := p.Call(ctx, id, "", &core.SeatRequest{Messages: []core.Message{{Role: core.RoleUser, Content: "What is 17 * 23?"}}, MaxTokens: 200})
			require.NoError(t, err)
			require.Nil(t, ans.Error, "%+v", ans.Error)
			require.Contains(t, ans.Text, "391")
			require.Equal(t, core.FinishStop, ans.Finish)
			require.Positive(t, ans.InputTokens)
			require.Positive(t, ans.OutputTokens)
		})
	}
	_, err = p.Call(ctx, "sim/nope", "", &core.SeatRequest{})
	require.Error(t, err)
}

// The simulator learns each simulated engine's family from the
// configuration — sim/titan is no built-in of the simulator — so that its
// judges know whose answer is whose.
func TestSimulatorKnowsConfiguredFamilies(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p, err := providers.Start(ctx, providers.Config{Catalog: catalogWithTitan(t), Simulator: sim.Config{TimeScale: 0.01}})
	require.NoError(t, err)
	t.Cleanup(func() { p.Stop(context.Background()) })
	ans, err := p.Call(ctx, "sim/titan", "", &core.SeatRequest{Messages: []core.Message{
		{Role: core.RoleUser, Content: "Should we keep the nightly batch job or move the pipeline to streaming?"}}})
	require.NoError(t, err)
	require.Nil(t, ans.Error)
	rec, ok := p.Simulator().Answer(ans.Text)
	require.True(t, ok)
	require.Equal(t, "titan", rec.Engine)
	require.Equal(t, "sim-aws", rec.Family)
	require.Equal(t, sim.KindAnswer, rec.Kind)
}

func TestStartRefusesWhatItCannotWire(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cases := map[string]struct {
		engine   config.Engine
		manifest string
		want     string
	}{
		"unknown native adapter":  {config.Engine{ID: "x/a", Family: "x", MaxTier: "plus", Adapter: "cohere", Endpoint: "sim"}, "", `no built-in adapter "cohere"`},
		"plugin without manifest": {config.Engine{ID: "x/a", Family: "x", MaxTier: "plus", Adapter: "openai", Endpoint: "sim", Carrier: "wasm", Plugin: "openai-wasm"}, "", "needs a plugin manifest"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			cfg, err := config.Builtin()
			require.NoError(t, err)
			cfg.Engines = []config.Engine{tc.engine}
			cfg.Modes = []config.Mode{{Key: "k", ID: "k-mode", Name: "K", Critique: "never", MaxRounds: 1, Seats: map[string][]core.Seat{"plus": {{Engine: "x/a"}}}}}
			catalog, err := cfg.Catalog()
			require.NoError(t, err)
			_, err = providers.Start(ctx, providers.Config{Catalog: catalog, ManifestPath: tc.manifest})
			require.ErrorContains(t, err, "engine x/a")
			require.ErrorContains(t, err, tc.want)
		})
	}
}

// recorder wraps an adapter on any carrier and keeps everything handed to it.
type recorder struct {
	core.Adapter
	mu   sync.Mutex
	seen []byte
}

func (r *recorder) note(v any) {
	b, _ := json.Marshal(v)
	r.mu.Lock()
	r.seen = append(r.seen, b...)
	r.mu.Unlock()
}

func (r *recorder) BuildRequest(ctx context.Context, req *core.SeatRequest) (*core.HTTPRequest, error) {
	r.note(req)
	return r.Adapter.BuildRequest(ctx, req)
}

func (r *recorder) ParseResponse(ctx context.Context, res *core.HTTPResponse) (*core.SeatAnswer, error) {
	r.note(res)
	return r.Adapter.ParseResponse(ctx, res)
}

// The egress layer injects the credential — the simulator refuses calls
// without it — and no carrier ever receives it: not natively, not in a
// WebAssembly module, not in a go-plugin process; nor does any log line.
func TestCredentialIsInjectedAndNeverReachesACarrierOrALog(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	m := plugintest.Builtin(t)
	logs := &logtest.Buffer{}
	cfg, err := config.Builtin()
	require.NoError(t, err)
	cfg.Engines = nil
	var seats []core.Seat
	for _, adapter := range plugintest.Adapters {
		for _, carrier := range []string{"native", "wasm", "goplugin"} {
			e := config.Engine{ID: "sim/" + carrier + "-" + adapter, Family: "sim-" + adapter, MaxTier: "pro", Adapter: adapter, Endpoint: "sim", Carrier: carrier, Model: "atlas"}
			if carrier != "native" {
				e.Plugin = adapter + "-" + carrier
			}
			cfg.Engines = append(cfg.Engines, e)
			seats = append(seats, core.Seat{Engine: e.ID})
		}
	}
	cfg.Modes = []config.Mode{{Key: "all", ID: "all-carriers", Name: "All", Critique: "never", MaxRounds: 1, Seats: map[string][]core.Seat{"plus": seats}}}
	catalog, err := cfg.Catalog()
	require.NoError(t, err)

	p, err := providers.Start(ctx, providers.Config{
		Catalog: catalog, ManifestPath: plugintest.WriteManifest(t, m), Logger: debugLogger(logs),
		Simulator: sim.Config{TimeScale: 0.02},
	})
	require.NoError(t, err)
	t.Cleanup(func() { p.Stop(context.Background()) })

	recorders := map[string]*recorder{}
	for _, s := range seats {
		a, ok := p.Adapter(s.Engine)
		require.True(t, ok)
		recorders[s.Engine] = &recorder{Adapter: a}
	}
	for _, s := range seats {
		e, _ := p.Engine(s.Engine)
		ans, err := p.Egress().Call(ctx, &core.EgressCall{Engine: e, Adapter: recorders[s.Engine], Request: &core.SeatRequest{
			Model: e.Model, Messages: []core.Message{{Role: core.RoleUser, Content: "What is 6 * 7?"}},
		}})
		require.NoError(t, err, s.Engine)
		require.Nil(t, ans.Error, "%s: %+v — the simulator refuses calls without the injected credential", s.Engine, ans.Error)
		require.Contains(t, ans.Text, "42", s.Engine)
	}

	secret := p.SimulatorKey()
	require.NotEmpty(t, secret)
	awsSecret := p.Simulator().AWSAccount().SecretAccessKey
	require.NotEmpty(t, awsSecret)
	for id, r := range recorders {
		require.NotEmpty(t, r.seen, id)
		require.NotContains(t, string(r.seen), secret, "%s received the credential", id)
		require.NotContains(t, string(r.seen), awsSecret, "%s received the AWS base secret", id)
		require.NotContains(t, strings.ToLower(string(r.seen)), "x-amz-security-token", "%s received a session token header", id)
	}
	require.NotContains(t, logs.String(), secret, "a log line carries the credential")
	require.NotContains(t, logs.String(), awsSecret, "a log line carries the AWS base secret")
}

func TestDefaultTimeoutIsBounded(t *testing.T) {
	// Guard against a configuration that would let a hung provider hold a
	// seat for longer than the spec's client timeout.
	cfg, err := config.Builtin()
	require.NoError(t, err)
	require.LessOrEqual(t, cfg.Egress.DefaultTimeout, 300*time.Second)
}
