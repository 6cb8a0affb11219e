package wasmhost

import (
	"bytes"
	"context"
	"log/slog"
	"sync"

	"github.com/tetratelabs/wazero/api"
)

// Caps on what a guest may put in the host's log.
const (
	maxLogMessage   = 1 << 10  // bytes of one conclave.log message or output line
	maxLogsPerCall  = 32       // conclave.log messages per call
	outputBudget    = 64 << 10 // bytes of stdout or stderr logged per instance
	stderrHeadBytes = 2 << 10  // bytes of stderr kept per call for CallError.Stderr
)

// guestLog is the conclave.log import: (ptr, len) of a UTF-8 message in the
// guest's memory. It logs at info, capped; a message outside memory is
// dropped.
func (h *Host) guestLog(ctx context.Context, mod api.Module, stack []uint64) {
	inst, _ := ctx.Value(instanceKey{}).(*instance)
	if inst == nil {
		return
	}
	inst.logged++
	switch {
	case inst.logged == maxLogsPerCall+1:
		h.log.LogAttrs(ctx, slog.LevelInfo, "wasm plugin log: further messages in this call dropped", slog.String("plugin", inst.m.name))
		return
	case inst.logged > maxLogsPerCall:
		return
	}
	ptr, n := api.DecodeU32(stack[0]), api.DecodeU32(stack[1])
	truncated := n > maxLogMessage
	b, ok := mod.Memory().Read(ptr, min(n, maxLogMessage))
	if !ok {
		return
	}
	attrs := []slog.Attr{slog.String("plugin", inst.m.name), slog.String("message", string(b))}
	if truncated {
		attrs = append(attrs, slog.Int("truncated_from", int(n)))
	}
	h.log.LogAttrs(ctx, slog.LevelInfo, "wasm plugin log", attrs...)
}

// guestOutput is a guest's stdout or stderr: complete lines go to the log at
// debug, capped per line and per instance; for stderr, the start of what the
// current call wrote is kept for CallError.Stderr.
type guestOutput struct {
	log    *slog.Logger
	plugin string
	stream string

	mu     sync.Mutex
	budget int
	line   []byte
	call   []byte
}

func newGuestOutput(log *slog.Logger, plugin, stream string) *guestOutput {
	return &guestOutput{log: log, plugin: plugin, stream: stream, budget: outputBudget}
}

func (o *guestOutput) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	n := len(p)
	if room := stderrHeadBytes - len(o.call); room > 0 {
		o.call = append(o.call, p[:min(room, len(p))]...)
	}
	for len(p) > 0 && o.budget > 0 {
		line, rest, complete := bytes.Cut(p, []byte{'\n'})
		if room := maxLogMessage - len(o.line); room > 0 {
			o.line = append(o.line, line[:min(room, len(line))]...)
		}
		if !complete {
			break
		}
		o.emit()
		p = rest
	}
	return n, nil
}

func (o *guestOutput) emit() {
	o.budget -= len(o.line) + 1
	o.log.Debug("wasm plugin output", "plugin", o.plugin, "stream", o.stream, "line", string(o.line))
	if o.budget <= 0 {
		o.log.Debug("wasm plugin output: further output from this instance dropped", "plugin", o.plugin, "stream", o.stream)
	}
	o.line = o.line[:0]
}

// startCall forgets what earlier calls wrote.
func (o *guestOutput) startCall() {
	o.mu.Lock()
	o.call = o.call[:0]
	o.mu.Unlock()
}

// head returns the start of what the current call wrote.
func (o *guestOutput) head() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return string(o.call)
}
