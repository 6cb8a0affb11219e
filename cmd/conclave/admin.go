package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/internal/config"
	"github.com/conclavehq/conclave/internal/pgstore"
)

// newFlags returns a FlagSet that reports errors instead of exiting.
func newFlags(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return fs
}

// parse parses args into fs. -h and --help answer flag.ErrHelp, which the
// dispatcher turns into the command's help on stdout.
// parse parses a command's flags, refusing stray arguments and a missing
// flag among those named required.
func parse(fs *flag.FlagSet, args []string, required ...string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return flag.ErrHelp
		}
		return usagef("%s: %v", fs.Name(), err)
	}
	if fs.NArg() > 0 {
		return usagef("%s: unexpected argument %q", fs.Name(), fs.Arg(0))
	}
	return checkRequired(fs, required...)
}

func checkRequired(fs *flag.FlagSet, names ...string) error {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	for _, n := range names {
		if !set[n] {
			return usagef("%s: --%s is required", fs.Name(), n)
		}
	}
	return nil
}

// emit prints v as JSON when asJSON, else the human line.
func emit(w io.Writer, asJSON bool, v any, human string) error {
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	}
	_, err := fmt.Fprintln(w, human)
	return err
}

// notFound words a missing id for the operator.
func notFound(err error, what, id string) error {
	if errors.Is(err, core.ErrNotFound) {
		return fmt.Errorf("no %s with id %q", what, id)
	}
	return err
}

type orgJSON struct {
	OrgID     string `json:"org_id"`
	Name      string `json:"name"`
	Ticker    string `json:"ticker"`
	Plan      string `json:"plan"`
	Suspended bool   `json:"suspended"`
	Verified  bool   `json:"verified"`
	// Concurrency is the organisation's calls-in-flight override; null
	// means the deployment default.
	Concurrency     *int          `json:"concurrency"`
	MonthlyQuotaUSD *core.Dollars `json:"monthly_quota_usd"`
	BalanceUSD      *core.Dollars `json:"balance_usd,omitempty"`
}

func orgOut(o *core.Org) orgJSON {
	out := orgJSON{OrgID: o.ID, Name: o.Name, Ticker: o.Ticker, Plan: o.Plan, Suspended: o.Suspended(), Verified: o.Verified()}
	if o.Concurrency > 0 {
		c := o.Concurrency
		out.Concurrency = &c
	}
	if o.MonthlyQuota != nil {
		q := core.Dollars(*o.MonthlyQuota)
		out.MonthlyQuotaUSD = &q
	}
	return out
}

func orgCreate(ctx context.Context, fs *flag.FlagSet, args []string, cio cmdIO) error {
	cf := addCommon(fs)
	name := fs.String("name", "", "the organisation's `NAME`")
	ticker := fs.String("ticker", "", "`ABCD`, four letters A-Z; derived from the name when omitted")
	plan := fs.String("plan", core.PlanStandard, "the `PLAN`, read by the entitlement policy")
	unverified := fs.Bool("unverified", false, "create it unverified: it may spend only the activation allowance until 'org verify'")
	if err := parse(fs, args, "name"); err != nil {
		return err
	}
	*name = strings.TrimSpace(*name)
	if *name == "" {
		return usagef("org create: --name is empty")
	}
	if *ticker != "" && !core.ValidTicker(*ticker) {
		return usagef("org create: --ticker %q is not four letters A-Z", *ticker)
	}
	return withStore(ctx, cf, func(s *pgstore.Store) error {
		org, bal, err := s.CreateOrg(ctx, &core.CreateOrgParams{Name: *name, Ticker: *ticker, Plan: *plan, Unverified: *unverified})
		if errors.Is(err, core.ErrConflict) {
			return fmt.Errorf("ticker %q is already in use", *ticker)
		}
		if err != nil {
			return err
		}
		out := orgOut(org)
		b := core.Dollars(bal.Balance)
		out.BalanceUSD = &b
		return emit(cio.stdout, *cf.json, out, fmt.Sprintf("Created organisation %s (%s, ticker %s) with $%s trial credit.", org.Name, org.ID, org.Ticker, bal.Balance))
	})
}

func orgSuspend(ctx context.Context, fs *flag.FlagSet, args []string, cio cmdIO) error {
	return orgSwitch(ctx, fs, args, cio, "suspended", func(s *pgstore.Store, id string) (*core.Org, error) {
		return s.SetOrgSuspended(ctx, &core.SetOrgSuspendedParams{OrgID: id, Suspended: true})
	})
}

func orgUnsuspend(ctx context.Context, fs *flag.FlagSet, args []string, cio cmdIO) error {
	return orgSwitch(ctx, fs, args, cio, "unsuspended", func(s *pgstore.Store, id string) (*core.Org, error) {
		return s.SetOrgSuspended(ctx, &core.SetOrgSuspendedParams{OrgID: id, Suspended: false})
	})
}

