package egress_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/plugins/egress"
	"github.com/conclavehq/conclave/plugins/egress/creds"
	"github.com/conclavehq/conclave/plugins/egress/egresstest"
)

// requireNoForgedHeaders checks that none of the adapter's auth or
// transport headers reached the provider.
func requireNoForgedHeaders(t *testing.T, h http.Header) {
	t.Helper()
	for k, vs := range h {
		for _, v := range vs {
			require.NotContains(t, v, "forged", "header %s came from the adapter", k)
		}
	}
	require.Empty(t, h.Get("Proxy-Authorization"))
	require.Empty(t, h.Get("Api-Key"))
	require.Empty(t, h.Get("Cookie"))
	require.Equal(t, "kept", h.Get("X-Custom"), "ordinary adapter headers pass")
	require.Equal(t, "application/json", h.Get("Content-Type"))
}

func TestSchemesInjectTheCredentialAndStripTheAdapters(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		scheme core.AuthScheme
		header string // where the key must be
		value  string
	}{
		{core.AuthBearer, "Authorization", "Bearer " + secret},
		{core.AuthXAPIKey, "X-Api-Key", secret},
		{core.AuthGoogleAPIKey, "X-Goog-Api-Key", secret},
		{core.AuthNone, "", ""},
	} {
		t.Run(string(tc.scheme), func(t *testing.T) {
			t.Parallel()
			p := newProvider(t, reply(http.StatusOK, "fine"))
			eng := p.engine("test/" + string(tc.scheme))
			cc := &countingCreds{Credentials: creds.StaticCredentials{Key: secret}}
			b := setup(t, egress.Config{}, cc, eng)
			a := &testAdapter{auth: tc.scheme}

			ans := b.mustAnswer(t, eng, a)
			require.Nil(t, ans.Error)
			require.Equal(t, "fine", ans.Text)

			reqs := p.requests()
			require.Len(t, reqs, 1)
			got := reqs[0]
			require.Equal(t, http.MethodPost, got.Method)
			require.Equal(t, "/api/v1/chat", got.Path, "the path joins the endpoint's")
			require.Equal(t, "x=1", got.Query)
			require.Equal(t, strings.TrimPrefix(p.URL, "http://"), got.Host)
			var sent core.SeatRequest
			require.NoError(t, json.Unmarshal(got.Body, &sent))
			require.Equal(t, *seatRequest(), sent)
			requireNoForgedHeaders(t, got.Header)

			for _, h := range []string{"Authorization", "X-Api-Key", "X-Goog-Api-Key"} {
				if h == tc.header {
					require.Equal(t, []string{tc.value}, got.Header.Values(h))
				} else {
					require.Empty(t, got.Header.Values(h), h)
				}
			}
			for k := range got.Header {
				require.False(t, strings.HasPrefix(strings.ToLower(k), "x-amz-"), k)
			}
			if tc.scheme == core.AuthNone {
				require.Zero(t, cc.n.Load(), "no credential is asked for scheme none")
			} else {
				require.EqualValues(t, 1, cc.n.Load())
			}
		})
	}
}

// awsCred is a fixed short-lived AWS credential.
var awsCred = core.AWSCredential{
	AccessKeyID:     "ASIATESTACCESSKEY001",
	SecretAccessKey: "aws-secret-key-abcdefghij0123456789",
	SessionToken:    "FQoGZXIvYXdzEXAMPLESESSIONTOKEN0123456789",
	Region:          "us-west-2",
}

func fixedAWS() core.Credentials {
	return credFunc(func(_ context.Context, req *core.CredentialRequest) (*core.Credential, error) {
		if req.Scheme != core.AuthAWSSigV4 {
			return nil, creds.ErrNoCredential
		}
		c := awsCred
		return &core.Credential{Scheme: core.AuthAWSSigV4, AWS: &c, Source: "service"}, nil
	})
}

// bedrock is a provider stand-in that answers 200 "verified" only to
// requests signed for region with cred (or, with cred nil, with whatever
// sts issued).
func bedrock(t *testing.T, region string, cred *aws.Credentials, sts *egresstest.STS) *provider {
	return newProvider(t, func(w http.ResponseWriter, r *http.Request, body []byte, _ int) {
		c := cred
		if c == nil {
			akid, _, _ := strings.Cut(strings.TrimPrefix(r.Header.Get("Authorization"), "AWS4-HMAC-SHA256 Credential="), "/")
			issued, ok := sts.Issued(akid)
			if !ok {
				http.Error(w, "unknown access key", http.StatusForbidden)
				return
			}
			c = &issued
		}
		if err := egresstest.VerifySigV4(r, body, *c, "bedrock", region); err != nil {
			http.Error(w, err.Error(), http.StatusForbidden)
			return
		}
		_, _ = w.Write([]byte("verified"))
	})
}

func converseAdapter() *testAdapter {
	a := &testAdapter{auth: core.AuthAWSSigV4}
	a.build = func(req *core.SeatRequest) (*core.HTTPRequest, error) {
		body, _ := json.Marshal(req)
		h := map[string]string{}
		for k, v := range forgedHeaders {
			h[k] = v
		}
		return &core.HTTPRequest{Method: http.MethodPost, Path: "/model/anthropic.claude-3-5-sonnet-20240620-v1%3A0/converse", Header: h, Body: body}, nil
	}
	return a
}

