package goplugin

import (
	"context"
	"io"
	"log"
	"log/slog"
	"strings"

	"github.com/hashicorp/go-hclog"
)

// hclogger is an hclog.Logger that writes to a *slog.Logger. go-plugin logs
// through hclog, and so does a plugin's stderr once go-plugin has parsed it;
// this routes both to the host's Config.Logger. The slog handler decides the
// level: SetLevel does nothing.
type hclogger struct {
	l       *slog.Logger
	name    string
	implied []any
}

func newHCLogger(l *slog.Logger) hclog.Logger { return &hclogger{l: l} }

// hclog has no context; these records carry none.
var logCtx = context.Background()

func slogLevel(l hclog.Level) (slog.Level, bool) {
	switch l {
	case hclog.Trace:
		return slog.LevelDebug - 4, true
	case hclog.Debug:
		return slog.LevelDebug, true
	case hclog.NoLevel, hclog.Info:
		return slog.LevelInfo, true
	case hclog.Warn:
		return slog.LevelWarn, true
	case hclog.Error:
		return slog.LevelError, true
	}
	return 0, false
}

func (h *hclogger) Log(level hclog.Level, msg string, args ...any) {
	lvl, ok := slogLevel(level)
	if !ok || !h.l.Enabled(logCtx, lvl) {
		return
	}
	if h.name != "" {
		args = append(args, "logger", h.name)
	}
	h.l.Log(logCtx, lvl, msg, args...)
}

func (h *hclogger) Trace(msg string, args ...any) { h.Log(hclog.Trace, msg, args...) }
func (h *hclogger) Debug(msg string, args ...any) { h.Log(hclog.Debug, msg, args...) }
func (h *hclogger) Info(msg string, args ...any)  { h.Log(hclog.Info, msg, args...) }
func (h *hclogger) Warn(msg string, args ...any)  { h.Log(hclog.Warn, msg, args...) }
func (h *hclogger) Error(msg string, args ...any) { h.Log(hclog.Error, msg, args...) }

func (h *hclogger) enabled(l hclog.Level) bool {
	lvl, _ := slogLevel(l)
	return h.l.Enabled(logCtx, lvl)
}

func (h *hclogger) IsTrace() bool { return h.enabled(hclog.Trace) }
func (h *hclogger) IsDebug() bool { return h.enabled(hclog.Debug) }
func (h *hclogger) IsInfo() bool  { return h.enabled(hclog.Info) }
func (h *hclogger) IsWarn() bool  { return h.enabled(hclog.Warn) }
func (h *hclogger) IsError() bool { return h.enabled(hclog.Error) }

func (h *hclogger) ImpliedArgs() []any { return h.implied }

func (h *hclogger) With(args ...any) hclog.Logger {
	return &hclogger{l: h.l.With(args...), name: h.name, implied: append(h.implied[:len(h.implied):len(h.implied)], args...)}
}

func (h *hclogger) Name() string { return h.name }

func (h *hclogger) Named(name string) hclog.Logger {
	if h.name != "" {
		name = h.name + "." + name
	}
	return h.ResetNamed(name)
}

func (h *hclogger) ResetNamed(name string) hclog.Logger {
	return &hclogger{l: h.l, name: name, implied: h.implied}
}

func (h *hclogger) SetLevel(hclog.Level) {}

// GetLevel reports the lowest level the handler takes, so that go-plugin
// skips parsing plugin log lines nobody would see.
func (h *hclogger) GetLevel() hclog.Level {
	for _, l := range []hclog.Level{hclog.Trace, hclog.Debug, hclog.Info, hclog.Warn, hclog.Error} {
		if h.enabled(l) {
			return l
		}
	}
	return hclog.Off
}

func (h *hclogger) StandardLogger(opts *hclog.StandardLoggerOptions) *log.Logger {
	return log.New(h.StandardWriter(opts), "", 0)
}

func (h *hclogger) StandardWriter(*hclog.StandardLoggerOptions) io.Writer {
	return lineLogger{l: h.l}
}

// lineLogger logs each line written to it at info level; it takes what a
// plugin prints to its stdout and stderr once go-plugin has redirected them.
type lineLogger struct {
	l     *slog.Logger
	attrs []any
}

func (w lineLogger) Write(p []byte) (int, error) {
	for line := range strings.SplitSeq(string(p), "\n") {
		if line = strings.TrimRight(line, "\r"); line != "" {
			w.l.Info(line, w.attrs...)
		}
	}
	return len(p), nil
}

var _ hclog.Logger = (*hclogger)(nil)
