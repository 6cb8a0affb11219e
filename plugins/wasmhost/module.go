package wasmhost

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"

	"github.com/conclavehq/conclave/plugins/abi"
	"github.com/conclavehq/conclave/plugins/manifest"
)

// importModule is the one host module a plugin may import besides WASI.
const importModule = "conclave"

// Exports every module must have besides its methods.
const (
	exportInitialize = "_initialize"
	exportABIVersion = "abi_version"
	exportKind       = "kind"
	exportAlloc      = "alloc"
	exportFree       = "free"
	exportMemory     = "memory"
)

// methodsOf lists the method exports of each kind.
var methodsOf = map[string][]string{
	abi.KindAdapter:  {abi.MethodDescribe, abi.MethodBuildRequest, abi.MethodParseResponse},
	abi.KindProtocol: {abi.MethodDescribe, abi.MethodPlan, abi.MethodScore},
}

var (
	i32 = api.ValueTypeI32
	i64 = api.ValueTypeI64
)

type signature struct{ params, results []api.ValueType }

// checkShape refuses a compiled module that is not a seat-abi reactor of the
// given kind, before any of its code runs.
func checkShape(c wazero.CompiledModule, kind string) error {
	want := map[string]signature{
		exportInitialize: {},
		exportABIVersion: {nil, []api.ValueType{i64}},
		exportKind:       {nil, []api.ValueType{i64}},
		exportAlloc:      {[]api.ValueType{i32}, []api.ValueType{i32}},
		exportFree:       {[]api.ValueType{i32}, nil},
	}
	for _, m := range methodsOf[kind] {
		want[m] = signature{[]api.ValueType{i32, i32}, []api.ValueType{i64}}
	}
	have := c.ExportedFunctions()
	for name, sig := range want {
		def, ok := have[name]
		if !ok {
			if name == exportInitialize {
				return fmt.Errorf("%w: no %s export: build it with -buildmode=c-shared", ErrBadModule, name)
			}
			return fmt.Errorf("%w: no %s export, which every %s has", ErrBadModule, name, kind)
		}
		if !sameTypes(def.ParamTypes(), sig.params) || !sameTypes(def.ResultTypes(), sig.results) {
			return fmt.Errorf("%w: export %s has signature %s, want %s", ErrBadModule, name,
				sigString(def.ParamTypes(), def.ResultTypes()), sigString(sig.params, sig.results))
		}
	}
	if _, ok := c.ExportedMemories()[exportMemory]; !ok {
		return fmt.Errorf("%w: no memory export", ErrBadModule)
	}
	for _, f := range c.ImportedFunctions() {
		mod, name, _ := f.Import()
		if mod != importModule && mod != "wasi_snapshot_preview1" {
			return fmt.Errorf("%w: it imports %s.%s; a plugin may import only %s and wasi_snapshot_preview1", ErrBadModule, mod, name, importModule)
		}
	}
	if len(c.ImportedMemories()) > 0 {
		return fmt.Errorf("%w: it imports a memory", ErrBadModule)
	}
	return nil
}

func sameTypes(a, b []api.ValueType) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func sigString(params, results []api.ValueType) string {
	name := func(ts []api.ValueType) string {
		s := "("
		for i, t := range ts {
			if i > 0 {
				s += ", "
			}
			s += api.ValueTypeName(t)
		}
		return s + ")"
	}
	return name(params) + " -> " + name(results)
}

// module is one loaded plugin: its compiled code and its pool of instances.
// It is the abi.Caller behind the core.Adapter or core.Protocol the Host
// returns.
type module struct {
	h        *Host
	name     string
	kind     string
	digest   string
	compiled wazero.CompiledModule
	methods  map[string]bool

	// pool holds one token per instance the module may have: an idle
	// instance, or nil for room to create one. A call takes a token and
	// gives one back, so at most PoolSize instances exist and instances are
	// created only when every existing one is busy.
	pool chan *instance

	calls, created, discarded atomic.Uint64
	instantiateNanos          atomic.Int64

	mu   sync.Mutex // guards live
	live map[*instance]struct{}
}

func newModule(h *Host, e *manifest.Entry, kind string, compiled wazero.CompiledModule) *module {
	m := &module{
		h: h, name: e.Name, kind: kind, digest: e.SHA256, compiled: compiled,
		methods: map[string]bool{},
		pool:    make(chan *instance, h.cfg.PoolSize),
		live:    map[*instance]struct{}{},
	}
	for _, name := range methodsOf[kind] {
		m.methods[name] = true
	}
	for range h.cfg.PoolSize {
		m.pool <- nil
	}
	return m
}