func TestSigV4SignsTheFinalBytes(t *testing.T) {
	t.Parallel()
	want := aws.Credentials{AccessKeyID: awsCred.AccessKeyID, SecretAccessKey: awsCred.SecretAccessKey, SessionToken: awsCred.SessionToken}

	t.Run("engine region", func(t *testing.T) {
		t.Parallel()
		p := bedrock(t, "eu-central-1", &want, nil)
		eng := p.engine("bedrock/claude")
		eng.AWSRegion = "eu-central-1"
		b := setup(t, egress.Config{}, fixedAWS(), eng)
		a := converseAdapter()

		ans := b.mustAnswer(t, eng, a)
		require.Nil(t, ans.Error, "%+v", ans.Error)
		require.Equal(t, "verified", ans.Text)

		got := p.requests()[0]
		require.Equal(t, awsCred.SessionToken, got.Header.Get("X-Amz-Security-Token"))
		require.NotEqual(t, forgedHeaders["X-Amz-Date"], got.Header.Get("X-Amz-Date"))
		require.Empty(t, got.Header.Get("X-Amz-Content-Sha256"), "the adapter's X-Amz-* headers are gone")
		auth := got.Header.Get("Authorization")
		require.Contains(t, auth, "Credential="+awsCred.AccessKeyID+"/")
		require.Contains(t, auth, "/eu-central-1/bedrock/aws4_request")
		for _, h := range []string{"content-type", "x-custom", "x-amz-date", "x-amz-security-token", "host", "content-length"} {
			require.Contains(t, auth, h, "header %s is signed", h)
		}
		require.Equal(t, "kept", got.Header.Get("X-Custom"))
	})

	t.Run("credential region when the engine names none", func(t *testing.T) {
		t.Parallel()
		p := bedrock(t, awsCred.Region, &want, nil)
		eng := p.engine("bedrock/claude")
		b := setup(t, egress.Config{}, fixedAWS(), eng)
		ans := b.mustAnswer(t, eng, converseAdapter())
		require.Nil(t, ans.Error, "%+v", ans.Error)
	})

	t.Run("no region at all", func(t *testing.T) {
		t.Parallel()
		p := bedrock(t, "", &want, nil)
		eng := p.engine("bedrock/claude")
		noRegion := credFunc(func(context.Context, *core.CredentialRequest) (*core.Credential, error) {
			c := awsCred
			c.Region = ""
			return &core.Credential{Scheme: core.AuthAWSSigV4, AWS: &c, Source: "service"}, nil
		})
		b := setup(t, egress.Config{}, noRegion, eng)
		_, err := b.call(context.Background(), eng, converseAdapter())
		require.ErrorContains(t, err, "aws_region")
		require.Empty(t, p.requests())
	})
}

func TestSigV4AfterAssumeRole(t *testing.T) {
	t.Parallel()
	base := aws.Credentials{AccessKeyID: "AKIASERVICEIDENTITY1", SecretAccessKey: "service-base-secret-0123456789abcdef"}
	sts := egresstest.NewSTS(egresstest.STSConfig{Base: base})
	t.Cleanup(sts.Close)
	stsClient := &http.Client{Transport: &http.Transport{}}
	t.Cleanup(stsClient.CloseIdleConnections)
	role, err := creds.NewAWSRoleCredentials(creds.AWSRoleConfig{
		Base:       credentials.NewStaticCredentialsProvider(base.AccessKeyID, base.SecretAccessKey, ""),
		HTTPClient: stsClient,
	})
	require.NoError(t, err)

	p := bedrock(t, "eu-west-3", nil, sts)
	eng := p.engine("bedrock/claude")
	eng.AWSRegion, eng.STSEndpoint = "eu-west-3", sts.URL
	eng.AWSRoleARN, eng.AWSExternalID = "arn:aws:iam::123456789012:role/conclave-bedrock", "ext-42"
	b := setup(t, egress.Config{}, creds.ServiceCredentials{AWS: role}, eng)
	a := converseAdapter()

	for range 3 {
		ans := b.mustAnswer(t, eng, a)
		require.Nil(t, ans.Error, "%+v", ans.Error)
		require.Equal(t, "verified", ans.Text)
	}
	calls := sts.Calls()
	require.Len(t, calls, 1, "the assumed role is cached across calls")
	require.Equal(t, eng.AWSRoleARN, calls[0].RoleARN)
	require.Equal(t, "ext-42", calls[0].ExternalID)
	for _, r := range p.requests() {
		require.Equal(t, calls[0].Issued.SessionToken, r.Header.Get("X-Amz-Security-Token"))
	}
	for _, s := range []string{calls[0].Issued.SecretAccessKey, calls[0].Issued.SessionToken, base.SecretAccessKey} {
		require.NotContains(t, a.inputs(t), s)
		require.NotContains(t, b.logs.String(), s)
	}
}

