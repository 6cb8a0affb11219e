package config_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/core/storetest"
	"github.com/conclavehq/conclave/internal/config"
)

func TestDefaultServesBothModes(t *testing.T) {
	t.Setenv("DATABASE_URL", "")
	t.Setenv("CONCLAVE_ADDR", "")
	c, err := config.Load("")
	require.NoError(t, err)
	cat, err := c.Catalog()
	require.NoError(t, err)

	std, ok := cat.Resolve("conclave-standard")
	require.True(t, ok)
	byTicker, ok := cat.Resolve("CNCL:STND")
	require.True(t, ok)
	require.Same(t, std, byTicker)
	require.Equal(t, core.Micros(50_000), std.Pricing.SurchargeFor(core.DepthLight, false))
	require.Equal(t, core.Micros(100_000), std.Pricing.SurchargeFor(core.DepthMedium, false))
	require.Equal(t, core.Micros(150_000), std.Pricing.SurchargeFor(core.DepthDeep, false))
	require.Len(t, cat.Families(std), 3, "standard seats three provider families")
	require.Equal(t, core.CritiqueDeep, std.Deliberation.Critique)

	max, ok := cat.Resolve("CNCL:MAXX")
	require.True(t, ok)
	require.Equal(t, "conclave-max", max.ID)
	require.Equal(t, core.Micros(320_000), max.Pricing.Price())
	require.Equal(t, core.CritiqueAlways, max.Deliberation.Critique)
	for _, row := range max.Deliberation.Seats {
		for _, s := range row {
			e, _ := cat.Engine(s.Engine)
			require.Equal(t, core.TierPro, e.MaxTier, "max mode seats frontier engines only")
		}
	}
	require.Len(t, cat.ConfigHash(std), 12)
	require.NotEqual(t, cat.ConfigHash(std), cat.ConfigHash(max))

	require.Equal(t, "127.0.0.1:8080", c.Server.Addr)
	require.Equal(t, config.USD(2_000_000), c.Limits.CallCeilingUSD)
	require.Equal(t, 8000, c.Limits.MaxInputTokens)
}

func TestEnvironmentOverrides(t *testing.T) {
	t.Setenv("DATABASE_URL", "postgres://example/db")
	t.Setenv("CONCLAVE_ADDR", "127.0.0.1:9999")
	c, err := config.Load("")
	require.NoError(t, err)
	require.Equal(t, "postgres://example/db", c.Database.URL)
	require.Equal(t, "127.0.0.1:9999", c.Server.Addr)
}

