package wasmhost_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/plugins/abi"
	"github.com/conclavehq/conclave/plugins/wasmhost"
)

// snoop mirrors what the hostile guest's "snoop" model reports.
type snoop struct {
	File     string   `json:"file"`
	FileErr  string   `json:"file_err"`
	Dir      []string `json:"dir"`
	Environ  []string `json:"environ"`
	Home     string   `json:"home"`
	Canary   string   `json:"canary"`
	Args     []string `json:"args"`
	Now      string   `json:"now"`
	Hostname string   `json:"hostname"`
}

// TestContainment runs every hostile behaviour against one Host, in one
// instance slot, and checks after each that the next call is served.
func TestContainment(t *testing.T) {
	t.Parallel()
	const limitPages = 512 // 32 MiB
	h := newHost(t, wasmhost.Config{
		PoolSize:         1,
		MemoryLimitPages: limitPages,
		// Generous, so that slow machines and the race detector do not turn
		// a memory bomb into a timeout; TestCallTimeout covers the timeout.
		CallTimeout:    10 * time.Second,
		MaxOutputBytes: 64 << 10,
	})
	ctx := context.Background()
	a, err := h.LoadAdapter(ctx, entry(t, "hostile", "adapter"))
	require.NoError(t, err)
	build := func(ctx context.Context, model string) (*core.HTTPRequest, error) {
		return a.BuildRequest(ctx, &core.SeatRequest{Model: model, Messages: []core.Message{{Role: "user", Content: "hi"}}})
	}
	discarded := func() uint64 { return statsOf(t, h, "hostile").Discarded }

	// Each case must fail as a carrier failure of its kind, discard the
	// instance, and leave the next call working.
	failing := []struct {
		name, model string
		ctx         func() (context.Context, context.CancelFunc)
		kind        error
		stderr      string // what the guest's stderr must say, if anything
	}{
		{name: "infinite loop stopped by the caller's deadline", model: "loop", kind: wasmhost.ErrTimeout,
			ctx: func() (context.Context, context.CancelFunc) { return context.WithTimeout(ctx, 100*time.Millisecond) }},
		{name: "infinite loop stopped by the caller's cancellation", model: "loop", kind: wasmhost.ErrCanceled,
			ctx: func() (context.Context, context.CancelFunc) {
				c, cancel := context.WithCancel(ctx)
				time.AfterFunc(100*time.Millisecond, cancel)
				return c, cancel
			}},
		{name: "memory bomb refused by the memory cap", model: "membomb", kind: wasmhost.ErrTrapped, stderr: "out of memory"},
		{name: "result over the output cap", model: "large", kind: wasmhost.ErrOutputTooLarge},
		{name: "100 MB result", model: "huge"}, // the output cap or the memory cap, whichever comes first
		{name: "panic", model: "panic", kind: wasmhost.ErrTrapped, stderr: "panic: hostile guest panics"},
		{name: "exit", model: "exit", kind: wasmhost.ErrTrapped},
	}
	for _, c := range failing {
		t.Run(c.name, func(t *testing.T) {
			before := discarded()
			callCtx, cancel := ctx, context.CancelFunc(func() {})
			if c.ctx != nil {
				callCtx, cancel = c.ctx()
			}
			defer cancel()
			_, err := build(callCtx, c.model)
			require.Error(t, err)
			require.ErrorIs(t, err, wasmhost.ErrCarrier)
			if c.kind != nil {
				ce := requireCarrierErr(t, err, c.kind)
				require.Equal(t, "hostile", ce.Plugin)
				require.Equal(t, abi.MethodBuildRequest, ce.Method)
				require.Contains(t, ce.Stderr, c.stderr)
			} else {
				require.True(t, errors.Is(err, wasmhost.ErrOutputTooLarge) || errors.Is(err, wasmhost.ErrTrapped), "got %v", err)
			}
			require.Equal(t, before+1, discarded(), "the failed instance is discarded")
			echo(t, a)
			s := statsOf(t, h, "hostile")
			require.Equal(t, 1, s.Instances)
			require.LessOrEqual(t, s.MemoryBytes, uint64(limitPages)*65536)
		})
	}

	t.Run("timeout carries the context's error", func(t *testing.T) {
		short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
		defer cancel()
		_, err := build(short, "loop")
		require.ErrorIs(t, err, context.DeadlineExceeded)
		echo(t, a)
	})

	t.Run("no file, environment, arguments or real clock", func(t *testing.T) {
		req, err := build(ctx, "snoop")
		require.NoError(t, err)
		var got snoop
		require.NoError(t, json.Unmarshal(req.Body, &got))
		require.Empty(t, got.File)
		require.NotEmpty(t, got.FileErr, "reading a file must fail")
		require.Empty(t, got.Dir)
		require.Empty(t, got.Environ)
		require.Empty(t, got.Home)
		require.Empty(t, got.Canary)
		require.Empty(t, got.Args)
		require.True(t, strings.HasPrefix(got.Now, "2022-01-01T"), "the guest's clock is wazero's fixed fake, not the host's: %s", got.Now)
		require.NotContains(t, string(req.Body), canaryValue)
		require.NotContains(t, string(req.Body), "root:")
	})

	t.Run("an Authorization header the guest sets passes through unchanged", func(t *testing.T) {
		// Stripping it is the egress layer's job; the carrier neither drops
		// nor trips over it.
		req, err := build(ctx, "auth")
		require.NoError(t, err)
		require.Equal(t, "Bearer sk-planted-by-guest", req.Header["Authorization"])
	})

	t.Run("a plugin error is an abi.Error, not a carrier failure", func(t *testing.T) {
		before := discarded()
		_, err := build(ctx, "fail")
		var ae *abi.Error
		require.ErrorAs(t, err, &ae)
		require.Equal(t, abi.CodeFailed, ae.Code)
		require.Contains(t, ae.Message, "refused on purpose")
		require.NotErrorIs(t, err, wasmhost.ErrCarrier)
		require.Equal(t, before, discarded(), "the instance is kept")
	})

	t.Run("the gateway keeps serving", func(t *testing.T) {
		for range 3 {
			echo(t, a)
		}
		info, err := a.Describe(ctx)
		require.NoError(t, err)
		require.Equal(t, &core.AdapterInfo{Name: "hostile", Version: "1", Auth: core.AuthBearer}, info)
		ans, err := a.ParseResponse(ctx, &core.HTTPResponse{Status: 200, Body: []byte("fine")})
		require.NoError(t, err)
		require.Equal(t, "fine", ans.Text)
		s := statsOf(t, h, "hostile")
		require.Equal(t, 1, s.Instances)
		require.Equal(t, s.Created, s.Discarded+1)
	})
}