// echo is a provider that reflects every request header into its response
// headers and body, and sets cookies and auth headers of its own, as a
// debugging proxy or a careless provider might.
func echo(w http.ResponseWriter, r *http.Request, _ []byte, _ int) {
	for k, vs := range r.Header {
		for _, v := range vs {
			w.Header().Add("X-Echo-"+k, v)
		}
	}
	w.Header().Set("Authorization", r.Header.Get("Authorization"))
	w.Header().Set("X-Api-Key", r.Header.Get("X-Api-Key"))
	w.Header().Set("X-Amz-Security-Token", r.Header.Get("X-Amz-Security-Token"))
	w.Header().Add("Set-Cookie", "session="+r.Header.Get("X-Api-Key"))
	w.Header().Set("X-Request-Id", "req_123")
	w.WriteHeader(http.StatusUnauthorized)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": "invalid credential", "headers": r.Header})
}

func TestCredentialNeverReachesTheAdapterLogsOrErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		scheme  core.AuthScheme
		creds   core.Credentials
		secrets []string
	}{
		{core.AuthBearer, creds.StaticCredentials{Key: secret}, []string{secret}},
		{core.AuthXAPIKey, creds.StaticCredentials{Key: secret}, []string{secret}},
		{core.AuthGoogleAPIKey, creds.StaticCredentials{Key: secret}, []string{secret}},
		{core.AuthAWSSigV4, fixedAWS(), []string{awsCred.SecretAccessKey, awsCred.SessionToken, awsCred.AccessKeyID}},
	} {
		t.Run(string(tc.scheme), func(t *testing.T) {
			t.Parallel()
			p := newProvider(t, echo)
			eng := p.engine("test/echo")
			b := setup(t, egress.Config{}, tc.creds, eng)
			a := &testAdapter{auth: tc.scheme}
			var parsed *core.HTTPResponse
			a.parse = func(res *core.HTTPResponse) (*core.SeatAnswer, error) {
				parsed = res
				// A hostile adapter would copy what it saw into its answer.
				return &core.SeatAnswer{Text: string(res.Body), Error: &core.ProviderError{Class: core.ErrorAuthRefused, Message: res.Header["X-Echo-Authorization"]}}, nil
			}

			ans := b.mustAnswer(t, eng, a)
			requireClass(t, ans, core.ErrorAuthRefused)
			require.Equal(t, http.StatusUnauthorized, ans.Error.Status, "egress fills in the status")
			answer, err := json.Marshal(ans)
			require.NoError(t, err)

			for _, s := range tc.secrets {
				require.NotContains(t, a.inputs(t), s, "the adapter saw a secret")
				require.NotContains(t, string(answer), s)
				require.NotContains(t, b.logs.String(), s, "a secret was logged")
			}
			require.Contains(t, b.logs.String(), `"msg":"egress attempt"`, "debug logging was on")
			require.Contains(t, string(parsed.Body), "[redacted]", "the echoed secret was scrubbed, not absent")
			for _, h := range []string{"Authorization", "X-Api-Key", "X-Amz-Security-Token", "Set-Cookie"} {
				require.NotContains(t, parsed.Header, h)
			}
			require.Equal(t, "req_123", parsed.Header["X-Request-Id"], "other headers pass, canonically named")
		})
	}
}

func TestCredentialFailuresAreErrorsWithoutSecrets(t *testing.T) {
	t.Parallel()
	p := newProvider(t, reply(http.StatusOK, "fine"))
	eng := p.engine("openai/gpt")
	eng.Credential = "env:CONCLAVE_TEST_KEY"

	b := setup(t, egress.Config{}, creds.EnvCredentials{LookupEnv: func(string) (string, bool) { return "", false }}, eng)
	ans, err := b.call(context.Background(), eng, &testAdapter{auth: core.AuthBearer})
	require.Nil(t, ans)
	require.ErrorIs(t, err, creds.ErrUnset)
	require.ErrorContains(t, err, "CONCLAVE_TEST_KEY")
	require.ErrorContains(t, err, "openai/gpt")
	require.Empty(t, p.requests(), "nothing is sent without a credential")

	wrong := credFunc(func(context.Context, *core.CredentialRequest) (*core.Credential, error) {
		return &core.Credential{Scheme: core.AuthXAPIKey, Secret: secret, Source: "byok"}, nil
	})
	b = setup(t, egress.Config{}, wrong, eng)
	_, err = b.call(context.Background(), eng, &testAdapter{auth: core.AuthBearer})
	require.ErrorContains(t, err, "scheme")
	require.NotContains(t, err.Error(), secret)

	broken := errors.New("byok store down")
	b = setup(t, egress.Config{}, credFunc(func(context.Context, *core.CredentialRequest) (*core.Credential, error) { return nil, broken }), eng)
	_, err = b.call(context.Background(), eng, &testAdapter{auth: core.AuthBearer})
	require.ErrorIs(t, err, broken)
	require.Equal(t, 1.0, b.metric(t, "conclave_egress_calls_total", map[string]string{"engine": "openai/gpt", "outcome": "error"}))
}
