package sim

import (
	"bytes"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/service/sts"
	"github.com/stretchr/testify/require"
)

func TestAPIKeys(t *testing.T) {
	t.Parallel()
	open := setup(t, Config{TimeScale: 0.01})
	locked := setup(t, Config{TimeScale: 0.01, APIKey: "sk-right"})
	t.Run("formats", func(t *testing.T) {
		for _, f := range []string{"openai", "anthropic", "gemini"} {
			t.Run(f, func(t *testing.T) {
				t.Parallel()
				q := ask{format: f, model: "atlas", user: "What is 1 + 1?"}

				q.key = "-"
				require.Equal(t, http.StatusUnauthorized, open.do(t, q).status, "a missing key is refused")
				require.Equal(t, http.StatusUnauthorized, locked.do(t, q).status)

				q.key = "anything"
				require.Equal(t, http.StatusOK, open.do(t, q).status, "any key is accepted when APIKey is unset")
				a := locked.do(t, q)
				require.Equal(t, http.StatusUnauthorized, a.status, "a wrong key is refused")
				require.True(t, a.valid)
				require.NotEmpty(t, a.errType)

				q.key = "sk-right"
				require.Equal(t, http.StatusOK, locked.do(t, q).status)
			})
		}
	})
	require.Equal(t, 6, locked.srv.Stats().Count("atlas", OutcomeAuthRefused))

	// Gemini also takes the key as a query parameter.
	body := `{"contents":[{"parts":[{"text":"What is 1 + 1?"}]}]}`
	res, err := locked.client.Post(locked.srv.Endpoint("gemini")+"/v1beta/models/gemini-pro:generateContent?key=sk-right", "application/json", strings.NewReader(body))
	require.NoError(t, err)
	require.NoError(t, res.Body.Close())
	require.Equal(t, http.StatusOK, res.StatusCode)
}

func TestSTSWithTheAWSClient(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{TimeScale: 0.01})
	client := sts.New(sts.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(b.srv.Endpoint("sts")),
		Credentials:  aws.AnonymousCredentials{},
		HTTPClient:   b.client,
	})

	_, err := client.AssumeRole(t.Context(), &sts.AssumeRoleInput{
		RoleArn: aws.String("arn:aws:iam::123456789012:role/bedrock-ext"), RoleSessionName: aws.String("conclave"),
	})
	require.ErrorContains(t, err, "AccessDenied", "a -ext role demands an ExternalId")

	out, err := client.AssumeRole(t.Context(), &sts.AssumeRoleInput{
		RoleArn: aws.String("arn:aws:iam::123456789012:role/bedrock-ext"), RoleSessionName: aws.String("conclave"),
		ExternalId: aws.String("org-42"), DurationSeconds: aws.Int32(900),
	})
	require.NoError(t, err)
	c := out.Credentials
	require.True(t, strings.HasPrefix(*c.AccessKeyId, "ASIA"))
	require.NotEmpty(t, *c.SecretAccessKey)
	require.NotEmpty(t, *c.SessionToken)
	require.WithinDuration(t, time.Now().Add(15*time.Minute), *c.Expiration, time.Minute)
	require.Equal(t, "arn:aws:sts::123456789012:assumed-role/bedrock-ext/conclave", *out.AssumedRoleUser.Arn)
	require.Equal(t, 1, b.srv.Stats().AssumeRole)

	// Credentials from the STS sign a Bedrock call that the server accepts.
	creds := aws.Credentials{AccessKeyID: *c.AccessKeyId, SecretAccessKey: *c.SecretAccessKey, SessionToken: *c.SessionToken}
	raw := []byte(`{"messages":[{"role":"user","content":[{"text":"What is 9 * 9?"}]}]}`)
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, b.srv.Endpoint("bedrock")+"/model/atlas/converse", bytes.NewReader(raw))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	b.sign(t, req, raw, creds)
	a := b.doRaw(t, req)
	require.Equal(t, http.StatusOK, a.status, "%s", a.body)
	require.Equal(t, "81", conclusionKey(a.text))
}