func TestFileErrorsNameTheField(t *testing.T) {
	t.Setenv("DATABASE_URL", "")
	t.Setenv("CONCLAVE_DATA_DIR", "")
	t.Setenv("CONCLAVE_ADDR", "")
	t.Setenv("CONCLAVE_OPERATOR_ADDR", "")
	cases := map[string]struct{ yaml, want string }{
		"unknown field":    {"server:\n  adress: x\n", "field adress not found"},
		"bad level":        {"log:\n  level: loud\n", "log.level"},
		"bad money":        {"limits:\n  call_ceiling_usd: 1.0000001\n", "more than six decimal places"},
		"unknown engine":   {modesWith("{engine: sim/nope}"), `modes[0].seats.plus[0].engine: unknown engine "sim/nope"`},
		"tier too high":    {modesWith("{engine: sim/swift}"), `modes[0].seats.plus[0].engine: engine "sim/swift" only fills seats up to tier experience`},
		"bad ticker":       {"modes:\n  - {key: k, id: my-mode, ticker: ABC, name: N, critique: never, max_rounds: 1, seats: {plus: [{engine: sim/atlas}]}}\n", "modes[0].ticker"},
		"bad critique":     {"modes:\n  - {key: k, id: my-mode, name: N, critique: sometimes, max_rounds: 1, seats: {plus: [{engine: sim/atlas}]}}\n", "modes[0].critique"},
		"unknown depth":    {"modes:\n  - {key: k, id: my-mode, name: N, critique: never, max_rounds: 1, seats: {plus: [{engine: sim/atlas}]}, pricing: {surcharge_by_depth: {extreme: 1}}}\n", "modes[0].pricing.surcharge_by_depth"},
		"engine family":    {"engines:\n  - {id: e, max_tier: pro, adapter: openai}\n", "engines[0].family: required"},
		"negative cache":   {"auth:\n  key_cache_ttl: -1s\n", "auth.key_cache_ttl"},
		"quorum too high":  {"modes:\n  - {key: k, id: my-mode, name: N, critique: never, max_rounds: 1, quorum: 3, seats: {plus: [{engine: sim/atlas}]}}\n", "modes[0].quorum"},
		"hedge percentile": {"modes:\n  - {key: k, id: my-mode, name: N, critique: never, max_rounds: 1, hedge_percentile: 101, seats: {plus: [{engine: sim/atlas}]}}\n", "modes[0].hedge_percentile: must be between 0 and 100"},
		"negative memory":  {"server:\n  memory_limit_mib: -1\n", "server.memory_limit_mib: cannot be negative"},
		"negative floor":   {"server:\n  heap_floor_mib: -1\n", "server.heap_floor_mib: cannot be negative"},
		"blank operator":   {"server:\n  operator_addr: \"\"\n", `server.operator_addr: required; "off" disables`},
		"operator no port": {"server:\n  operator_addr: localhost\n", "server.operator_addr: \"localhost\" is not HOST:PORT"},
		"operator port":    {"server:\n  operator_addr: 127.0.0.1:99999\n", "server.operator_addr: \"127.0.0.1:99999\": the port"},
		"public url":       {"server:\n  public_url: ftp://conclave.example\n", "server.public_url"},
		"issuer":           {"auth:\n  authorization_servers: [\"/issuer\"]\n", "auth.authorization_servers[0]"},
		"trusted proxy":    {"server:\n  trusted_proxies: [10.0.0.0/8, proxy.internal]\n", `server.trusted_proxies[1]: "proxy.internal" is not a CIDR`},
		"session idle":     {"people:\n  session_idle: 10s\n", "people.session_idle: must be at least 1m"},
		"session max age":  {"people:\n  session_idle: 24h\n  session_max_age: 12h\n", "people.session_max_age: must be at least people.session_idle"},
		"hashes":           {"people:\n  max_concurrent_hashes: 0\n", "people.max_concurrent_hashes: must be at least 1"},
		"argon2 memory":    {"people:\n  argon2: {time: 2, memory_kib: 1024, threads: 1}\n", "people.argon2.memory_kib"},
		"operator = addr":  {"server:\n  addr: 127.0.0.1:7000\n  operator_addr: 127.0.0.1:7000\n", "is server.addr too"},
		"blank data dir":   {"data_dir: \"\"\n", "data_dir: required"},
		"retired data dir": {"database:\n  data_dir: /srv/conclave/pg\n", "database.data_dir: replaced by data_dir"},
		"negative wait":    {"limits:\n  repeat_wait: -1s\n", "limits.repeat_wait"},
		"wait past run":    {"limits:\n  repeat_wait: 301s\n", "limits.repeat_wait"},
		"judge name":       {"judges:\n  - {name: Nova Pro, engine: sim/nova-pro}\n", `judges[0].name: "Nova Pro": want lower-case`},
		"judge twice":      {"judges:\n  - {name: a, engine: sim/nova-pro}\n  - {name: a, engine: sim/atlas}\n", `judges[1].name: "a" names two judges`},
		"judge no engine":  {"judges:\n  - {name: a}\n", "judges[0].engine: required"},
		"judge engine":     {"judges:\n  - {name: a, engine: sim/nope}\n", `judges[0].engine: unknown engine "sim/nope"`},
		"judge family":     {"judges:\n  - {name: a, engine: sim/atlas}\n  - {name: b, engine: sim/swift}\n", `judges[1].engine: engine "sim/swift" is of family "sim-openai", as judge a's is`},
		"answer noise":     {"simulator:\n  quality: {answer_noise: 11}\n", "simulator.quality.answer_noise: must be at most 10"},
		"synthesis lift":   {"simulator:\n  quality: {synthesis_lift: -10.5}\n", "simulator.quality.synthesis_lift: must be -10 to 10"},
		"difficulty":       {"simulator:\n  quality: {difficulty: {light: -2, medium: 0, hard: 11}}\n", "simulator.quality.difficulty: each bucket's must be -10 to 10"},
		"synthesis best":   {"simulator:\n  quality: {synthesis_best: 1.5}\n", "simulator.quality.synthesis_best: must be 0 to 1"},
		"plan name":        {"plans:\n  - {name: Gold Plan, max_tier: pro}\n", `plans[0].name: "Gold Plan": want lower-case`},
		"plan twice":       {"plans:\n  - {name: gold, max_tier: pro}\n  - {name: gold, max_tier: plus}\n", `plans[1].name: "gold" names two plans`},
		"plan tier":        {"plans:\n  - {name: gold, max_tier: ultra}\n", `plans[0].max_tier: "ultra" is not experience (or free), plus or pro`},
		"plan no tier":     {"plans:\n  - {name: gold}\n", `plans[0].max_tier: "" is not experience`},
		"plan allowance":   {"plans:\n  - {name: gold, max_tier: pro, monthly_allowance_usd: -1}\n", "plans[0].monthly_allowance_usd: cannot be negative"},
		"plan money":       {"plans:\n  - {name: gold, max_tier: pro, monthly_allowance_usd: 1.0000001}\n", "more than six decimal places"},
		"plan concurrency": {"plans:\n  - {name: gold, max_tier: pro, concurrency: 1001}\n", "plans[0].concurrency: must be 1 to 1000"},
		"plan rpm":         {"plans:\n  - {name: gold, max_tier: pro, rpm: -5}\n", "plans[0].rpm: cannot be negative"},
		"plan mode":        {"plans:\n  - {name: gold, max_tier: pro, modes: [conclave-standard, \" \"]}\n", "plans[0].modes[1]: empty"},
		"judge engine dropped": {"engines:\n  - {id: sim/atlas, family: sim-openai, max_tier: plus, adapter: openai, endpoint: sim}\n" +
			"modes:\n  - {key: k, id: my-mode, name: N, critique: never, max_rounds: 1, seats: {plus: [{engine: sim/atlas}]}}\n" +
			"judges:\n  - {name: nova_pro, engine: sim/nova-pro}\n",
			`judges[0].engine: unknown engine "sim/nova-pro"`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "conclave.yaml")
			require.NoError(t, os.WriteFile(path, []byte(tc.yaml), 0o600))
			_, err := config.Load(path)
			require.Error(t, err)
			require.Contains(t, err.Error(), tc.want)
			require.Contains(t, err.Error(), path, "the error names the file")
		})
	}
}