// rawName names a raw module after the subtest that loads it.
func rawName(t *testing.T) string {
	_, sub, _ := strings.Cut(t.Name(), "/")
	return strings.ToLower(strings.NewReplacer(" ", "-", "'", "", ":", "").Replace(sub))
}

func TestCallTimeout(t *testing.T) {
	t.Parallel()
	h := newHost(t, wasmhost.Config{PoolSize: 1, CallTimeout: time.Second})
	ctx := context.Background()
	a, err := h.LoadAdapter(ctx, entry(t, "hostile", "adapter"))
	require.NoError(t, err)
	_, err = a.BuildRequest(ctx, &core.SeatRequest{Model: "loop"})
	requireCarrierErr(t, err, wasmhost.ErrTimeout)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.Equal(t, uint64(1), statsOf(t, h, "hostile").Discarded)
	echo(t, a)
}

// TestRawModules checks the host's shape checks, handshake and bounds
// checks against hand-assembled modules that break the ABI.
func TestRawModules(t *testing.T) {
	t.Parallel()
	h := newHost(t, wasmhost.Config{PoolSize: 1, MemoryLimitPages: 64})
	ctx := context.Background()
	load := func(t *testing.T, m rawModule) (core.Adapter, error) {
		t.Helper()
		return h.LoadAdapter(ctx, rawEntry(t, rawName(t), m))
	}

	t.Run("a well-behaved module", func(t *testing.T) {
		t.Parallel()
		a, err := load(t, rawAdapter())
		require.NoError(t, err)
		info, err := a.Describe(ctx)
		require.NoError(t, err)
		require.Equal(t, &core.AdapterInfo{Name: "raw", Version: "1", Auth: core.AuthNone}, info)
		_, err = a.ParseResponse(ctx, &core.HTTPResponse{Status: 200, Body: []byte("x")})
		require.NoError(t, err)
	})

	refused := []struct {
		name   string
		change func(m *rawModule)
		want   error
	}{
		{"another ABI version", func(m *rawModule) { m.data[rawVersionAt] = "seat-abi/0" }, wasmhost.ErrABIVersion},
		{"another kind", func(m *rawModule) {
			m.data[rawKindAt] = "protocol"
			m.funcs["kind"] = rawFunc{results: []byte{tI64}, body: i64Const(packed(rawKindAt, len("protocol")))}
		}, wasmhost.ErrKind},
		{"no _initialize: not a reactor", func(m *rawModule) { delete(m.funcs, "_initialize") }, wasmhost.ErrBadModule},
		{"no parse_response", func(m *rawModule) { delete(m.funcs, "parse_response") }, wasmhost.ErrBadModule},
		{"a method with the wrong signature", func(m *rawModule) {
			m.funcs["build_request"] = rawFunc{params: []byte{tI32}, results: []byte{tI64}, body: i64Const(0)}
		}, wasmhost.ErrBadModule},
		{"an import the host does not provide", func(m *rawModule) { m.imports = [][2]string{{"env", "open"}} }, wasmhost.ErrBadModule},
		{"an _initialize that traps", func(m *rawModule) { m.funcs["_initialize"] = rawFunc{body: trap} }, wasmhost.ErrTrapped},
		{"an abi_version outside memory", func(m *rawModule) {
			m.funcs["abi_version"] = rawFunc{results: []byte{tI64}, body: i64Const(packed(0xFFFFFFF0, 64))}
		}, wasmhost.ErrBadResult},
	}
	for _, c := range refused {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			m := rawAdapter()
			c.change(&m)
			_, err := load(t, m)
			require.ErrorIs(t, err, c.want)
		})
	}

	t.Run("a module declaring more memory than the cap", func(t *testing.T) {
		t.Parallel()
		m := rawAdapter()
		m.memPages = 65
		_, err := load(t, m)
		require.Error(t, err)
	})

	failing := []struct {
		name   string
		change func(m *rawModule)
		want   error
		detail string
	}{
		{"a result outside memory", func(m *rawModule) {
			m.funcs["parse_response"] = returning(packed(0xFFFFFF00, 0x80))
		}, wasmhost.ErrBadResult, "outside memory"},
		{"a result straddling the end of memory", func(m *rawModule) {
			m.funcs["parse_response"] = returning(packed(65536-8, 16))
		}, wasmhost.ErrBadResult, "outside memory"},
		{"an empty result", func(m *rawModule) { m.funcs["parse_response"] = returning(0) }, wasmhost.ErrBadResult, "empty result"},
		{"a claimed 100 MB result", func(m *rawModule) {
			m.funcs["parse_response"] = returning(packed(rawEnvelopeAt, 100<<20))
		}, wasmhost.ErrOutputTooLarge, "104857600 bytes"},
		{"an input buffer outside memory", func(m *rawModule) {
			m.funcs["alloc"] = rawFunc{params: []byte{tI32}, results: []byte{tI32}, body: i32Const(-16)}
		}, wasmhost.ErrBadResult, "alloc"},
		{"a method that traps", func(m *rawModule) {
			m.funcs["parse_response"] = rawFunc{params: []byte{tI32, tI32}, results: []byte{tI64}, body: trap}
		}, wasmhost.ErrTrapped, "unreachable"},
	}
	for _, c := range failing {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			m := rawAdapter()
			c.change(&m)
			a, err := load(t, m)
			require.NoError(t, err)
			_, err = a.ParseResponse(ctx, &core.HTTPResponse{Status: 200})
			ce := requireCarrierErr(t, err, c.want)
			require.Contains(t, ce.Error(), c.detail)
			// The instance was discarded; Describe gets a fresh one.
			_, err = a.Describe(ctx)
			require.NoError(t, err)
		})
	}

	t.Run("a free that traps spoils the instance, not the result", func(t *testing.T) {
		t.Parallel()
		m := rawAdapter()
		// free traps on the input buffer only, after the result was read.
		m.funcs["free"] = rawFunc{params: []byte{tI32}, body: trapIfArgIs(rawAllocAt)}
		a, err := load(t, m)
		require.NoError(t, err)
		created := func() uint64 { return statsOf(t, h, rawName(t)).Created }
		ans, err := a.ParseResponse(ctx, &core.HTTPResponse{Status: 200})
		require.NoError(t, err)
		require.NotNil(t, ans)
		before := created()
		_, err = a.Describe(ctx)
		require.NoError(t, err)
		require.Equal(t, before+1, created(), "the instance was replaced")
	})
}