func TestSTSValidation(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{})
	post := func(form url.Values) (int, string) {
		res, err := b.client.PostForm(b.srv.Endpoint("sts"), form)
		require.NoError(t, err)
		defer res.Body.Close()
		raw, err := io.ReadAll(res.Body)
		require.NoError(t, err)
		return res.StatusCode, string(raw)
	}
	base := func() url.Values {
		return url.Values{"Action": {"AssumeRole"}, "Version": {"2011-06-15"}, "RoleArn": {"arn:aws:iam::123456789012:role/seat"}, "RoleSessionName": {"s1"}}
	}
	status, body := post(base())
	require.Equal(t, 200, status, body)
	require.Contains(t, body, "<AssumeRoleResponse xmlns=\"https://sts.amazonaws.com/doc/2011-06-15/\">")
	for name, mutate := range map[string]func(url.Values){
		"InvalidAction":    func(v url.Values) { v.Set("Action", "GetCallerIdentity") },
		"MissingParameter": func(v url.Values) { v.Del("RoleArn") },
		"ValidationError":  func(v url.Values) { v.Set("RoleArn", "arn:aws:iam::42:role/x") },
		"DurationSeconds":  func(v url.Values) { v.Set("DurationSeconds", "60") },
		"RoleSessionName":  func(v url.Values) { v.Set("RoleSessionName", "no spaces allowed") },
	} {
		v := base()
		mutate(v)
		status, body := post(v)
		require.Equal(t, 400, status, "%s: %s", name, body)
		require.Contains(t, body, "<ErrorResponse", name)
	}
	v := base()
	v.Set("RoleArn", "arn:aws:iam::123456789012:role/partner-ext")
	status, body = post(v)
	require.Equal(t, 403, status, body)
	require.Contains(t, body, "<Code>AccessDenied</Code>")
	v.Set("ExternalId", "ext-1")
	status, body = post(v)
	require.Equal(t, 200, status, body)
}

func TestBedrockSignatureIsVerified(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{TimeScale: 0.01})
	creds := b.awsCredentials(t)
	raw := []byte(`{"messages":[{"role":"user","content":[{"text":"What is 2 + 3?"}]}]}`)
	newReq := func(body []byte) *http.Request {
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, b.srv.Endpoint("bedrock")+"/model/atlas/converse", bytes.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		return req
	}

	ok := newReq(raw)
	b.sign(t, ok, raw, creds)
	require.Equal(t, http.StatusOK, b.doRaw(t, ok).status)

	cases := map[string]struct {
		req     func() *http.Request
		errType string
	}{
		"unsigned": {func() *http.Request { return newReq(raw) }, "MissingAuthenticationTokenException"},
		"tampered signature": {func() *http.Request {
			r := newReq(raw)
			b.sign(t, r, raw, creds)
			h := r.Header.Get("Authorization")
			last := h[len(h)-1]
			flip := byte('0')
			if last == '0' {
				flip = '1'
			}
			r.Header.Set("Authorization", h[:len(h)-1]+string(flip))
			return r
		}, "InvalidSignatureException"},
		"body changed after signing": {func() *http.Request {
			changed := bytes.Replace(raw, []byte("2 + 3"), []byte("2 + 4"), 1)
			r := newReq(changed)
			b.sign(t, r, raw, creds)
			return r
		}, "InvalidSignatureException"},
		"wrong secret": {func() *http.Request {
			r := newReq(raw)
			wrong := creds
			wrong.SecretAccessKey = "not-the-secret"
			b.sign(t, r, raw, wrong)
			return r
		}, "InvalidSignatureException"},
		"unknown access key": {func() *http.Request {
			r := newReq(raw)
			unknown := creds
			unknown.AccessKeyID = "ASIAUNKNOWNUNKNOWN00"
			b.sign(t, r, raw, unknown)
			return r
		}, "UnrecognizedClientException"},
		"wrong service": {func() *http.Request {
			r := newReq(raw)
			sum := sha256Hex(raw)
			require.NoError(t, v4.NewSigner().SignHTTP(r.Context(), creds, r, sum, "s3", "us-east-1", time.Now()))
			return r
		}, "InvalidSignatureException"},
		"stale date": {func() *http.Request {
			r := newReq(raw)
			require.NoError(t, v4.NewSigner().SignHTTP(r.Context(), creds, r, sha256Hex(raw), "bedrock", "us-east-1", time.Now().Add(-time.Hour)))
			return r
		}, "InvalidSignatureException"},
	}
	for name, c := range cases {
		a := b.doRaw(t, c.req())
		require.Equal(t, http.StatusForbidden, a.status, "%s: %s", name, a.body)
		require.Equal(t, c.errType, a.errType, name)
	}
	require.Equal(t, len(cases), b.srv.Stats().Count("atlas", OutcomeAuthRefused))
}

// doRaw sends a prepared Bedrock request.
func (b *testBundle) doRaw(t testing.TB, req *http.Request) answer {
	t.Helper()
	res, err := b.client.Do(req)
	require.NoError(t, err)
	return readAnswer(t, "bedrock", res)
}