// The operator listener (metrics, detailed readiness) is on loopback unless
// the file or the environment moves it, and "off" turns it off.
func TestOperatorAddrDefaultsToLoopback(t *testing.T) {
	t.Setenv("DATABASE_URL", "")
	t.Setenv("CONCLAVE_ADDR", "")
	t.Setenv("CONCLAVE_OPERATOR_ADDR", "")
	c, err := config.Load("")
	require.NoError(t, err)
	require.Equal(t, "127.0.0.1:8081", c.Server.OperatorAddr)

	path := filepath.Join(t.TempDir(), "conclave.yaml")
	require.NoError(t, os.WriteFile(path, []byte("server:\n  operator_addr: off\n"), 0o600))
	c, err = config.Load(path)
	require.NoError(t, err)
	require.Equal(t, config.OperatorOff, c.Server.OperatorAddr)

	t.Setenv("CONCLAVE_OPERATOR_ADDR", "10.0.0.5:9100")
	t.Setenv("CONCLAVE_OPERATOR_PUBLIC", "true") // off loopback: see operator_test.go
	c, err = config.Load(path)
	require.NoError(t, err)
	require.Equal(t, "10.0.0.5:9100", c.Server.OperatorAddr, "the environment overrides the file")
	t.Setenv("CONCLAVE_OPERATOR_ADDR", "off")
	c, err = config.Load("")
	require.NoError(t, err)
	require.Equal(t, config.OperatorOff, c.Server.OperatorAddr)
	t.Setenv("CONCLAVE_OPERATOR_ADDR", "nowhere")
	_, err = config.Load("")
	require.ErrorContains(t, err, "server.operator_addr")
}

