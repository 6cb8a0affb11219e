package egress_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/plugins/egress"
	"github.com/conclavehq/conclave/plugins/egress/creds"
)

// echoAdapter is the smallest adapter: it posts the question and answers
// with the body.
type echoAdapter struct{}

func (echoAdapter) Describe(context.Context) (*core.AdapterInfo, error) {
	return &core.AdapterInfo{Name: "echo", Version: "1", Auth: core.AuthBearer}, nil
}

func (echoAdapter) BuildRequest(_ context.Context, req *core.SeatRequest) (*core.HTTPRequest, error) {
	return &core.HTTPRequest{Method: http.MethodPost, Path: "/chat", Body: []byte(req.Messages[0].Content)}, nil
}

func (echoAdapter) ParseResponse(_ context.Context, res *core.HTTPResponse) (*core.SeatAnswer, error) {
	return &core.SeatAnswer{Text: string(res.Body), Finish: core.FinishStop}, nil
}

// ExampleNew wires egress the way a deployment of simulated engines does:
// the engine's endpoint is the simulated provider's loopback URL, which
// also makes up the allow-list, and every API-key engine gets one static
// key.
func ExampleNew() {
	provider := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q, _ := io.ReadAll(r.Body)
		fmt.Fprintf(w, "%s? asked with key %t", q, r.Header.Get("Authorization") == "Bearer sim-key")
	}))
	defer provider.Close()

	engine := &core.Engine{ID: "sim/atlas", Adapter: "echo", Endpoint: provider.URL + "/v1"}
	eg, err := egress.New(egress.Config{},
		creds.ServiceCredentials{APIKeys: creds.StaticCredentials{Key: "sim-key"}},
		[]*core.Engine{engine})
	if err != nil {
		panic(err)
	}
	defer eg.CloseIdleConnections()

	ans, err := eg.Call(context.Background(), &core.EgressCall{
		Engine: engine, Adapter: echoAdapter{},
		Request: &core.SeatRequest{Messages: []core.Message{{Role: core.RoleUser, Content: "ready"}}},
	})
	if err != nil {
		panic(err)
	}
	fmt.Println(ans.Text)
	// Output: ready? asked with key true
}
