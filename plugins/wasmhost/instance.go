package wasmhost

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"time"

	"github.com/tetratelabs/wazero/api"
)

// instance is one instantiated module. It runs one call at a time: whoever
// took it from the pool owns it until it is released.
type instance struct {
	m       *module
	mod     api.Module
	mem     api.Memory
	alloc   api.Function
	free    api.Function
	exports map[string]api.Function // abi_version, kind and the methods
	stack   [2]uint64               // params and results of one export call

	stdout, stderr *guestOutput
	logged         int // conclave.log messages in the current call

	memBytes atomic.Uint64 // linear memory size after the last call, for Stats
}

type instanceKey struct{}

// randSeed seeds every instance's random source: the sandbox is
// deterministic, so a plugin that asks for randomness gets the same bytes on
// every instance and every run.
var randSeed = [32]byte{'c', 'o', 'n', 'c', 'l', 'a', 'v', 'e', '/', 'w', 'a', 's', 'm'}

// instantiate creates an instance and runs the Go runtime's _initialize,
// within the call timeout.
func (m *module) instantiate(ctx context.Context, method string) (*instance, error) {
	ctx, cancel := context.WithTimeout(ctx, m.h.cfg.CallTimeout)
	defer cancel()
	inst := &instance{
		m:       m,
		stdout:  newGuestOutput(m.h.log, m.name, "stdout"),
		stderr:  newGuestOutput(m.h.log, m.name, "stderr"),
		exports: map[string]api.Function{},
	}
	inst.stderr.startCall()
	ctx = context.WithValue(ctx, instanceKey{}, inst)
	start := time.Now()
	cfg := m.h.modCfg.
		WithStdout(inst.stdout).
		WithStderr(inst.stderr).
		WithRandSource(rand.NewChaCha8(randSeed))
	mod, err := m.h.rt.InstantiateModule(ctx, m.compiled, cfg)
	if err != nil {
		return nil, inst.failure(ctx, method, "instantiating", err)
	}
	inst.mod = mod
	if err := mod.ExportedFunction(exportInitialize).CallWithStack(ctx, nil); err != nil {
		_ = mod.Close(ctx)
		return nil, inst.failure(ctx, method, exportInitialize, err)
	}
	if mod.IsClosed() {
		return nil, inst.failure(ctx, method, exportInitialize, errors.New("the module exited"))
	}
	inst.mem = mod.Memory()
	inst.alloc = mod.ExportedFunction(exportAlloc)
	inst.free = mod.ExportedFunction(exportFree)
	inst.exports[exportABIVersion] = mod.ExportedFunction(exportABIVersion)
	inst.exports[exportKind] = mod.ExportedFunction(exportKind)
	for name := range m.methods {
		inst.exports[name] = mod.ExportedFunction(name)
	}
	inst.memBytes.Store(uint64(inst.mem.Size()))
	m.instantiateNanos.Store(int64(time.Since(start)))
	m.created.Add(1)
	m.mu.Lock()
	m.live[inst] = struct{}{}
	m.mu.Unlock()
	return inst, nil
}

// call runs one export: for a method, it copies in into a buffer from alloc
// and passes (ptr, len); abi_version and kind take nothing. It copies the
// result out with bounds checks, then frees the result and the input. It
// reports whether the instance may serve another call, which is not the
// same as whether the call failed: a failure of free after the result was
// read spoils the instance but not the result, and a caller that had given
// up before the call started spoils nothing.
func (i *instance) call(ctx context.Context, export string, in []byte) (out []byte, reusable bool, err error) {
	if ctx.Err() != nil {
		// wazero would close the instance before running anything; there is
		// no need to lose a warm instance to a caller that already gave up.
		return nil, true, &CallError{Plugin: i.m.name, Method: export, Err: ctxKind(ctx), Cause: ctx.Err()}
	}
	ctx, cancel := context.WithTimeout(ctx, i.m.h.cfg.CallTimeout)
	defer cancel()
	ctx = context.WithValue(ctx, instanceKey{}, i)
	i.logged = 0
	i.stderr.startCall()
	defer func() { i.memBytes.Store(uint64(i.mem.Size())) }()

	var inPtr uint32
	if len(in) > 0 {
		i.stack[0] = uint64(len(in))
		if err := i.alloc.CallWithStack(ctx, i.stack[:]); err != nil {
			return nil, false, i.failure(ctx, export, exportAlloc, err)
		}
		inPtr = uint32(i.stack[0])
		if inPtr == 0 || !i.mem.Write(inPtr, in) {
			return nil, false, i.reject(export, ErrBadResult, "alloc(%d) returned address %#x, outside memory", len(in), inPtr)
		}
	}
	i.stack[0], i.stack[1] = uint64(inPtr), uint64(len(in))
	if err := i.exports[export].CallWithStack(ctx, i.stack[:]); err != nil {
		return nil, false, i.failure(ctx, export, export, err)
	}
	if i.mod.IsClosed() { // the guest exited with code 0
		return nil, false, i.failure(ctx, export, export, errors.New("the module exited"))
	}
	ptr, n := uint32(i.stack[0]>>32), uint32(i.stack[0])
	switch {
	case n == 0:
		return nil, false, i.reject(export, ErrBadResult, "empty result")
	case uint64(n) > uint64(i.m.h.cfg.MaxOutputBytes):
		return nil, false, i.reject(export, ErrOutputTooLarge, "%d bytes, the cap is %d", n, i.m.h.cfg.MaxOutputBytes)
	}
	view, ok := i.mem.Read(ptr, n)
	if !ok {
		return nil, false, i.reject(export, ErrBadResult, "%d bytes at %#x, outside memory of %d bytes", n, ptr, i.mem.Size())
	}
	out = bytes.Clone(view)

	reusable = true
	for _, p := range []uint32{ptr, inPtr} {
		if p == 0 {
			continue
		}
		i.stack[0] = uint64(p)
		if err := i.free.CallWithStack(ctx, i.stack[:]); err != nil {
			i.m.h.log.Warn("wasm plugin failed to free a buffer; discarding the instance",
				"plugin", i.m.name, "method", export, "err", i.failure(ctx, export, exportFree, err))
			reusable = false
			break
		}
	}
	return out, reusable, nil
}

// failure classifies an error from running guest code.
func (i *instance) failure(ctx context.Context, method, step string, err error) error {
	kind := ErrTrapped
	switch {
	case i.m.h.closed():
		kind = ErrClosed
	case ctx.Err() != nil:
		kind = ctxKind(ctx)
	}
	if step != method {
		err = fmt.Errorf("%s: %w", step, err)
	}
	return &CallError{Plugin: i.m.name, Method: method, Err: kind, Cause: err, Stderr: i.stderr.head()}
}

// reject reports a result the host refuses.
func (i *instance) reject(method string, kind error, format string, args ...any) error {
	return &CallError{Plugin: i.m.name, Method: method, Err: kind, Cause: fmt.Errorf(format, args...)}
}