// One setting places the local state: the managed cluster and the
// WebAssembly cache follow data_dir, from the file or CONCLAVE_DATA_DIR.
func TestDataDirPlacesTheClusterAndTheCache(t *testing.T) {
	t.Setenv("DATABASE_URL", "")
	t.Setenv("CONCLAVE_DATA_DIR", "")
	c, err := config.Load("")
	require.NoError(t, err)
	require.Equal(t, "./.data", c.DataDir)
	require.Equal(t, filepath.Join(".data", "pg"), c.ClusterDir())
	require.Equal(t, filepath.Join(".data", "wasm-cache"), c.WasmCache())

	path := filepath.Join(t.TempDir(), "conclave.yaml")
	require.NoError(t, os.WriteFile(path, []byte("data_dir: /srv/conclave\n"), 0o600))
	c, err = config.Load(path)
	require.NoError(t, err)
	require.Equal(t, "/srv/conclave/pg", c.ClusterDir())
	require.Equal(t, "/srv/conclave/wasm-cache", c.WasmCache())

	t.Setenv("CONCLAVE_DATA_DIR", "/var/lib/conclave")
	c, err = config.Load(path)
	require.NoError(t, err)
	require.Equal(t, "/var/lib/conclave/pg", c.ClusterDir(), "the environment overrides the file")

	require.NoError(t, os.WriteFile(path, []byte("plugins:\n  wasm_cache_dir: off\n"), 0o600))
	c, err = config.Load(path)
	require.NoError(t, err)
	require.Empty(t, c.WasmCache(), "off keeps the cache in memory")
	require.NoError(t, os.WriteFile(path, []byte("plugins:\n  wasm_cache_dir: /tmp/wasm\n"), 0o600))
	c, err = config.Load(path)
	require.NoError(t, err)
	require.Equal(t, "/tmp/wasm", c.WasmCache(), "a directory of its own stays where it is named")
}

func modesWith(seat string) string {
	return "modes:\n  - {key: k, id: my-mode, name: N, critique: never, max_rounds: 1, seats: {plus: [" + seat + "]}}\n"
}

func TestFileReplacesModesAndKeepsDefaults(t *testing.T) {
	t.Setenv("DATABASE_URL", "")
	t.Setenv("CONCLAVE_ADDR", "")
	path := filepath.Join(t.TempDir(), "conclave.yaml")
	require.NoError(t, os.WriteFile(path, []byte(`
server:
  addr: 127.0.0.1:7000
modes:
  - key: solo
    id: solo-mode
    ticker: CNCL:SOLO
    name: Solo
    plans: [enterprise]
    critique: never
    max_rounds: 1
    seats:
      plus: [{engine: sim/atlas}]
    pricing:
      surcharge_usd: 0.01
`), 0o600))
	c, err := config.Load(path)
	require.NoError(t, err)
	require.Equal(t, "127.0.0.1:7000", c.Server.Addr)
	require.Equal(t, int64(1<<20), c.Server.MaxBodyBytes, "unset fields keep the default")
	cat, err := c.Catalog()
	require.NoError(t, err)
	require.Len(t, cat.Modes(), 1)
	m, ok := cat.Resolve("CNCL:SOLO")
	require.True(t, ok)
	require.Equal(t, []string{"enterprise"}, m.Plans)
	_, ok = cat.Resolve("conclave-standard")
	require.False(t, ok)
}

func TestEmptyFileChangesNothing(t *testing.T) {
	t.Setenv("DATABASE_URL", "")
	t.Setenv("CONCLAVE_ADDR", "")
	path := filepath.Join(t.TempDir(), "conclave.yaml")
	require.NoError(t, os.WriteFile(path, nil, 0o600))
	c, err := config.Load(path)
	require.NoError(t, err)
	require.Len(t, c.Modes, 2)
}

func TestEgressH2CIsOffByDefaultAndReadFromTheFile(t *testing.T) {
	t.Setenv("DATABASE_URL", "")
	t.Setenv("CONCLAVE_ADDR", "")
	c, err := config.Load("")
	require.NoError(t, err)
	require.False(t, c.Egress.H2C)
	path := filepath.Join(t.TempDir(), "conclave.yaml")
	require.NoError(t, os.WriteFile(path, []byte("egress:\n  h2c: true\n"), 0o600))
	c, err = config.Load(path)
	require.NoError(t, err)
	require.True(t, c.Egress.H2C)
	require.Equal(t, 3, c.Egress.MaxAttempts, "unset fields keep the default")
}

// The configured modes are the first core.ModeSource: the built-in catalog
// passes the mode source's conformance section.
func TestBuiltinCatalogIsAModeSource(t *testing.T) {
	t.Parallel()
	cfg, err := config.Builtin()
	require.NoError(t, err)
	catalog, err := cfg.Catalog()
	require.NoError(t, err)
	storetest.RunModeSource(t, catalog, "org_any")
}

