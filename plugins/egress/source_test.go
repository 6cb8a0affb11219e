package egress_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/plugins/egress"
)

// Every answer says where its credential came from, failures included; an
// adapter cannot claim a source; an unauthenticated call has none.
func TestAnswerCarriesTheCredentialSource(t *testing.T) {
	t.Parallel()
	ok := newProvider(t, reply(http.StatusOK, "fine"))
	refused := newProvider(t, reply(http.StatusBadRequest, "no"))
	okEng, refusedEng := ok.engine("openai/gpt"), refused.engine("openai/gpt-refused")

	var orgs []string
	byOrg := credFunc(func(_ context.Context, req *core.CredentialRequest) (*core.Credential, error) {
		orgs = append(orgs, req.OrgID)
		if req.OrgID != "" {
			return &core.Credential{Scheme: req.Scheme, Secret: "org-key-0123456789", Source: core.SourceBYOK("openai")}, nil
		}
		return &core.Credential{Scheme: req.Scheme, Secret: "svc-key-0123456789", Source: core.SourceService}, nil
	})
	b := setup(t, egress.Config{MaxAttempts: 1}, byOrg, okEng, refusedEng)
	ctx := context.Background()

	ans, err := b.eg.Call(ctx, &core.EgressCall{Engine: okEng, Adapter: &testAdapter{auth: core.AuthBearer}, Request: seatRequest(), OrgID: "org_1"})
	require.NoError(t, err)
	require.Nil(t, ans.Error)
	require.Equal(t, "byok:openai", ans.Source)
	require.Equal(t, "Bearer org-key-0123456789", ok.requests()[0].Header.Get("Authorization"))

	ans, err = b.eg.Call(ctx, &core.EgressCall{Engine: okEng, Adapter: &testAdapter{auth: core.AuthBearer}, Request: seatRequest()})
	require.NoError(t, err)
	require.Equal(t, core.SourceService, ans.Source)
	require.Equal(t, "Bearer svc-key-0123456789", ok.requests()[1].Header.Get("Authorization"))

	ans, err = b.eg.Call(ctx, &core.EgressCall{Engine: refusedEng, Adapter: &testAdapter{auth: core.AuthBearer}, Request: seatRequest(), OrgID: "org_1"})
	require.NoError(t, err)
	requireClass(t, ans, core.ErrorBadRequest)
	require.Equal(t, "byok:openai", ans.Source, "a failed call still says which credential it carried")
	require.Equal(t, []string{"org_1", "", "org_1"}, orgs, "the call's OrgID reaches the credential lookup")

	claims := &testAdapter{auth: core.AuthNone, parse: func(*core.HTTPResponse) (*core.SeatAnswer, error) {
		return &core.SeatAnswer{Text: "x", Finish: core.FinishStop, Source: "byok:forged"}, nil
	}}
	ans, err = b.eg.Call(ctx, &core.EgressCall{Engine: okEng, Adapter: claims, Request: seatRequest(), OrgID: "org_1"})
	require.NoError(t, err)
	require.Empty(t, ans.Source, "an adapter's source is discarded; a call without a credential has none")
}