func orgVerify(ctx context.Context, fs *flag.FlagSet, args []string, cio cmdIO) error {
	return orgSwitch(ctx, fs, args, cio, "verified", func(s *pgstore.Store, id string) (*core.Org, error) {
		return s.SetOrgVerified(ctx, id, true)
	})
}

func orgUnverify(ctx context.Context, fs *flag.FlagSet, args []string, cio cmdIO) error {
	return orgSwitch(ctx, fs, args, cio, "unverified", func(s *pgstore.Store, id string) (*core.Org, error) {
		return s.SetOrgVerified(ctx, id, false)
	})
}

// orgSwitch runs an org command that takes only --org and turns a state on
// or off; done words the new state ("suspended").
func orgSwitch(ctx context.Context, fs *flag.FlagSet, args []string, cio cmdIO, done string,
	apply func(s *pgstore.Store, id string) (*core.Org, error)) error {
	cf := addCommon(fs)
	id := fs.String("org", "", "organisation `ID` (org_…)")
	if err := parse(fs, args, "org"); err != nil {
		return err
	}
	return withStore(ctx, cf, func(s *pgstore.Store) error {
		org, err := apply(s, *id)
		if err != nil {
			return notFound(err, "organisation", *id)
		}
		return emit(cio.stdout, *cf.json, orgOut(org), fmt.Sprintf("Organisation %s is %s.", org.ID, done))
	})
}

func orgPlan(ctx context.Context, fs *flag.FlagSet, args []string, cio cmdIO) error {
	cf := addCommon(fs)
	id := fs.String("org", "", "organisation `ID` (org_…)")
	plan := fs.String("plan", "", "the `PLAN`, read by the entitlement policy")
	if err := parse(fs, args, "org", "plan"); err != nil {
		return err
	}
	return withDatabase(ctx, cf, func(cfg *config.Config, db *database) error {
		org, err := db.store.SetOrgPlan(ctx, &core.SetOrgPlanParams{OrgID: *id, Plan: *plan})
		if err != nil {
			return notFound(err, "organisation", *id)
		}
		if _, ok := cfg.PlansByName()[org.Plan]; !ok {
			// The policy may still read the name (a mode's plans); connected
			// apps get nothing until it is configured (docs/plans.md).
			fmt.Fprintf(cio.stderr, "warning: plan %q is not configured (plans: in the configuration): the organisation's connected apps get the lowest tier and no allowance\n", org.Plan)
		}
		return emit(cio.stdout, *cf.json, orgOut(org), fmt.Sprintf("Organisation %s is on plan %s.", org.ID, org.Plan))
	})
}

func orgLimits(ctx context.Context, fs *flag.FlagSet, args []string, cio cmdIO) error {
	cf := addCommon(fs)
	id := fs.String("org", "", "organisation `ID` (org_…)")
	conc := fs.Int("concurrency", -1, "at most `N` calls in flight for the organisation; 0 returns to the deployment default")
	quota := fs.String("monthly-quota-usd", "", "a monthly spend quota of `X` dollars; \"none\" removes it")
	if err := parse(fs, args, "org"); err != nil {
		return err
	}
	p := &core.SetOrgLimitsParams{OrgID: *id}
	if *conc >= 0 {
		p.Concurrency = conc
	}
	switch *quota {
	case "":
	case "none":
		none := core.Micros(-1)
		p.MonthlyQuota = &none
	default:
		q, err := core.ParseUSD(*quota)
		if err != nil || q < 0 {
			return usagef("org limits: --monthly-quota-usd %q is not an amount in USD", *quota)
		}
		p.MonthlyQuota = &q
	}
	if p.Concurrency == nil && p.MonthlyQuota == nil {
		return usagef("org limits: give --concurrency, --monthly-quota-usd or both")
	}
	return withStore(ctx, cf, func(s *pgstore.Store) error {
		org, err := s.SetOrgLimits(ctx, p)
		if err != nil {
			return notFound(err, "organisation", *id)
		}
		return emit(cio.stdout, *cf.json, orgOut(org), fmt.Sprintf("Limits of %s updated.", org.ID))
	})
}

type balanceJSON struct {
	OrgID             string       `json:"org_id"`
	BalanceUSD        core.Dollars `json:"balance_usd"`
	HeldUSD           core.Dollars `json:"held_usd"`
	AvailableUSD      core.Dollars `json:"available_usd"`
	TrialRemainingUSD core.Dollars `json:"trial_remaining_usd"`
}

func balanceOut(b *core.Balance) balanceJSON {
	return balanceJSON{OrgID: b.OrgID, BalanceUSD: core.Dollars(b.Balance), HeldUSD: core.Dollars(b.Held),
		AvailableUSD: core.Dollars(b.Available()), TrialRemainingUSD: core.Dollars(b.TrialRemaining)}
}