// The built-in configuration names the spec's three judges, each on a
// simulated Bedrock engine of its own family.
func TestDefaultJudges(t *testing.T) {
	t.Parallel()
	c, err := config.Builtin()
	require.NoError(t, err)
	cat, err := c.Catalog()
	require.NoError(t, err)
	want := map[string]string{"nova_pro": "sim/nova-pro", "mistral_large": "sim/mistral-large", "llama4_maverick": "sim/llama4-maverick"}
	require.Len(t, c.Judges, len(want))
	families := map[string]bool{}
	for name, id := range want {
		got, ok := c.JudgeEngine(name)
		require.True(t, ok, name)
		require.Equal(t, id, got)
		e, ok := cat.Engine(id)
		require.True(t, ok, id)
		require.Equal(t, "bedrock", e.Adapter, "%s runs on Bedrock Converse, as the real judge is hosted", id)
		require.Equal(t, "sim", e.Endpoint)
		families[e.Family] = true
	}
	require.Len(t, families, 3, "three vendor families")
	_, ok := c.JudgeEngine("gpt_judge")
	require.False(t, ok)
}

// A file that sets judges replaces the list; an empty list is allowed (a
// deployment without test runs), as is one that keeps its own engines.
func TestFileReplacesJudges(t *testing.T) {
	t.Setenv("DATABASE_URL", "")
	t.Setenv("CONCLAVE_ADDR", "")
	path := filepath.Join(t.TempDir(), "conclave.yaml")
	require.NoError(t, os.WriteFile(path, []byte("judges:\n  - {name: sonnet_judge, engine: sim/sonnet}\n  - {name: flash_judge, engine: sim/gemini-flash}\n"), 0o600))
	c, err := config.Load(path)
	require.NoError(t, err)
	require.Equal(t, []config.Judge{{Name: "sonnet_judge", Engine: "sim/sonnet"}, {Name: "flash_judge", Engine: "sim/gemini-flash"}}, c.Judges)
	_, ok := c.JudgeEngine("nova_pro")
	require.False(t, ok, "the built-in judges are replaced, not added to")

	require.NoError(t, os.WriteFile(path, []byte("judges: []\n"), 0o600))
	c, err = config.Load(path)
	require.NoError(t, err)
	require.Empty(t, c.Judges)
}

// A file that does not set judges is valid whatever engines it sets: it
// keeps the built-in judges whose engines it keeps and drops the others
// (the server then refuses the launches that need them).
func TestFileWithoutJudgesKeepsThoseWithEngines(t *testing.T) {
	t.Setenv("DATABASE_URL", "")
	t.Setenv("CONCLAVE_ADDR", "")
	path := filepath.Join(t.TempDir(), "conclave.yaml")
	modes := "modes:\n  - {key: k, id: my-mode, name: N, critique: never, max_rounds: 1, seats: {plus: [{engine: sim/atlas}]}}\n"
	require.NoError(t, os.WriteFile(path, []byte("engines:\n"+
		"  - {id: sim/atlas, family: sim-openai, max_tier: plus, adapter: openai, endpoint: sim}\n"+modes), 0o600))
	c, err := config.Load(path)
	require.NoError(t, err)
	require.Empty(t, c.Judges)

	require.NoError(t, os.WriteFile(path, []byte("engines:\n"+
		"  - {id: sim/atlas, family: sim-openai, max_tier: plus, adapter: openai, endpoint: sim}\n"+
		"  - {id: sim/nova-pro, family: sim-amazon, max_tier: plus, adapter: bedrock, endpoint: sim}\n"+modes), 0o600))
	c, err = config.Load(path)
	require.NoError(t, err)
	require.Equal(t, []config.Judge{{Name: "nova_pro", Engine: "sim/nova-pro"}}, c.Judges)

	c, err = config.Load("")
	require.NoError(t, err)
	require.Len(t, c.Judges, 3, "no file: the built-in judges")
}

// The built-in modes' mode_config_hash values are promises (receipts and
// certificates carry them): adding engines that a mode does not name, such
// as the judges', must not move them. Change these only with the mode.
func TestBuiltinModeHashesHold(t *testing.T) {
	t.Parallel()
	c, err := config.Builtin()
	require.NoError(t, err)
	cat, err := c.Catalog()
	require.NoError(t, err)
	for id, hash := range map[string]string{"conclave-standard": "17855157e02f", "conclave-max": "1d3f9f422dd0"} {
		m, ok := cat.Resolve(id)
		require.True(t, ok, id)
		require.Equal(t, hash, cat.ConfigHash(m), id)
	}
}

