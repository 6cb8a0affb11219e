package h2c_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"runtime"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/core/benchtest"
	"github.com/conclavehq/conclave/plugins/egress/h2c"
)

// BenchmarkRoundTrip sends one request of a 2 KiB body and reads its 1 KiB
// answer per iteration, over unencrypted HTTP/2 to a net/http server on
// loopback, through this transport and, for comparison in the same run,
// through net/http's own HTTP/2 client. The server runs in the same
// process, so ns/op, B/op and allocs/op count its work too, alike for both.
// Each also reports goroutines_per_waiting_stream: the goroutines the
// client adds for each of 100 streams left waiting on the server (the
// figure the transport exists for; 0 here, about 1 for net/http's).
func BenchmarkRoundTrip(b *testing.B) {
	answer := bytes.Repeat([]byte("a"), 1024)
	body := bytes.Repeat([]byte("q"), 2048)
	var hold sync.WaitGroup
	release := make(chan struct{})
	srv, _ := newServer(b, 1000, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		if r.URL.Path == "/wait" {
			hold.Done()
			<-release
		}
		_, _ = w.Write(answer)
	}))
	std := &http.Transport{Protocols: new(http.Protocols)}
	std.Protocols.SetUnencryptedHTTP2(true)
	for _, tc := range []struct {
		name string
		rt   interface {
			http.RoundTripper
			CloseIdleConnections()
		}
	}{{"transport=h2c", &h2c.Transport{}}, {"transport=net-http", std}} {
		b.Run(tc.name, func(b *testing.B) {
			defer tc.rt.CloseIdleConnections()
			send := func(ctx context.Context, path string) error {
				req, err := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+path, bytes.NewReader(body))
				if err != nil {
					return err
				}
				res, err := tc.rt.RoundTrip(req)
				if err != nil {
					return err
				}
				_, err = io.Copy(io.Discard, res.Body)
				if cerr := res.Body.Close(); err == nil {
					err = cerr
				}
				return err
			}
			require.NoError(b, send(context.Background(), "/")) // the connection, dialled
			b.ReportAllocs()
			for b.Loop() {
				if err := send(context.Background(), "/"); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			const waiting = 100
			n := waiting
			if benchtest.Smoking() {
				n = 10
			}
			before := runtime.NumGoroutine()
			release = make(chan struct{})
			hold.Add(n)
			var wg sync.WaitGroup
			for range n {
				wg.Go(func() { _ = send(context.Background(), "/wait") })
			}
			hold.Wait()
			// n callers and n server handlers wait: the rest is the client's.
			extra := runtime.NumGoroutine() - before - 2*n
			close(release)
			wg.Wait()
			b.ReportMetric(float64(extra)/float64(n), "goroutines_per_waiting_stream")
		})
	}
}

func TestRoundTripSmoke(t *testing.T) {
	t.Parallel()
	benchtest.Smoke(t, "BenchmarkRoundTrip")
}