func balanceAdd(ctx context.Context, fs *flag.FlagSet, args []string, cio cmdIO) error {
	cf := addCommon(fs)
	id := fs.String("org", "", "organisation `ID` (org_…)")
	usd := fs.String("usd", "", "`AMOUNT` in dollars, e.g. 25 or 12.50")
	memo := fs.String("memo", "", "a memo `TEXT` for the journal")
	if err := parse(fs, args, "org", "usd"); err != nil {
		return err
	}
	amount, err := core.ParseUSD(*usd)
	if err != nil || amount <= 0 {
		return usagef("balance add: --usd %q is not a positive dollar amount with at most six decimals", *usd)
	}
	return withStore(ctx, cf, func(s *pgstore.Store) error {
		bal, err := s.AddFunds(ctx, &core.AddFundsParams{OrgID: *id, Amount: amount, Memo: *memo})
		if err != nil {
			if _, gerr := s.GetOrg(ctx, *id); errors.Is(gerr, core.ErrNotFound) {
				return notFound(gerr, "organisation", *id)
			}
			return err
		}
		return emit(cio.stdout, *cf.json, balanceOut(bal), fmt.Sprintf("Added $%s; balance of %s is now $%s.", amount, bal.OrgID, bal.Balance))
	})
}

func balanceShow(ctx context.Context, fs *flag.FlagSet, args []string, cio cmdIO) error {
	cf := addCommon(fs)
	id := fs.String("org", "", "organisation `ID` (org_…)")
	if err := parse(fs, args, "org"); err != nil {
		return err
	}
	return withStore(ctx, cf, func(s *pgstore.Store) error {
		bal, err := s.GetBalance(ctx, *id)
		if err != nil {
			return notFound(err, "organisation", *id)
		}
		return emit(cio.stdout, *cf.json, balanceOut(bal), fmt.Sprintf("Balance of %s: $%s ($%s held, $%s trial credit).", bal.OrgID, bal.Balance, bal.Held, bal.TrialRemaining))
	})
}

type keyJSON struct {
	KeyID          string        `json:"key_id"`
	Key            string        `json:"key,omitempty"` // only on create
	OrgID          string        `json:"org_id"`
	Name           string        `json:"name"`
	Hint           string        `json:"hint"`
	Test           bool          `json:"test"`
	Scopes         []string      `json:"scopes"`
	Modes          []string      `json:"modes"`
	RPM            *int          `json:"rpm"`
	Concurrency    *int          `json:"concurrency"`
	MaxInputTokens *int          `json:"max_input_tokens"`
	CeilingUSD     *core.Dollars `json:"ceiling_usd"`
	Status         string        `json:"status"`
	ExpiresAt      *time.Time    `json:"expires_at"`
	RevokedAt      *time.Time    `json:"revoked_at"`
	CreatedAt      time.Time     `json:"created_at"`
}

