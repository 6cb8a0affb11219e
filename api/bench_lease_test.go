package api_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/core/benchtest"
	"github.com/conclavehq/conclave/internal/pgstore"
	"github.com/conclavehq/conclave/internal/pgtest"
)

// unmetered is the store with the rate step doing nothing: an admission
// that only spends a rate admits with no trip. It is the comparison of
// BenchmarkLeasedRead — the read without rate limiting — and nothing else.
type unmetered struct{ *pgstore.Store }

func (u unmetered) Admit(ctx context.Context, p *core.AdmitParams) (*core.AdmitResult, error) {
	if p.SlotLimit == 0 && p.Hold.Amount == 0 && p.IdempotencyKey == "" {
		return &core.AdmitResult{}, nil
	}
	return u.Store.Admit(ctx, p)
}

// BenchmarkLeasedRead measures an authenticated GET /v1/models (key cache
// on, 3s) three ways on one database, one request of each in turn per
// iteration: with the key's rate spent from a leased share (the default,
// limits.rate_lease 32), with a statement per request (rate_lease 1, as
// before leasing), and without rate limiting at all. The key's rate sits
// far above the load, so the lease is 32 requests.
//
// Reported: leased_us, per_request_us and unmetered_us (means), and
// leased_over_unmetered_x (goal ≤ 1.5) beside per_request_over_unmetered_x.
func BenchmarkLeasedRead(b *testing.B) {
	store := pgstore.New(pgtest.NewPool(b))
	base := limits{KeyCacheTTL: 3 * time.Second, RPM: 10_000_000}
	perRequest := base
	perRequest.RateLease = 1
	urls := map[string]string{
		"leased":      benchReplica(b, store, store, base),
		"per_request": benchReplica(b, store, store, perRequest),
		"unmetered":   benchReplica(b, store, unmetered{store}, perRequest), // Admit, not leases: the rate step skipped
	}
	org, _, err := store.CreateOrg(context.Background(), &core.CreateOrgParams{Name: "Lease Org"})
	if err != nil {
		b.Fatal(err)
	}
	key := (&testBundle{store: store, org: org}).newKey(b, &core.CreateKeyParams{})
	order := []string{"leased", "per_request", "unmetered"}
	reqs := map[string]*http.Request{}
	for _, name := range order {
		req, _ := http.NewRequest(http.MethodGet, urls[name]+"/v1/models", nil)
		req.Header.Set("Authorization", "Bearer "+key)
		reqs[name] = req
	}
	get := func(name string) time.Duration {
		start := time.Now()
		res, err := http.DefaultClient.Do(reqs[name])
		if err != nil || res.StatusCode != http.StatusOK {
			b.Fatalf("%s: status %v, err %v", name, res, err)
		}
		drain(res)
		return time.Since(start)
	}
	for _, name := range order { // warm each server's key cache and connections
		for range 64 {
			get(name)
		}
	}
	total := map[string]time.Duration{}
	b.ResetTimer()
	for i := range b.N {
		for j := range order {
			name := order[(i+j)%len(order)]
			total[name] += get(name)
		}
	}
	b.StopTimer()
	us := func(name string) float64 { return float64(total[name]) / float64(b.N) / float64(time.Microsecond) }
	b.ReportMetric(us("leased"), "leased_us")
	b.ReportMetric(us("per_request"), "per_request_us")
	b.ReportMetric(us("unmetered"), "unmetered_us")
	b.ReportMetric(us("leased")/us("unmetered"), "leased_over_unmetered_x")
	b.ReportMetric(us("per_request")/us("unmetered"), "per_request_over_unmetered_x")
}

func TestLeasedReadSmoke(t *testing.T) {
	t.Parallel()
	benchtest.Smoke(t, "BenchmarkLeasedRead")
}
