package main

import (
	"context"

	apioauth "github.com/conclavehq/conclave/api/oauth"
	"github.com/conclavehq/conclave/mcp"
)

// authorizationServer builds the embedded OAuth authorization server at
// origin, its issuer (auth.authorization_servers is empty): its signing
// key is read from the database, or created there on the first start.
func (g *gateway) authorizationServer(ctx context.Context, origin string) (*apioauth.Server, error) {
	cfg := g.cfg
	return apioauth.New(ctx, apioauth.Config{
		Issuer:          origin,
		Resource:        origin + mcp.Path,
		ClientRetention: cfg.Auth.RegisteredClientRetention,
		TrustedProxies:  cfg.Server.Proxies(),
		Fetcher:         g.cimd,
		Logger:          g.log.With("component", "oauth"),
	}, apioauth.Deps{Store: g.db.store, Limiter: g.db.store})
}
