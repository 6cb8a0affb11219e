package main

import (
	"context"
	"flag"
	"fmt"
	"strings"
	"time"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/core/access"
	"github.com/conclavehq/conclave/core/calls"
	"github.com/conclavehq/conclave/core/dashboard"
	"github.com/conclavehq/conclave/core/people"
	"github.com/conclavehq/conclave/internal/config"
	"github.com/conclavehq/conclave/internal/pgstore"
	"github.com/conclavehq/conclave/plugins/byok"
	"github.com/conclavehq/conclave/policies"
)

// newPeople wires the people service on the store, for serve (origin is
// the bound one) and the operator's commands (the configured one).
// Bring-your-own-key credentials are made with the sealing key of
// CONCLAVE_BYOK_KEY when it is set; without it the pages say BYOK is off.
func newPeople(cfg *config.Config, store *pgstore.Store, acc *access.Service, origin string,
	lookupEnv func(string) (string, bool)) (*people.Service, error) {
	d := people.Deps{Store: store, Orgs: store, Keys: store, Access: acc}
	if len(cfg.Auth.AuthorizationServers) == 0 {
		d.Grants = store // the embedded authorization server's grants
	}
	if sealer, err := byok.FromEnv(lookupEnv); err == nil {
		d.Credentials, d.Maker = store, byok.Maker{Sealer: sealer}
	}
	p := cfg.People
	return people.New(people.Config{
		PublicURL: origin, SessionIdle: p.SessionIdle, SessionMaxAge: p.SessionMaxAge, LinkTTL: p.LinkTTL,
		MaxConcurrentHashes: p.MaxConcurrentHashes, AccountAttempts: p.AccountAttempts, AddressAttempts: p.AddressAttempts,
		AttemptWindow: p.AttemptWindow,
		Argon2:        people.Argon2Params{Time: p.Argon2.Time, MemoryKiB: p.Argon2.MemoryKiB, Threads: p.Argon2.Threads},
	}, d)
}

// spendCacheFor is how long the overview's spend sums are reused: under
// the spend job's interval, so a charge shows within both.
const spendCacheFor = 10 * time.Second

// newDashboard wires the dashboard's service on the store; byokOn says
// whether organisations' own credentials are in use (the sealing key is
// set), so that the BYOK page may list and test them.
func newDashboard(cfg *config.Config, store *pgstore.Store, acc *access.Service, svc *calls.Service,
	tester dashboard.Tester, byokOn bool) (*dashboard.Service, error) {
	d := dashboard.Deps{Access: acc, Store: store, Keys: store, Receipts: svc, MaxInputTokens: cfg.Limits.MaxInputTokens,
		ActivationAllowance: core.Micros(cfg.Limits.ActivationAllowanceUSD), SpendCacheFor: spendCacheFor}
	if byokOn {
		d.Credentials, d.Tester = store, tester
	}
	return dashboard.New(d)
}

// withPeople runs fn with the people service of the configured origin, as
// the operator (whose changes the audit trail records as the operator's).
func withPeople(ctx context.Context, cf commonFlags, cio cmdIO, fn func(*pgstore.Store, *people.Service) error) error {
	return withDatabase(ctx, cf, func(cfg *config.Config, db *database) error {
		authz, err := policies.New(ctx, policies.Config{Dir: cfg.Policy.Dir})
		if err != nil {
			return fmt.Errorf("loading policies: %w", err)
		}
		acc, err := access.New(access.Config{}, db.store, authz, db.store)
		if err != nil {
			return err
		}
		svc, err := newPeople(cfg, db.store, acc, cfg.Server.Origin(cfg.Server.Addr), cio.lookupEnv)
		if err != nil {
			return err
		}
		return fn(db.store, svc)
	})
}

// orgByRef finds an organisation by id (org_…) or ticker.
func orgByRef(ctx context.Context, s *pgstore.Store, ref string) (*core.Org, error) {
	var (
		o   *core.Org
		err error
	)
	if strings.HasPrefix(ref, "org_") {
		o, err = s.GetOrg(ctx, ref)
	} else {
		o, err = s.OrgByTicker(ctx, strings.ToUpper(ref))
	}
	if err != nil {
		return nil, notFound(err, "organisation", ref)
	}
	return o, nil
}

type personJSON struct {
	PersonID  string    `json:"person_id"`
	Email     string    `json:"email"`
	Name      string    `json:"name"`
	OrgID     string    `json:"org_id,omitempty"`
	Role      core.Role `json:"role,omitempty"`
	SetupLink string    `json:"setup_link"`
}

