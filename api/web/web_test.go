package web_test

import (
	"context"
	"crypto/rand"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/adapters/sim"
	"github.com/conclavehq/conclave/api"
	"github.com/conclavehq/conclave/api/web"
	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/core/access"
	"github.com/conclavehq/conclave/core/calls"
	"github.com/conclavehq/conclave/core/dashboard"
	"github.com/conclavehq/conclave/core/deliberate"
	"github.com/conclavehq/conclave/core/people"
	"github.com/conclavehq/conclave/internal/browsertest"
	"github.com/conclavehq/conclave/internal/config"
	"github.com/conclavehq/conclave/internal/pgstore"
	"github.com/conclavehq/conclave/internal/pgtest"
	"github.com/conclavehq/conclave/internal/tokens"
	"github.com/conclavehq/conclave/plugins/byok"
	"github.com/conclavehq/conclave/plugins/egress"
	"github.com/conclavehq/conclave/plugins/protocol/direct"
	"github.com/conclavehq/conclave/plugins/providers"
	"github.com/conclavehq/conclave/policies"
)

func TestMain(m *testing.M) { pgtest.Main(m, browsertest.Close) }

// bundle is one server of the pages on a real PostgreSQL: an organisation,
// ACME, and its owner, with a set-up link.
type bundle struct {
	store     *pgstore.Store
	acc       *access.Service
	people    *people.Service
	calls     *calls.Service
	origin    string // http://localhost:PORT, the one origin
	ipURL     string // http://127.0.0.1:PORT, the same server on another host name
	org       *core.Org
	owner     *core.Person
	ownerLink string
}

// setup starts the bundle; opts change the dashboard's dependencies.
func setup(t testing.TB, cfg people.Config, opts ...func(*dashboard.Deps)) *bundle {
	t.Helper()
	ctx := context.Background()
	store := pgstore.New(pgtest.NewPool(t))
	authz, err := policies.New(ctx, policies.Config{})
	require.NoError(t, err)
	acc, err := access.New(access.Config{}, store, authz, store)
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := ln.Addr().(*net.TCPAddr).Port
	b := &bundle{store: store, acc: acc, origin: "http://localhost:" + strconv.Itoa(port), ipURL: "http://" + ln.Addr().String()}
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	sealer, err := byok.NewSealer(key)
	require.NoError(t, err)
	cfg.PublicURL = b.origin
	b.people, err = people.New(cfg, people.Deps{Store: store, Orgs: store, Keys: store, Access: acc,
		Credentials: store, Maker: byok.Maker{Sealer: sealer}, Grants: store})
	require.NoError(t, err)

	// The billed call on the simulated providers, and REST at /v1, as serve
	// mounts them beside the pages.
	conf, err := config.Builtin()
	require.NoError(t, err)
	catalog, err := conf.Catalog()
	require.NoError(t, err)
	resolver, err := byok.NewResolver(byok.ResolverConfig{Store: store, Sealer: sealer})
	require.NoError(t, err)
	prov, err := providers.Start(ctx, providers.Config{Catalog: catalog, Simulator: sim.Config{TimeScale: 0.02},
		Egress: egress.Config{MaxAttempts: 1}, BYOK: resolver})
	require.NoError(t, err)
	t.Cleanup(func() { prov.Stop(context.Background()) })
	engine, err := deliberate.New(deliberate.Config{Catalog: catalog, Caller: prov, Judge: direct.New()})
	require.NoError(t, err)
	b.calls, err = calls.New(calls.Config{}, calls.Deps{Access: acc, Admission: store, Receipts: store, Outcomes: store,
		Catalog: catalog, Deliberator: engine, TokensOver: tokens.Over})
	require.NoError(t, err)
	require.NoError(t, b.calls.Start(ctx))
	t.Cleanup(b.calls.Stop)
	rest, err := api.New(api.Config{}, api.Deps{Access: acc, Calls: b.calls, Ready: store.Ready})
	require.NoError(t, err)
	dd := dashboard.Deps{Access: acc, Store: store, Keys: store, Receipts: b.calls, Credentials: store,
		Tester: &byok.Tester{Catalog: catalog, Caller: prov, Forget: resolver.Forget}, MaxInputTokens: 8000,
		ActivationAllowance: 10 * core.MicrosPerUSD}
	for _, o := range opts {
		o(&dd)
	}
	dash, err := dashboard.New(dd)
	require.NoError(t, err)
	pages, err := web.New(web.Config{PublicURL: b.origin}, web.Deps{People: b.people, Dashboard: dash, Health: store})
	require.NoError(t, err)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/v1/") {
			rest.ServeHTTP(w, r)
			return
		}
		pages.ServeHTTP(w, r)
	})
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })

	b.org, _, err = store.CreateOrg(ctx, &core.CreateOrgParams{Name: "Acme Research", Ticker: "ACME"})
	require.NoError(t, err)
	b.owner, b.ownerLink, err = b.people.CreatePerson(core.WithActor(ctx, core.Operator), b.org.ID, "olive@acme.example", "Olive Owner", core.RoleOwner)
	require.NoError(t, err)
	return b
}

// principal is the session principal of person in the bundle's
// organisation, as the pages resolve it.
func (b *bundle) principal(t testing.TB, person *core.Person) *access.Principal {
	t.Helper()
	m, err := b.store.Membership(context.Background(), person.ID, b.org.ID)
	require.NoError(t, err)
	return &access.Principal{Kind: core.PrincipalSession, Person: person, Role: m.Role, Org: b.org, Address: "127.0.0.1"}
}

// audit is the organisation's audit trail as action → count.
func (b *bundle) audit(t testing.TB) map[string]int {
	t.Helper()
	rows, err := b.store.Audit(context.Background(), &core.AuditQuery{OrgID: b.org.ID})
	require.NoError(t, err)
	out := map[string]int{}
	for _, r := range rows {
		out[r.Action]++
	}
	return out
}

// ownerPassword sets the owner's password through their set-up link, as
// the link page does.
const ownerPassword = "a long owner passphrase"

func (b *bundle) setOwnerPassword(t testing.TB) {
	t.Helper()
	_, err := b.people.AcceptWithPassword(context.Background(), linkSecret(b.ownerLink), "", ownerPassword, "127.0.0.1")
	require.NoError(t, err)
}

// linkSecret is the secret at the end of a link's URL.
func linkSecret(link string) string {
	return link[strings.LastIndex(link, "/")+1:]
}

func listenLoopback(t testing.TB) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	return ln
}
