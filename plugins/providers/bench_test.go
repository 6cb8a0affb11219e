package providers_test

import (
	"context"
	"testing"
	"time"

	"github.com/conclavehq/conclave/adapters"
	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/core/adaptertest"
	"github.com/conclavehq/conclave/plugins/goplugin"
	"github.com/conclavehq/conclave/plugins/plugintest"
	"github.com/conclavehq/conclave/plugins/wasmhost"
)

// BenchmarkCarriers measures the same work on each carrier: one
// BuildRequest of the openai "2kb" fixture plus one ParseResponse of its
// "success" fixture per op — natively, in a WebAssembly instance, and in a
// go-plugin process. For the WebAssembly pool it also reports the linear
// memory of a warm instance and the pool size.
func BenchmarkCarriers(b *testing.B) {
	ctx := context.Background()
	m := plugintest.Builtin(b)
	wasmEntry, _ := m.Get("openai-wasm")
	goEntry, _ := m.Get("openai-goplugin")

	wasm, err := wasmhost.New(ctx, wasmhost.Config{CacheDir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = wasm.Close(context.Background()) })
	gop := goplugin.New(goplugin.Config{})
	b.Cleanup(func() { _ = gop.Close() })

	native, _ := adapters.Builtin("openai")
	start := time.Now()
	onWasm, err := wasm.LoadAdapter(ctx, wasmEntry)
	if err != nil {
		b.Fatal(err)
	}
	wasmLoad := time.Since(start)
	start = time.Now()
	onGo, err := gop.LoadAdapter(ctx, goEntry)
	if err != nil {
		b.Fatal(err)
	}
	goLoad := time.Since(start)

	for _, c := range []struct {
		name string
		a    core.Adapter
		load time.Duration
	}{{"native", native, 0}, {"wasm", onWasm, wasmLoad}, {"goplugin", onGo, goLoad}} {
		b.Run(c.name, func(b *testing.B) {
			adaptertest.BenchmarkTranslate(b, "openai", c.a)
			if c.load > 0 {
				b.ReportMetric(float64(c.load.Milliseconds()), "load_ms")
			}
			if c.name == "wasm" {
				for _, s := range wasm.Stats() {
					b.ReportMetric(float64(s.MemoryBytes)/(1<<20), "MiB/instance")
					b.ReportMetric(float64(s.PoolSize), "pool_size")
				}
			}
		})
	}
}
