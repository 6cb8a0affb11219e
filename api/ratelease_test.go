package api_test

import (
	"context"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/internal/config"
	"github.com/conclavehq/conclave/internal/pgstore"
	"github.com/conclavehq/conclave/internal/pgtest"
	"github.com/conclavehq/conclave/policies"
)

// leaseCounter is the store, counting the rate leases taken from it.
type leaseCounter struct {
	*pgstore.Store
	trips atomic.Int64
}

func (c *leaseCounter) LeaseRate(ctx context.Context, keyID string, perMinute, want, back int) (int, time.Duration, error) {
	c.trips.Add(1)
	return c.Store.LeaseRate(ctx, keyID, perMinute, want, back)
}

// benchReplica serves a handler on store's database, as one replica
// with its own access service (its own leases and key cache), metering
// with admission; it returns its URL.
func benchReplica(t testing.TB, store *pgstore.Store, admission core.Admission, l limits) string {
	t.Helper()
	cfg, err := config.Builtin()
	require.NoError(t, err)
	catalog, err := cfg.Catalog()
	require.NoError(t, err)
	authz, err := policies.New(context.Background(), policies.Config{})
	require.NoError(t, err)
	pt := &parts{store: store, admission: admission, authz: authz, catalog: catalog, limits: l,
		logger: slog.New(slog.DiscardHandler), registry: prometheus.NewRegistry()}
	h, _ := pt.serve(t)
	return newServer(t, h).URL
}

// replicas serves n replicas on store's database, metering through one
// counter of their rate leases.
func replicas(t *testing.T, store *pgstore.Store, n int, l limits) ([]string, *leaseCounter) {
	t.Helper()
	counter := &leaseCounter{Store: store}
	var urls []string
	for range n {
		urls = append(urls, benchReplica(t, store, counter, l))
	}
	return urls, counter
}

// A key hammering three replicas with reads never passes its rate: the
// leases are carved out of the key's own budget, so what all three admit
// is at most what the key's rate allows one replica admitting each request
// alone — its whole minute's budget at once, then one request per emission
// interval — and only the timing is coarser. The reads cost far fewer
// statements than requests. A billed call on a fourth replica shares the
// same budget: once the reads have spent it, the call is refused
// rate_limit_exceeded in its own one-trip admission.
func TestRateLeasedAcrossReplicas(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	const rpm = 240 // a request each 250 ms after the burst; leases of up to 30
	urls, counter := replicas(t, tb.store, 3, limits{RPM: rpm, KeyCacheTTL: 3 * time.Second, Concurrency: 5})
	key := tb.newKey(t, &core.CreateKeyParams{})

	var admitted, refused atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	const hammer = 2 * time.Second
	for _, u := range urls {
		for range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				client := &http.Client{Timeout: 10 * time.Second}
				for time.Since(start) < hammer {
					req, _ := http.NewRequest(http.MethodGet, u+"/v1/models", nil)
					req.Header.Set("Authorization", "Bearer "+key)
					res, err := client.Do(req)
					if err != nil {
						t.Error(err)
						return
					}
					drain(res)
					switch res.StatusCode {
					case http.StatusOK:
						admitted.Add(1)
					case http.StatusTooManyRequests:
						refused.Add(1)
						require.NotEmpty(t, res.Header.Get("Retry-After"))
					default:
						t.Errorf("status %d", res.StatusCode)
						return
					}
				}
			}()
		}
	}
	wg.Wait()
	elapsed := time.Since(start)
	interval := time.Minute / rpm
	allowed := int64(rpm) + int64(elapsed/interval) + 1
	t.Logf("%d admitted, %d refused in %s on 3 replicas; the key's rate allows %d; %d lease trips",
		admitted.Load(), refused.Load(), elapsed.Round(time.Millisecond), allowed, counter.trips.Load())
	require.LessOrEqual(t, admitted.Load(), allowed, "never past the key's rate")
	require.Positive(t, refused.Load(), "the hammer went past the rate")
	// Every replica's lease left unspent at the end is at most 30: the
	// rest of the budget was admitted.
	require.GreaterOrEqual(t, admitted.Load(), int64(rpm-3*30), "leases do not starve the key")
	require.Less(t, counter.trips.Load(), (admitted.Load()+refused.Load())/10, "reads cost far fewer statements than requests")

	// Every read admitted is in the key's budget in PostgreSQL, which
	// billed calls spend in their own admission: its theoretical arrival
	// time moved an emission interval for each (leases not spent are
	// counted too, until they go back).
	k, _, err := tb.store.KeyByHash(context.Background(), core.HashKey(key))
	require.NoError(t, err)
	keyID := k.ID
	var tat time.Time
	require.NoError(t, tb.store.Pool().QueryRow(context.Background(), `SELECT tat FROM rate_limits WHERE key_id = $1`, keyID).Scan(&tat))
	require.False(t, tat.Before(start.Add(time.Duration(admitted.Load())*interval)),
		"tat %s, start %s, %d admitted", tat, start, admitted.Load())
}

// A lease that lapses with requests unspent gives them back with the
// replica's next lease, and leases grow while each is spent before it
// lapses: the key's state in PostgreSQL holds only the requests admitted
// and the one lease still open. At 240 a minute (250 ms a request): four
// reads take leases of 1, 2 and 4 (3 left); after the lease lapses a fifth
// gives those 3 back and takes 2 (1 left). The key's state has moved by 6
// requests, 1.5 s; without the giving back it would be 9, 2.25 s.
func TestRateLeaseGivesBackWhatLapsed(t *testing.T) {
	t.Parallel()
	store := pgstore.New(pgtest.NewPool(t))
	const ttl = 300 * time.Millisecond
	url := benchReplica(t, store, store, limits{RPM: 240, KeyCacheTTL: 3 * time.Second, Concurrency: 5, RateLeaseTTL: ttl})
	org, _, err := store.CreateOrg(context.Background(), &core.CreateOrgParams{Name: "Lease Org"})
	require.NoError(t, err)
	tb := &testBundle{store: store, org: org}
	key := tb.newKey(t, &core.CreateKeyParams{})
	k, _, err := store.KeyByHash(context.Background(), core.HashKey(key))
	require.NoError(t, err)
	read := func() {
		req, _ := http.NewRequest(http.MethodGet, url+"/v1/models", nil)
		req.Header.Set("Authorization", "Bearer "+key)
		res, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		drain(res)
		require.Equal(t, http.StatusOK, res.StatusCode)
	}
	start := time.Now()
	for range 4 {
		read()
	}
	require.Less(t, time.Since(start), ttl, "the four reads ran within one lease's life")
	time.Sleep(ttl + 100*time.Millisecond)
	read()
	var tat time.Time
	require.NoError(t, store.Pool().QueryRow(context.Background(), `SELECT tat FROM rate_limits WHERE key_id = $1`, k.ID).Scan(&tat))
	moved := tat.Sub(start)
	require.GreaterOrEqual(t, moved, 1500*time.Millisecond-50*time.Millisecond, "6 requests' worth, %s", moved)
	require.Less(t, moved, 1500*time.Millisecond+200*time.Millisecond, "the 3 lapsed requests were given back: %s", moved)
}
