package core_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/core"
)

func TestProviderCredentialShape(t *testing.T) {
	t.Parallel()
	for _, p := range core.BYOKProviders {
		require.True(t, core.ValidBYOKProvider(p), p)
	}
	for _, p := range []string{"", "cohere", "OpenAI", "gemini", "bedrock"} {
		require.False(t, core.ValidBYOKProvider(p), p)
	}

	key := &core.ProviderCredential{OrgID: "org_a", Provider: core.ProviderMistral,
		Sealed: []byte(strings.Repeat("s", core.MinSealedLen)), KeyID: "0123456789abcdef", Hint: "WXYZ"}
	require.NoError(t, key.Validate())
	role := &core.ProviderCredential{OrgID: "org_a", Provider: core.ProviderAWS,
		RoleARN: "arn:aws:iam::111122223333:role/acme", ExternalID: "acme-secret-ext", Hint: "-ext"}
	require.NoError(t, role.Validate())
	var none *core.ProviderCredential
	require.Error(t, none.Validate())

	// Printing a credential shows neither the sealed key nor the external id.
	printed := fmt.Sprintf("%v %+v %#v %s %v", key, key, role, role, none)
	require.NotContains(t, printed, "sss")
	require.NotContains(t, printed, "acme-secret")
	require.Contains(t, printed, "ProviderCredential(org_a, mistral, …WXYZ)")
}
