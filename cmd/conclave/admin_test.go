package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/internal/browsertest"
	"github.com/conclavehq/conclave/internal/pgstore"
	"github.com/conclavehq/conclave/internal/pgtest"
	"github.com/conclavehq/conclave/plugins/plugintest"
)

func TestMain(m *testing.M) {
	if args := os.Getenv("CONCLAVE_BENCH_GATEWAY_ARGS"); args != "" {
		// This binary is the gateway of a profiled in-flight benchmark.
		if err := profiledGateway(args, os.Getenv("CONCLAVE_BENCH_PPROF_DIR")); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	if db := os.Getenv("CONCLAVE_BENCH_FLOOR_DB"); db != "" {
		// This binary is the floor of BenchmarkServeOverheadFloor or
		// BenchmarkServeOverheadLeanRails.
		fmt.Fprintln(os.Stderr, overheadFloor(db, os.Getenv("CONCLAVE_BENCH_FLOOR_SIM"), os.Getenv("CONCLAVE_BENCH_FLOOR_SHAPE")))
		os.Exit(1)
	}
	pgtest.Main(m, plugintest.Cleanup, browsertest.Close)
}

// adminBundle runs subcommands in-process against a fresh database, named in
// a configuration file so that tests can run in parallel.
type adminBundle struct {
	cfgPath string
	store   *pgstore.Store
}

func setupAdmin(t *testing.T) *adminBundle {
	t.Helper()
	if os.Getenv("DATABASE_URL") != "" {
		t.Fatal("unset DATABASE_URL to run these tests: it would override the per-test database")
	}
	url := pgtest.NewDatabase(t)
	cfgPath := filepath.Join(t.TempDir(), "conclave.yaml")
	require.NoError(t, os.WriteFile(cfgPath, []byte(fmt.Sprintf("database:\n  url: %q\n", url)), 0o600))
	pool, err := pgxpool.New(context.Background(), url)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	return &adminBundle{cfgPath: cfgPath, store: pgstore.New(pool)}
}

// run runs one subcommand with --config and --json and decodes its output.
func (b *adminBundle) run(t *testing.T, args ...string) (map[string]any, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	args = append(args, "--config", b.cfgPath, "--json")
	err := run(context.Background(), args, &out, &errOut)
	if err != nil {
		return nil, err
	}
	var v map[string]any
	require.NoError(t, json.Unmarshal(out.Bytes(), &v), "output: %s", out.String())
	return v, nil
}

func (b *adminBundle) mustRun(t *testing.T, args ...string) map[string]any {
	t.Helper()
	v, err := b.run(t, args...)
	require.NoError(t, err)
	return v
}

func TestAdminProvisioningFlow(t *testing.T) {
	t.Parallel()
	b := setupAdmin(t)
	ctx := context.Background()

	org := b.mustRun(t, "org", "create", "--name", "Acme Research", "--ticker", "ACME")
	orgID := org["org_id"].(string)
	require.True(t, strings.HasPrefix(orgID, "org_"))
	require.Equal(t, "ACME", org["ticker"])
	require.Equal(t, 10.0, org["balance_usd"])

	derived := b.mustRun(t, "org", "create", "--name", "Zephyr Ltd")
	require.Equal(t, "ZEPH", derived["ticker"])

	_, err := b.run(t, "org", "create", "--name", "Copycat", "--ticker", "ACME")
	require.ErrorContains(t, err, `ticker "ACME" is already in use`)

	bal := b.mustRun(t, "balance", "add", "--org", orgID, "--usd", "12.5")
	require.Equal(t, 22.5, bal["balance_usd"])
	require.Equal(t, 10.0, bal["trial_remaining_usd"])
	bal = b.mustRun(t, "balance", "show", "--org", orgID)
	require.Equal(t, 22.5, bal["available_usd"])

	key := b.mustRun(t, "key", "create", "--org", orgID, "--name", "ci", "--scopes", "models:read,estimate",
		"--modes", "conclave-standard", "--rpm", "120", "--concurrency", "3", "--max-input-tokens", "16000",
		"--ceiling-usd", "3.5", "--expires-in", "720h")
	secret := key["key"].(string)
	require.True(t, core.WellFormedKey(secret))
	require.True(t, strings.HasPrefix(secret, core.LiveKeyPrefix))
	keyID := key["key_id"].(string)
	require.Equal(t, []any{"models:read", "estimate"}, key["scopes"])
	require.Equal(t, []any{"conclave-standard"}, key["modes"])
	require.Equal(t, 120.0, key["rpm"])
	require.Equal(t, 3.0, key["concurrency"])
	require.Equal(t, 16000.0, key["max_input_tokens"])
	require.Equal(t, 3.5, key["ceiling_usd"])
	require.NotNil(t, key["expires_at"])

	stored, storedOrg, err := b.store.KeyByHash(ctx, core.HashKey(secret))
	require.NoError(t, err, "the key is stored by its hash")
	require.Equal(t, keyID, stored.ID)
	require.Equal(t, orgID, storedOrg.ID)

	test := b.mustRun(t, "key", "create", "--org", orgID, "--test")
	require.True(t, strings.HasPrefix(test["key"].(string), core.TestKeyPrefix))
	require.Equal(t, true, test["test"])

	var out, errOut bytes.Buffer
	require.NoError(t, run(ctx, []string{"key", "list", "--org", orgID, "--config", b.cfgPath, "--json"}, &out, &errOut))
	require.NotContains(t, out.String(), secret[len(core.LiveKeyPrefix):], "a listing never shows a secret")
	var list struct {
		Keys []map[string]any `json:"keys"`
	}
	require.NoError(t, json.Unmarshal(out.Bytes(), &list))
	require.Len(t, list.Keys, 2)
	for _, k := range list.Keys {
		require.NotContains(t, k, "key")
	}

	revoked := b.mustRun(t, "key", "revoke", "--key", keyID)
	require.Equal(t, "revoked", revoked["status"])

	susp := b.mustRun(t, "org", "suspend", "--org", orgID)
	require.Equal(t, true, susp["suspended"])
	susp = b.mustRun(t, "org", "unsuspend", "--org", orgID)
	require.Equal(t, false, susp["suspended"])
	plan := b.mustRun(t, "org", "plan", "--org", orgID, "--plan", "pro")
	require.Equal(t, "pro", plan["plan"])

	// Every balance change is journaled: the balance equals its legs.
	postings, err := b.store.ListPostings(ctx, orgID)
	require.NoError(t, err)
	require.Len(t, postings, 2)
	var legs core.Micros
	for _, p := range postings {
		var sum core.Micros
		for _, l := range p.Legs {
			sum += l.Amount
			if l.Account == core.AccountOrgBalance {
				legs += l.Amount
			}
		}
		require.Zero(t, sum)
	}
	got, err := b.store.GetBalance(ctx, orgID)
	require.NoError(t, err)
	require.Equal(t, got.Balance, legs)
	require.Equal(t, core.Micros(22_500_000), legs)
}

func TestAdminErrors(t *testing.T) {
	t.Parallel()
	b := setupAdmin(t)
	cases := []struct {
		args  []string
		want  string
		usage bool
	}{
		{[]string{"org", "create"}, "--name is required", true},
		{[]string{"org", "create", "--name", "X", "--ticker", "abc"}, "not four letters", true},
		{[]string{"org", "suspend", "--org", "org_missing"}, `no organisation with id "org_missing"`, false},
		{[]string{"balance", "add", "--org", "org_missing", "--usd", "5"}, `no organisation with id "org_missing"`, false},
		{[]string{"balance", "add", "--org", "o", "--usd", "-5"}, "not a positive dollar amount", true},
		{[]string{"balance", "add", "--org", "o", "--usd", "0.0000001"}, "not a positive dollar amount", true},
		{[]string{"key", "create", "--org", "org_missing"}, `no organisation with id "org_missing"`, false},
		{[]string{"key", "create", "--org", "o", "--scopes", "admin"}, `unknown scope "admin"`, true},
		{[]string{"key", "revoke", "--key", "key_missing"}, `no key with id "key_missing"`, false},
		{[]string{"key", "list", "--org", "org_missing"}, `no organisation with id "org_missing"`, false},
		{[]string{"key", "create", "--org", "o", "--bogus"}, "flag provided but not defined", true},
		{[]string{"frobnicate"}, `unknown command "frobnicate"`, true},
	}
	for _, tc := range cases {
		_, err := b.run(t, tc.args...)
		require.ErrorContains(t, err, tc.want, "args %v", tc.args)
		var u usageError
		require.Equal(t, tc.usage, errors.As(err, &u), "usage error for %v", tc.args)
	}
}

// Verification and per-organisation limits from the command line.
func TestAdminOrgVerificationAndLimits(t *testing.T) {
	t.Parallel()
	b := setupAdmin(t)
	org := b.mustRun(t, "org", "create", "--name", "Pending Co", "--unverified")
	orgID := org["org_id"].(string)
	require.Equal(t, false, org["verified"])
	require.Nil(t, org["concurrency"])
	require.Nil(t, org["monthly_quota_usd"])
	require.Equal(t, true, b.mustRun(t, "org", "verify", "--org", orgID)["verified"])
	require.Equal(t, false, b.mustRun(t, "org", "unverify", "--org", orgID)["verified"])

	out := b.mustRun(t, "org", "limits", "--org", orgID, "--concurrency", "12", "--monthly-quota-usd", "250.5")
	require.Equal(t, 12.0, out["concurrency"])
	require.Equal(t, 250.5, out["monthly_quota_usd"])
	stored, err := b.store.GetOrg(context.Background(), orgID)
	require.NoError(t, err)
	require.Equal(t, 12, stored.Concurrency)
	require.Equal(t, core.Micros(250_500_000), *stored.MonthlyQuota)
	out = b.mustRun(t, "org", "limits", "--org", orgID, "--monthly-quota-usd", "none")
	require.Nil(t, out["monthly_quota_usd"])
	require.Equal(t, 12.0, out["concurrency"], "an omitted flag is left as it is")
	out = b.mustRun(t, "org", "limits", "--org", orgID, "--concurrency", "0")
	require.Nil(t, out["concurrency"], "0 returns to the default")

	_, err = b.run(t, "org", "limits", "--org", orgID)
	require.ErrorContains(t, err, "give --concurrency, --monthly-quota-usd or both")
	_, err = b.run(t, "org", "limits", "--org", orgID, "--monthly-quota-usd", "lots")
	require.ErrorContains(t, err, "is not an amount in USD")
	_, err = b.run(t, "org", "verify", "--org", "org_missing")
	require.ErrorContains(t, err, `no organisation with id "org_missing"`)
}

// The operator reviews listings from the command line, through the same
// state machine as every change of a mode: approve a pending listing at the
// version reviewed (--version, by default the latest release), which is
// certified and published; refuse a version never released, what the
// listing's state does not allow and a stale revision; delist an approved
// one and approve it again; an unknown mode is named.
func TestListingReview(t *testing.T) {
	t.Parallel()
	b := setupAdmin(t)
	ctx := context.Background()
	org, _, err := b.store.CreateOrg(ctx, &core.CreateOrgParams{Name: "Acme", Ticker: "ACME"})
	require.NoError(t, err)
	release := func(m *core.AuthoredMode, rounds int) *core.AuthoredMode {
		t.Helper()
		p := &core.SaveModeDraft{OrgID: org.ID, Name: "Review Panel", Ticker: "PANL",
			Spec: []byte(`{"name":"Review Panel","ticker":"PANL"}`), Validated: true}
		if m != nil {
			p.ModeID, p.BaseRevision = m.ID, m.DraftRevision
		}
		m, err := b.store.SaveModeDraft(ctx, p)
		require.NoError(t, err)
		mode := &core.Mode{ID: m.ID, Ticker: m.Ticker, OwnerOrg: org.ID, Deliberation: core.Deliberation{MaxRounds: rounds}}
		_, err = b.store.ReleaseMode(ctx, &core.ReleaseMode{OrgID: org.ID, ModeID: m.ID, Revision: m.DraftRevision, Mode: mode, ConfigHash: mode.ConfigHash(nil)})
		require.NoError(t, err)
		m, err = b.store.AuthoredMode(ctx, org.ID, m.ID)
		require.NoError(t, err)
		return m
	}
	m := release(nil, 1)
	m, err = b.store.ChangeListing(ctx, org.ID, m.ID, core.ModeAction{Kind: core.ActionRequestListing, ListingRevision: m.ListingRevision})
	require.NoError(t, err)
	require.Equal(t, core.ListingPending, m.Listing)
	m = release(m, 2) // version 2, released while the listing is pending
	stale := m.ListingRevision

	// --version names a released version, and only for an approval.
	_, err = b.run(t, "listing", "approve", "--mode", "ACME:PANL", "--version", "3")
	require.Equal(t, core.CodeModeNotFound, core.AsError(err).Code, "version 3 was never released: %v", err)
	for _, args := range [][]string{
		{"listing", "approve", "--mode", "ACME:PANL", "--version", "-1"},
		{"listing", "reject", "--mode", "ACME:PANL", "--version", "1"},
		{"listing", "delist", "--mode", "ACME:PANL", "--version", "1"},
	} {
		_, err = b.run(t, args...)
		var u usageError
		require.ErrorAs(t, err, &u, "%v", args)
		require.Contains(t, u.msg, "--version")
	}
	got, err := b.store.AuthoredMode(ctx, org.ID, m.ID)
	require.NoError(t, err)
	require.Equal(t, m.ModeState, got.ModeState, "a refused review changes nothing")

	// Approving version 1: it is certified and published, though version 2
	// is the latest.
	out := b.mustRun(t, "listing", "approve", "--mode", "ACME:PANL", "--version", "1")
	require.Equal(t, string(core.ListingApproved), out["listing"])
	require.Equal(t, m.ID, out["mode_id"])
	require.Greater(t, out["listing_revision"], float64(stale))
	require.Equal(t, float64(2), out["latest_version"])
	require.Equal(t, float64(1), out["certified_version"])
	require.Equal(t, float64(1), out["published_version"])

	_, err = b.run(t, "listing", "reject", "--mode", m.ID)
	require.Equal(t, core.CodeConflict, core.AsError(err).Code, "only a pending listing can be rejected: %v", err)
	_, err = b.run(t, "listing", "delist", "--mode", m.ID, "--revision", fmt.Sprint(stale))
	require.Equal(t, core.CodeListingChanged, core.AsError(err).Code, "a revision read before the approval: %v", err)

	out = b.mustRun(t, "listing", "delist", "--mode", m.ID)
	require.Equal(t, string(core.ListingDelisted), out["listing"])
	require.Equal(t, float64(0), out["published_version"], "delisting withdraws the published version")
	require.Equal(t, float64(1), out["certified_version"], "and keeps the certified one")
	got, err = b.store.AuthoredMode(ctx, org.ID, m.ID)
	require.NoError(t, err)
	require.Equal(t, core.ListingDelisted, got.Listing, "the store holds what the command said")

	// Approved again without --version: the latest release.
	out = b.mustRun(t, "listing", "approve", "--mode", m.ID)
	require.Equal(t, string(core.ListingApproved), out["listing"])
	require.Equal(t, float64(2), out["certified_version"])
	require.Equal(t, float64(2), out["published_version"])
	got, err = b.store.AuthoredMode(ctx, org.ID, m.ID)
	require.NoError(t, err)
	require.Equal(t, [2]int{2, 2}, [2]int{got.CertifiedVersion, got.PublishedVersion})

	_, err = b.run(t, "listing", "approve", "--mode", "NOPE:NOPE")
	require.ErrorContains(t, err, `no mode with id "NOPE:NOPE"`)
}
