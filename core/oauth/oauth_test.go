package oauth_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/core/oauth"
)

func TestCheckRedirectURI(t *testing.T) {
	for uri, want := range map[string]oauth.RedirectKind{
		"https://claude.ai/api/mcp/auth_callback":          oauth.RedirectWeb,
		"https://chatgpt.com/connector/oauth/abc123":       oauth.RedirectWeb,
		"http://localhost:8787/callback":                   oauth.RedirectLoopback,
		"http://127.0.0.1/":                                oauth.RedirectLoopback,
		"http://127.0.0.1:33418/":                          oauth.RedirectLoopback,
		"http://[::1]:9000/cb":                             oauth.RedirectLoopback,
		"cursor://anysphere.cursor-mcp/oauth/callback":     oauth.RedirectPrivateScheme,
		"com.example.app:/oauth2redirect":                  oauth.RedirectPrivateScheme,
		"https://vscode.dev/redirect?state_param=kept-too": oauth.RedirectWeb,
	} {
		got, err := oauth.CheckRedirectURI(uri)
		require.NoError(t, err, uri)
		require.Equal(t, want, got, uri)
	}
	for _, uri := range []string{
		"", "/callback", "callback", "http://example.com/cb", "http://192.168.1.10/cb", "https://x.example/cb#frag",
		"javascript:alert(1)", "JavaScript:alert(1)", "data:text/html,hi", "file:///etc/passwd", "https://user@x.example/cb",
		"https:///nohost", "ws://localhost/cb", "1bad://x",
	} {
		_, err := oauth.CheckRedirectURI(uri)
		require.ErrorIs(t, err, oauth.ErrRedirectURI, uri)
	}
}

func TestMatchRedirect(t *testing.T) {
	reg := []string{"https://vscode.dev/redirect", "http://127.0.0.1/", "http://localhost:8787/callback", "cursor://anysphere.cursor-mcp/oauth/callback"}
	for _, got := range []string{
		"https://vscode.dev/redirect",
		"http://127.0.0.1:33418/", "http://127.0.0.1:50000/", "http://localhost:1234/", "http://[::1]:5/",
		"http://localhost:8787/callback", "http://127.0.0.1:9999/callback",
		"cursor://anysphere.cursor-mcp/oauth/callback",
	} {
		require.True(t, oauth.MatchRedirect(reg, got), got)
	}
	for _, got := range []string{
		"https://vscode.dev/redirect/", "https://vscode.dev/redirect?x=1", "https://evil.example/redirect",
		"http://127.0.0.1:33418/other", "http://evil.example:33418/", "cursor://anysphere.cursor-mcp/oauth/callback2",
		"https://VSCODE.dev/redirect",
	} {
		require.False(t, oauth.MatchRedirect(reg, got), got)
	}
}

// The registration bodies and documents of the real clients (OAUTH.md)
// are accepted; what no public client may say is refused.
func TestCheckMetadata(t *testing.T) {
	accept := map[string]string{
		"Cursor's registration":   `{"client_name":"Cursor","redirect_uris":["cursor://anysphere.cursor-mcp/oauth/callback","https://www.cursor.com/agents/mcp/oauth/callback","http://localhost:8787/callback"],"grant_types":["authorization_code","refresh_token"],"response_types":["code"],"token_endpoint_auth_method":"none"}`,
		"VS Code's registration":  `{"client_name":"Visual Studio Code","redirect_uris":["https://vscode.dev/redirect","https://insiders.vscode.dev/redirect","http://127.0.0.1/","http://127.0.0.1:33418/"],"grant_types":["authorization_code","refresh_token"],"token_endpoint_auth_method":"none"}`,
		"ChatGPT's document":      `{"client_id":"https://chatgpt.com/oauth/client.json","client_name":"ChatGPT","redirect_uris":["https://chatgpt.com/connector/oauth/abc"],"token_endpoint_auth_method":["none","private_key_jwt"]}`,
		"only authorization_code": `{"redirect_uris":["http://localhost:3000/callback"],"grant_types":["authorization_code"]}`,
	}
	for name, body := range accept {
		var m oauth.ClientMetadata
		require.NoError(t, json.Unmarshal([]byte(body), &m), name)
		c, err := oauth.CheckMetadata(&m)
		require.NoError(t, err, name)
		require.Equal(t, []string{"none"}, []string(c.AuthMethods), name)
	}
	var cursor oauth.ClientMetadata
	require.NoError(t, json.Unmarshal([]byte(accept["Cursor's registration"]), &cursor))
	c, _ := oauth.CheckMetadata(&cursor)
	require.False(t, c.Native, "an https redirect makes it a web client")
	var native oauth.ClientMetadata
	require.NoError(t, json.Unmarshal([]byte(accept["only authorization_code"]), &native))
	c, _ = oauth.CheckMetadata(&native)
	require.True(t, c.Native, "loopback only: the consent page warns")

	refuse := map[string]error{
		`{"client_name":"x"}`: oauth.ErrClientMetadata,
		`{"redirect_uris":["https://a.example/cb"],"token_endpoint_auth_method":"client_secret_basic"}`: oauth.ErrClientMetadata,
		`{"redirect_uris":["https://a.example/cb"],"grant_types":["client_credentials"]}`:               oauth.ErrClientMetadata,
		`{"redirect_uris":["https://a.example/cb"],"grant_types":["authorization_code","implicit"]}`:    oauth.ErrClientMetadata,
		`{"redirect_uris":["https://a.example/cb"],"response_types":["token"]}`:                         oauth.ErrClientMetadata,
		`{"redirect_uris":["https://a.example/cb","http://evil.example/cb"]}`:                           oauth.ErrRedirectURI,
		`{"redirect_uris":["javascript:alert(1)"]}`:                                                     oauth.ErrRedirectURI,
		`{"redirect_uris":["https://a.example/cb"],"client_name":"bad\nname"}`:                          oauth.ErrClientMetadata,
	}
	for body, want := range refuse {
		var m oauth.ClientMetadata
		require.NoError(t, json.Unmarshal([]byte(body), &m), body)
		_, err := oauth.CheckMetadata(&m)
		require.True(t, errors.Is(err, want), "%s: %v", body, err)
	}
	var m oauth.ClientMetadata
	require.Error(t, json.Unmarshal([]byte(`{"redirect_uris":["https://a.example/cb"],"token_endpoint_auth_method":7}`), &m))
}