func keyOut(k *core.Key) keyJSON {
	opt := func(v int) *int {
		if v == 0 {
			return nil
		}
		return &v
	}
	out := keyJSON{KeyID: k.ID, OrgID: k.OrgID, Name: k.Name, Hint: k.Hint, Test: k.Test, Scopes: k.Scopes, Modes: k.Modes,
		RPM: opt(k.RPM), Concurrency: opt(k.Concurrency), MaxInputTokens: opt(k.MaxInputTokens),
		Status: "active", ExpiresAt: k.ExpiresAt, RevokedAt: k.RevokedAt, CreatedAt: k.CreatedAt}
	if k.Ceiling > 0 {
		c := core.Dollars(k.Ceiling)
		out.CeilingUSD = &c
	}
	if s := k.Status(time.Now()); s != "" {
		out.Status = s
	}
	return out
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

func keyCreate(ctx context.Context, fs *flag.FlagSet, args []string, cio cmdIO) error {
	cf := addCommon(fs)
	p, err := keyCreateParams(fs, args)
	if err != nil {
		return err
	}
	return withStore(ctx, cf, func(s *pgstore.Store) error {
		return createKey(ctx, s, p, cio.stdout, *cf.json)
	})
}

func keyRevoke(ctx context.Context, fs *flag.FlagSet, args []string, cio cmdIO) error {
	cf := addCommon(fs)
	id := fs.String("key", "", "key `ID` (key_…)")
	if err := parse(fs, args, "key"); err != nil {
		return err
	}
	return withStore(ctx, cf, func(s *pgstore.Store) error {
		k, err := s.RevokeKey(ctx, *id)
		if err != nil {
			return notFound(err, "key", *id)
		}
		return emit(cio.stdout, *cf.json, keyOut(k), fmt.Sprintf("Key %s is revoked.", k.ID))
	})
}

func keyList(ctx context.Context, fs *flag.FlagSet, args []string, cio cmdIO) error {
	cf := addCommon(fs)
	org := fs.String("org", "", "organisation `ID` (org_…)")
	if err := parse(fs, args, "org"); err != nil {
		return err
	}
	return withOrgStore(ctx, cf, *org, func(s *pgstore.Store) error {
		keys, err := s.ListKeys(ctx, *org)
		if err != nil {
			return err
		}
		out := struct {
			Keys []keyJSON `json:"keys"`
		}{Keys: []keyJSON{}}
		var lines []string
		for _, k := range keys {
			kj := keyOut(k)
			out.Keys = append(out.Keys, kj)
			lines = append(lines, fmt.Sprintf("%s  %-8s %-14s %s", k.ID, kj.Status, k.Hint, k.Name))
		}
		return emit(cio.stdout, *cf.json, out, strings.Join(lines, "\n"))
	})
}

// keyCreateParams parses the flags of `key create` into store parameters
// (without the secret, which createKey makes).
func keyCreateParams(fs *flag.FlagSet, args []string) (*core.CreateKeyParams, error) {
	org := fs.String("org", "", "organisation `ID` (org_…)")
	test := fs.Bool("test", false, "issue a ccl_test_ key")
	name := fs.String("name", "", "a `NAME` for the key")
	scopes := fs.String("scopes", "", "comma-separated scopes `s1,s2`; defaults to all: "+strings.Join(core.AllScopes, ","))
	modes := fs.String("modes", "", "comma-separated mode ids `m1,m2` the key is limited to; defaults to every entitled mode")
	rpm := fs.Int("rpm", 0, "at most `N` requests per minute (overrides the default)")
	conc := fs.Int("concurrency", 0, "at most `N` calls in flight (overrides the default)")
	maxIn := fs.Int("max-input-tokens", 0, "at most `N` input tokens per request (overrides the default)")
	ceiling := fs.String("ceiling-usd", "", "the key's own per-call bill ceiling, `X` dollars")
	expires := fs.Duration("expires-in", 0, "a lifetime of `DURATION`, e.g. 720h; defaults to no expiry")
	if err := parse(fs, args, "org"); err != nil {
		return nil, err
	}
	p := &core.CreateKeyParams{OrgID: *org, Test: *test, Name: *name, RPM: *rpm, Concurrency: *conc, MaxInputTokens: *maxIn}
	if *scopes != "" {
		p.Scopes = splitList(*scopes)
		for _, s := range p.Scopes {
			if !slices.Contains(core.AllScopes, s) {
				return nil, usagef("key create: unknown scope %q (known: %s)", s, strings.Join(core.AllScopes, ", "))
			}
		}
	}
	if *modes != "" {
		p.Modes = splitList(*modes)
	}
	for flagName, v := range map[string]int{"rpm": *rpm, "concurrency": *conc, "max-input-tokens": *maxIn} {
		if v < 0 {
			return nil, usagef("key create: --%s cannot be negative", flagName)
		}
	}
	if *ceiling != "" {
		c, err := core.ParseUSD(*ceiling)
		if err != nil || c <= 0 {
			return nil, usagef("key create: --ceiling-usd %q is not a positive dollar amount", *ceiling)
		}
		p.Ceiling = c
	}
	if *expires < 0 {
		return nil, usagef("key create: --expires-in cannot be negative")
	}
	if *expires > 0 {
		at := time.Now().Add(*expires).UTC()
		p.ExpiresAt = &at
	}
	return p, nil
}

// createKey makes the secret, stores its hash, and prints the secret once.
func createKey(ctx context.Context, s core.Keys, p *core.CreateKeyParams, w io.Writer, asJSON bool) error {
	secret, hash := core.NewKeySecret(p.Test)
	p.Hash, p.Hint = hash, core.KeyHint(secret)
	k, err := s.CreateKey(ctx, p)
	if err != nil {
		return notFound(err, "organisation", p.OrgID)
	}
	out := keyOut(k)
	out.Key = secret
	return emit(w, asJSON, out, fmt.Sprintf("Created key %s for %s. It is shown only now:\n%s", k.ID, k.OrgID, secret))
}

func migrate(ctx context.Context, fs *flag.FlagSet, args []string, cio cmdIO) error {
	cf := addCommon(fs)
	if err := parse(fs, args); err != nil {
		return err
	}
	return withStore(ctx, cf, func(s *pgstore.Store) error {
		v, err := pgstore.SchemaVersion(ctx, s.Pool())
		if err != nil {
			return err
		}
		return emit(cio.stdout, *cf.json, map[string]int{"schema_version": v}, fmt.Sprintf("Schema is at version %d.", v))
	})
}
