package main

import (
	"log/slog"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/core/genie"
	"github.com/conclavehq/conclave/internal/config"
)

// newAsker builds the mode assistant (ask_genie) on the gateway's
// services, writing with genie.Engines; it keeps its conversations and
// quotes when genie.chat_history is on.
func newAsker(cfg *config.Config, catalog *core.Catalog, g *gateway, log *slog.Logger) (*genie.Asker, error) {
	d := genie.AskDeps{Modes: g.svc, Authored: g.modes, Runs: g.bench.launch, Caller: g.prov, Catalog: catalog,
		Engines: genie.Engines(catalog), Quotes: g.quotes, Logger: log.With(slog.String("component", "genie"))}
	if cfg.Genie.ChatHistory {
		d.History = g.db.store
	}
	return genie.NewAsker(d)
}
