package main

import (
	"log/slog"

	"github.com/conclavehq/conclave/core/genie"
	"github.com/conclavehq/conclave/internal/config"
)

// newQuotes builds the assistant's quotes (ask_genie attaches them,
// approve_quote launches them) on the launch endpoints' own run service,
// as genie.chat_history and genie.quote_ttl set them.
func newQuotes(cfg *config.Config, g *gateway, log *slog.Logger) (*genie.Quotes, error) {
	return genie.NewQuotes(genie.QuotesDeps{Runs: g.bench.launch, Store: g.db.store, HistoryOn: cfg.Genie.ChatHistory,
		TTL: cfg.Genie.QuoteTTL, Logger: log.With(slog.String("component", "genie"))})
}