func personCreate(ctx context.Context, fs *flag.FlagSet, args []string, cio cmdIO) error {
	cf := addCommon(fs)
	org := fs.String("org", "", "the organisation, by `ID` (org_…) or ticker")
	email := fs.String("email", "", "the person's `EMAIL` (their sign-in name; Conclave sends no email)")
	name := fs.String("name", "", "their display `NAME`; defaults to the part of the email before @")
	role := fs.String("role", "member", "their `ROLE` in the organisation: owner or member")
	if err := parse(fs, args, "org", "email"); err != nil {
		return err
	}
	if !core.Role(*role).Valid() {
		return usagef("person create: --role %q is not owner or member", *role)
	}
	return withPeople(ctx, cf, cio, func(s *pgstore.Store, svc *people.Service) error {
		o, err := orgByRef(ctx, s, *org)
		if err != nil {
			return err
		}
		n := *name
		if n == "" {
			n, _, _ = strings.Cut(strings.TrimSpace(*email), "@")
		}
		p, link, err := svc.CreatePerson(core.WithActor(ctx, core.Operator), o.ID, *email, n, core.Role(*role))
		if err != nil {
			return fieldUsage("person create", err)
		}
		return emit(cio.stdout, *cf.json, personJSON{PersonID: p.ID, Email: p.Email, Name: p.Name, OrgID: o.ID, Role: core.Role(*role), SetupLink: link},
			fmt.Sprintf("%s (%s) is %s of %s (%s).\nSet-up link, shown once, usable once within %s: %s",
				p.Email, p.ID, *role, o.Ticker, o.ID, core.Spell(svc.Config().LinkTTL), link))
	})
}

func personLink(ctx context.Context, fs *flag.FlagSet, args []string, cio cmdIO) error {
	cf := addCommon(fs)
	email := fs.String("email", "", "the person's `EMAIL`")
	if err := parse(fs, args, "email"); err != nil {
		return err
	}
	return withPeople(ctx, cf, cio, func(s *pgstore.Store, svc *people.Service) error {
		p, err := s.PersonByEmail(ctx, core.NormalEmail(*email))
		if err != nil {
			return notFound(err, "person", *email)
		}
		link, err := svc.SetupLink(core.WithActor(ctx, core.Operator), p.ID)
		if err != nil {
			return err
		}
		return emit(cio.stdout, *cf.json, personJSON{PersonID: p.ID, Email: p.Email, Name: p.Name, SetupLink: link},
			fmt.Sprintf("Set-up link for %s (%s), shown once, usable once within %s: %s", p.Email, p.ID, core.Spell(svc.Config().LinkTTL), link))
	})
}

// fieldUsage words a refused field of the people service for the CLI.
func fieldUsage(cmd string, err error) error {
	if fe, ok := err.(*people.FieldError); ok {
		return usagef("%s: --%s: %s", cmd, fe.Field, fe.Message)
	}
	return err
}

type auditJSON struct {
	ID        int64     `json:"id"`
	At        time.Time `json:"at"`
	OrgID     string    `json:"org_id"`
	ActorKind string    `json:"actor_kind"`
	ActorID   string    `json:"actor_id,omitempty"`
	Address   string    `json:"address,omitempty"`
	Action    string    `json:"action"`
	Object    string    `json:"object,omitempty"`
	Detail    string    `json:"detail,omitempty"`
}

func auditList(ctx context.Context, fs *flag.FlagSet, args []string, cio cmdIO) error {
	cf := addCommon(fs)
	org := fs.String("org", "", "the organisation, by `ID` (org_…) or ticker")
	since := fs.String("since", "", "only rows at or after `WHEN`: a duration back from now (24h) or an RFC 3339 time")
	limit := fs.Int("limit", 0, "at most `N` rows, the oldest first (0: all)")
	if err := parse(fs, args, "org"); err != nil {
		return err
	}
	from, err := parseSince(*since, time.Now())
	if err != nil {
		return usagef("audit: --since %v", err)
	}
	if *limit < 0 {
		return usagef("audit: --limit cannot be negative")
	}
	return withStore(ctx, cf, func(s *pgstore.Store) error {
		o, err := orgByRef(ctx, s, *org)
		if err != nil {
			return err
		}
		rows, err := s.Audit(ctx, &core.AuditQuery{OrgID: o.ID, Since: from, Limit: *limit})
		if err != nil {
			return err
		}
		out := make([]auditJSON, len(rows))
		var b strings.Builder
		for i, r := range rows {
			out[i] = auditJSON{ID: r.ID, At: r.At.UTC(), OrgID: r.OrgID, ActorKind: r.Actor.Kind, ActorID: r.Actor.ID,
				Address: r.Actor.Address, Action: r.Action, Object: r.Object, Detail: r.Detail}
			who := r.Actor.Kind
			if r.Actor.ID != "" {
				who += " " + r.Actor.ID
			}
			if r.Actor.Address != "" {
				who += " from " + r.Actor.Address
			}
			fmt.Fprintf(&b, "%s  %-26s %-28s %s", r.At.UTC().Format(time.RFC3339), r.Action, r.Object, who)
			if r.Detail != "" {
				fmt.Fprintf(&b, "  (%s)", r.Detail)
			}
			b.WriteByte('\n')
		}
		if len(rows) == 0 {
			b.WriteString("No audit rows.\n")
		}
		if *cf.json {
			return emit(cio.stdout, true, out, "")
		}
		_, err = fmt.Fprint(cio.stdout, b.String())
		return err
	})
}

// parseSince reads --since: "" (from the start), a duration back from now,
// or an RFC 3339 time.
func parseSince(s string, now time.Time) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if d, err := time.ParseDuration(s); err == nil {
		if d < 0 {
			return time.Time{}, fmt.Errorf("%q: a duration back from now cannot be negative", s)
		}
		return now.Add(-d), nil
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("%q is neither a duration (24h) nor an RFC 3339 time (2026-11-28T09:00:00Z)", s)
	}
	return t, nil
}