// handshake creates the module's first instance and checks that it speaks
// abi.Version and is the kind it was loaded as. The instance stays in the
// pool, warm for the first call.
func (m *module) handshake(ctx context.Context) error {
	inst, err := m.acquire(ctx, exportABIVersion)
	if err != nil {
		return err
	}
	err = m.checkIdentity(ctx, inst)
	m.release(ctx, inst, err == nil)
	return err
}

func (m *module) checkIdentity(ctx context.Context, inst *instance) error {
	checks := []struct {
		export, want string
		mismatch     error
	}{
		{exportABIVersion, abi.Version, ErrABIVersion},
		{exportKind, m.kind, ErrKind},
	}
	for _, c := range checks {
		got, reusable, err := inst.call(ctx, c.export, nil)
		if err != nil {
			return err
		}
		if string(got) != c.want {
			return fmt.Errorf("%w: %s reports %.40q, want %q", c.mismatch, c.export, got, c.want)
		}
		if !reusable {
			return fmt.Errorf("%w: freeing the result of %s failed", ErrBadModule, c.export)
		}
	}
	return nil
}

// Call implements abi.Caller: it runs method on in in an idle instance,
// creating one if none is idle and the pool has room, and waiting (as long
// as ctx allows) if it has none.
func (m *module) Call(ctx context.Context, method string, in []byte) ([]byte, error) {
	if !m.methods[method] {
		return unknownMethod(m.kind, method), nil
	}
	if limit := uint64(m.h.cfg.MemoryLimitPages) * 65536; uint64(len(in)) >= limit {
		return nil, &CallError{Plugin: m.name, Method: method, Err: ErrInputTooLarge,
			Cause: fmt.Errorf("%d bytes against a memory cap of %d", len(in), limit)}
	}
	inst, err := m.acquire(ctx, method)
	if err != nil {
		return nil, err
	}
	m.calls.Add(1)
	out, reusable, err := inst.call(ctx, method, in)
	m.release(ctx, inst, reusable)
	return out, err
}

// acquire takes an idle instance or room for a new one, waiting on ctx.
func (m *module) acquire(ctx context.Context, method string) (*instance, error) {
	if m.h.closed() {
		return nil, &CallError{Plugin: m.name, Method: method, Err: ErrClosed}
	}
	var inst *instance
	select {
	case inst = <-m.pool:
	case <-m.h.done:
		return nil, &CallError{Plugin: m.name, Method: method, Err: ErrClosed}
	case <-ctx.Done():
		return nil, &CallError{Plugin: m.name, Method: method, Err: ctxKind(ctx), Cause: ctx.Err()}
	}
	if inst != nil {
		return inst, nil
	}
	inst, err := m.instantiate(ctx, method)
	if err != nil {
		m.pool <- nil
		return nil, err
	}
	return inst, nil
}

// release gives the instance's token back: the instance itself if it may
// serve another call, or room for a new one after closing it.
func (m *module) release(ctx context.Context, inst *instance, reusable bool) {
	if reusable && !inst.mod.IsClosed() {
		m.pool <- inst
		return
	}
	m.discarded.Add(1)
	m.mu.Lock()
	delete(m.live, inst)
	m.mu.Unlock()
	// Closing marks the instance closed and drops wazero's references to it;
	// it cannot fail in a way the caller could act on.
	_ = inst.mod.Close(ctx)
	m.pool <- nil
}

func (m *module) stats() ModuleStats {
	s := ModuleStats{
		Name: m.name, Kind: m.kind, SHA256: m.digest, PoolSize: cap(m.pool),
		Calls: m.calls.Load(), Created: m.created.Load(), Discarded: m.discarded.Load(),
		InstantiateTime: time.Duration(m.instantiateNanos.Load()),
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	s.Instances = len(m.live)
	for inst := range m.live {
		s.MemoryBytes = max(s.MemoryBytes, inst.memBytes.Load())
	}
	return s
}

// close closes the module's instances and compiled code, for a module that
// failed its handshake and was never handed out.
func (m *module) close(ctx context.Context) error {
	m.mu.Lock()
	var errs []error
	for inst := range m.live {
		errs = append(errs, inst.mod.Close(ctx))
	}
	m.live = map[*instance]struct{}{}
	m.mu.Unlock()
	errs = append(errs, m.compiled.Close(ctx))
	return errors.Join(errs...)
}

func unknownMethod(kind, method string) []byte {
	b, _ := json.Marshal(struct {
		Error *abi.Error `json:"error"`
	}{&abi.Error{Code: abi.CodeUnknownMethod, Message: fmt.Sprintf("a %s has no method %q", kind, method)}})
	return b
}

func ctxKind(ctx context.Context) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return ErrTimeout
	}
	return ErrCanceled
}

var _ abi.Caller = (*module)(nil)
