package main

import (
	"context"
	"flag"
	"fmt"
	"strings"
	"time"

	"github.com/conclavehq/conclave/core"
	coreoauth "github.com/conclavehq/conclave/core/oauth"
	"github.com/conclavehq/conclave/internal/pgstore"
)

// appJSON is a connected app's grant as the apps commands print it.
type appJSON struct {
	ID         string     `json:"id"`
	ClientID   string     `json:"client_id"`
	ClientName string     `json:"client_name"`
	Verified   bool       `json:"verified"`
	PersonID   string     `json:"person_id"`
	OrgID      string     `json:"org_id"`
	Scopes     []string   `json:"scopes"`
	Status     string     `json:"status"`
	CreatedAt  time.Time  `json:"created_at"`
	LastUsedAt time.Time  `json:"last_used_at"`
	RevokedAt  *time.Time `json:"revoked_at"`
}

func appOut(g *coreoauth.Grant) appJSON {
	a := appJSON{ID: g.ID, ClientID: g.ClientID, ClientName: g.ClientName, Verified: g.Verified, PersonID: g.PersonID,
		OrgID: g.OrgID, Scopes: append([]string{}, g.Scopes...), Status: "active", CreatedAt: g.CreatedAt, LastUsedAt: g.LastUsedAt}
	if g.Revoked() {
		at := g.RevokedAt
		a.Status, a.RevokedAt = "revoked", &at
	}
	return a
}

// appsList prints an organisation's connected apps: every person's, or one
// person's with --person.
func appsList(ctx context.Context, fs *flag.FlagSet, args []string, cio cmdIO) error {
	cf := addCommon(fs)
	org := fs.String("org", "", "organisation `ID` (org_…)")
	person := fs.String("person", "", "only this person's apps: person `ID` (person_…)")
	if err := parse(fs, args, "org"); err != nil {
		return err
	}
	return withOrgStore(ctx, cf, *org, func(s *pgstore.Store) error {
		var grants coreoauth.GrantStore = s
		list, err := grants.ListGrants(ctx, *org, *person)
		if err != nil {
			return err
		}
		out := struct {
			Apps []appJSON `json:"apps"`
		}{Apps: []appJSON{}}
		var lines []string
		for _, g := range list {
			a := appOut(g)
			out.Apps = append(out.Apps, a)
			name := g.ClientName
			if name == "" {
				name = g.ClientID
			}
			lines = append(lines, fmt.Sprintf("%s  %-8s %s  %s  %s", g.ID, a.Status, g.PersonID, strings.Join(g.Scopes, ","), name))
		}
		if len(lines) == 0 {
			lines = append(lines, "No connected apps.")
		}
		return emit(cio.stdout, *cf.json, out, strings.Join(lines, "\n"))
	})
}

// appsRevoke revokes a connected app's grant, as the operator: its refresh
// token stops at once, its access tokens within the grant cache's bound.
func appsRevoke(ctx context.Context, fs *flag.FlagSet, args []string, cio cmdIO) error {
	cf := addCommon(fs)
	org := fs.String("org", "", "organisation `ID` (org_…)")
	id := fs.String("grant", "", "the app's grant `ID`, as apps list prints it")
	if err := parse(fs, args, "org", "grant"); err != nil {
		return err
	}
	return withOrgStore(ctx, cf, *org, func(s *pgstore.Store) error {
		var grants coreoauth.GrantStore = s
		g, err := grants.RevokeGrant(core.WithActor(ctx, core.Operator), *org, *id)
		if err != nil {
			return notFound(err, "connected app", *id)
		}
		return emit(cio.stdout, *cf.json, appOut(g), fmt.Sprintf("Connected app %s is revoked: its next call is refused.", g.ID))
	})
}