func TestSimulatorDifficultyIsTheDefaultUnlessTheFileSetsIt(t *testing.T) {
	t.Setenv("DATABASE_URL", "")
	t.Setenv("CONCLAVE_ADDR", "")
	c, err := config.Load("")
	require.NoError(t, err)
	require.Nil(t, c.Simulator.Quality.Difficulty, "absent: the simulator's default")
	path := filepath.Join(t.TempDir(), "conclave.yaml")
	require.NoError(t, os.WriteFile(path, []byte("simulator:\n  quality:\n    difficulty: {light: -3, medium: 0.5, hard: 2}\n"), 0o600))
	c, err = config.Load(path)
	require.NoError(t, err)
	require.Equal(t, &config.SimDifficulty{Light: -3, Medium: 0.5, Hard: 2}, c.Simulator.Quality.Difficulty)
}

// The one origin: the configured public URL, else localhost (never an IP
// address, which WebAuthn refuses) on the bound port; only configured
// proxies are trusted.
func TestOriginAndProxies(t *testing.T) {
	t.Parallel()
	s := config.Server{}
	require.Equal(t, "http://localhost:8080", s.Origin("127.0.0.1:8080"))
	require.Equal(t, "http://localhost:43117", s.Origin("[::1]:43117"))
	s.PublicURL = "https://conclave.example.com/"
	require.Equal(t, "https://conclave.example.com", s.Origin("127.0.0.1:8080"))
	s.TrustedProxies = []string{"10.0.0.0/8", "192.0.2.7", "::ffff:198.51.100.1"}
	got := s.Proxies()
	require.Len(t, got, 3)
	require.Equal(t, "10.0.0.0/8", got[0].String())
	require.Equal(t, "192.0.2.7/32", got[1].String())
	require.Equal(t, "198.51.100.1/32", got[2].String())
}

// The built-in plans are the names the tree puts organisations on (free,
// plus, standard — new organisations' — pro and enterprise), each with its
// tier and per-person limits; a file's plans replace them, with the
// per-person limits defaulted and "free" read as the lowest tier; a name
// no plan has is not configured.
func TestPlans(t *testing.T) {
	t.Setenv("DATABASE_URL", "")
	t.Setenv("CONCLAVE_DATA_DIR", "")
	t.Setenv("CONCLAVE_ADDR", "")
	t.Setenv("CONCLAVE_OPERATOR_ADDR", "")
	cfg, err := config.Builtin()
	require.NoError(t, err)
	plans := cfg.PlansByName()
	for _, name := range []string{"free", "plus", core.PlanStandard, "pro", "enterprise"} {
		p := plans.Of(name)
		require.True(t, p.Configured, name)
		require.Positive(t, p.Allowance, name)
	}
	require.Equal(t, core.Plan{Name: "free", MaxTier: core.TierExperience, Modes: []string{"conclave-standard"},
		Allowance: 5 * core.MicrosPerUSD, Concurrency: 1, RPM: 20, Configured: true}, plans.Of("free"))
	require.Equal(t, core.TierPro, plans.Of("pro").MaxTier)
	require.Empty(t, plans.Of("pro").Modes, "every mode")

	path := filepath.Join(t.TempDir(), "conclave.yaml")
	require.NoError(t, os.WriteFile(path, []byte("plans:\n"+
		"  - {name: team, max_tier: plus, monthly_allowance_usd: \"12.50\"}\n"+
		"  - {name: hobby, max_tier: free, monthly_allowance_usd: 0.75, concurrency: 1, rpm: 10}\n"), 0o600))
	cfg, err = config.Load(path)
	require.NoError(t, err)
	plans = cfg.PlansByName()
	require.Len(t, plans, 2, "a file's plans replace the built-in ones")
	require.Equal(t, core.Plan{Name: "team", MaxTier: core.TierPlus, Allowance: 12_500_000,
		Concurrency: core.DefaultPlanConcurrency, RPM: core.DefaultPlanRPM, Configured: true}, plans.Of("team"))
	require.Equal(t, core.Plan{Name: "hobby", MaxTier: core.TierExperience, Allowance: 750_000, Concurrency: 1, RPM: 10,
		Configured: true}, plans.Of("hobby"))
	require.Equal(t, core.Plan{Name: "free", MaxTier: core.TierExperience, Concurrency: core.DefaultPlanConcurrency,
		RPM: core.DefaultPlanRPM}, plans.Of("free"), "a plan not configured: the lowest tier, no allowance")
}
