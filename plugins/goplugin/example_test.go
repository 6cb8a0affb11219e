package goplugin_test

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/conclavehq/conclave/adapters/openai"
	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/plugins/goplugin"
	"github.com/conclavehq/conclave/plugins/manifest"
)

// A plugin's main serves one adapter (or, with ServeProtocol, one judging
// protocol) and nothing else.
func ExampleServeAdapter() {
	goplugin.ServeAdapter(openai.New())
}

// A host loads a plugin its manifest pins and calls it like any adapter.
func ExampleHost_LoadAdapter() {
	ctx := context.Background()
	m, err := manifest.Load("plugins.yaml")
	if err != nil {
		fmt.Println(err)
		return
	}
	e, ok := m.Get("openai-goplugin")
	if !ok {
		fmt.Println("openai-goplugin is not in the manifest")
		return
	}

	h := goplugin.New(goplugin.Config{Logger: slog.Default()})
	defer h.Close()
	a, err := h.LoadAdapter(ctx, e)
	if err != nil {
		fmt.Println(err) // a digest mismatch wraps manifest.ErrDigestMismatch
		return
	}
	req, err := a.BuildRequest(ctx, &core.SeatRequest{
		Model:    "gpt-4.1",
		Messages: []core.Message{{Role: core.RoleUser, Content: "Hello"}},
	})
	if err != nil {
		fmt.Println(err) // a crash wraps goplugin.ErrPluginCrashed; the next call restarts the plugin
		return
	}
	fmt.Println(req.Method, req.Path)
}
