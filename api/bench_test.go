package api_test

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

// BenchmarkAuthenticatedRequest measures one authenticated GET /v1/models on
// a loopback server with a real database, with the key-lookup cache on (the
// default, 3s) beside the same request with it off. The ratio is the cost of
// the per-request key lookup. Every request also spends one of the key's
// rate, from this replica's leased share of it (BenchmarkLeasedRead); the
// rate sits far above the load.
func BenchmarkAuthenticatedRequest(b *testing.B) {
	for _, c := range []struct {
		name string
		ttl  time.Duration
	}{{"cache=3s", 3 * time.Second}, {"cache=off", 0}} {
		b.Run(c.name, func(b *testing.B) {
			tb := setupBench(b, limits{KeyCacheTTL: c.ttl, RPM: 10_000_000})
			req, _ := http.NewRequest("GET", tb.srv.URL+"/v1/models", nil)
			req.Header.Set("Authorization", "Bearer "+tb.key)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				res, err := http.DefaultClient.Do(req)
				if err != nil || res.StatusCode != 200 {
					b.Fatalf("status %v, err %v", res, err)
				}
				drain(res)
			}
		})
	}
}

// BenchmarkEstimate measures a whole free estimate (admission, policy twice,
// body parsing, rate and concurrency rails, classification) beside an unauthenticated /healthz on the
// same server, the floor of any request.
func BenchmarkEstimate(b *testing.B) {
	// The estimate counts against the key's rate and the organisation's
	// slots, as a billed call does; the limits sit far above the load.
	tb := setupBench(b, limits{KeyCacheTTL: 3 * time.Second, RPM: 10_000_000, Concurrency: 1_000})
	body := `{"model":"conclave-standard","messages":[{"role":"user","content":"Should we split our monolith into services this year? Compare the trade-offs."}]}`
	b.Run("estimate", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			req, _ := http.NewRequest("POST", tb.srv.URL+"/v1/estimate", strings.NewReader(body))
			req.Header.Set("Authorization", "Bearer "+tb.key)
			req.Header.Set("Content-Type", "application/json")
			res, err := http.DefaultClient.Do(req)
			if err != nil || res.StatusCode != 200 {
				b.Fatalf("status %v, err %v", res, err)
			}
			drain(res)
		}
	})
	b.Run("healthz", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			res, err := http.Get(tb.srv.URL + "/healthz")
			if err != nil || res.StatusCode != 200 {
				b.Fatalf("status %v, err %v", res, err)
			}
			drain(res)
		}
	})
}

func drain(res *http.Response) {
	buf := make([]byte, 4096)
	for {
		if _, err := res.Body.Read(buf); err != nil {
			break
		}
	}
	res.Body.Close()
}
