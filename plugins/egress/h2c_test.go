package egress_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/plugins/egress"
)

// With H2C, calls to an http:// endpoint are unencrypted HTTP/2 streams;
// without it they are HTTP/1.1.
func TestH2CSpeaksHTTP2ToPlainHTTPEndpoints(t *testing.T) {
	t.Parallel()
	var (
		mu     sync.Mutex
		protos []string
	)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		mu.Lock()
		protos = append(protos, r.Proto)
		mu.Unlock()
		_, _ = io.WriteString(w, "fine")
	}))
	srv.Config.Protocols = new(http.Protocols)
	srv.Config.Protocols.SetHTTP1(true)
	srv.Config.Protocols.SetUnencryptedHTTP2(true)
	srv.Start()
	t.Cleanup(srv.Close)
	eng := &core.Engine{ID: "plain/model", Endpoint: srv.URL + "/api/", Model: "test-model"}

	for _, tc := range []struct {
		h2c   bool
		proto string
	}{{false, "HTTP/1.1"}, {true, "HTTP/2.0"}} {
		mu.Lock()
		protos = nil
		mu.Unlock()
		b := setup(t, egress.Config{H2C: tc.h2c}, static, eng)
		var wg sync.WaitGroup
		answers := make([]*core.SeatAnswer, 8)
		errs := make([]error, 8)
		for i := range answers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				answers[i], errs[i] = b.call(context.Background(), eng, &testAdapter{auth: core.AuthBearer})
			}()
		}
		wg.Wait()
		for i, ans := range answers {
			require.NoError(t, errs[i])
			require.Nil(t, ans.Error)
			require.Equal(t, "fine", ans.Text)
		}
		b.eg.CloseIdleConnections()
		mu.Lock()
		require.Len(t, protos, 8)
		for _, p := range protos {
			require.Equal(t, tc.proto, p, "h2c %v", tc.h2c)
		}
		mu.Unlock()
	}
}
