package sim

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/xml"
	"log/slog"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"

	"github.com/conclavehq/conclave/core"
)

// The STS endpoint issues temporary credentials with AssumeRole and keeps
// them, so that Bedrock requests can be checked against them: a Bedrock
// call must be SigV4-signed, for service "bedrock", with credentials this
// server issued and that have not expired.

const (
	stsNamespace = "https://sts.amazonaws.com/doc/2011-06-15/"
	// maxIssued bounds the credentials kept; the oldest are forgotten first.
	maxIssued = 100_000
	// maxClockSkew is how far X-Amz-Date may be from the server's clock.
	maxClockSkew = 15 * time.Minute
)

var (
	roleARNRe     = regexp.MustCompile(`^arn:aws[a-z-]*:iam::(\d{12}):role/(?:[\w+=,.@-]+/)*([\w+=,.@-]{1,64})$`)
	sessionNameRe = regexp.MustCompile(`^[\w+=,.@-]{2,64}$`)
	authzRe       = regexp.MustCompile(`^AWS4-HMAC-SHA256 Credential=([^/,\s]+)/(\d{8})/([^/,\s]+)/([^/,\s]+)/aws4_request,\s*SignedHeaders=([a-z0-9;._-]+),\s*Signature=([0-9a-f]{64})$`)
)

type issuedCredential struct {
	secret  string
	token   string
	expires time.Time
	role    string // the role ARN assumed
}

// stsStore holds the credentials the STS endpoint issued. It is safe for
// concurrent use.
type stsStore struct {
	mu     sync.Mutex
	byKey  map[string]issuedCredential
	order  []string // access key ids, oldest first
	signer *v4.Signer
}

func newSTSStore() *stsStore {
	return &stsStore{byKey: map[string]issuedCredential{}, signer: v4.NewSigner()}
}

func (st *stsStore) issue(now time.Time, d time.Duration, role string) (id string, cred issuedCredential) {
	id = "ASIA" + randomString(16, "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567")
	cred = issuedCredential{
		secret:  randomString(40, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"),
		token:   "IQoJb3JpZ2luX2VjE" + base64.StdEncoding.EncodeToString([]byte(randomString(96, "abcdefghijklmnopqrstuvwxyz0123456789"))),
		expires: now.Add(d).UTC().Truncate(time.Second),
		role:    role,
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	st.byKey[id] = cred
	st.order = append(st.order, id)
	for len(st.order) > maxIssued {
		delete(st.byKey, st.order[0])
		st.order = st.order[1:]
	}
	return id, cred
}

func (st *stsStore) lookup(id string) (issuedCredential, bool) {
	st.mu.Lock()
	defer st.mu.Unlock()
	c, ok := st.byKey[id]
	return c, ok
}

func randomString(n int, alphabet string) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	for i := range b {
		b[i] = alphabet[int(b[i])%len(alphabet)]
	}
	return string(b)
}

// verify checks a Bedrock request's SigV4 signature by signing the same
// request again with the issued secret and comparing.
func (st *stsStore) verify(r *http.Request, body []byte, now time.Time) *failure {
	deny := func(awsType, msg string) *failure {
		return &failure{class: core.ErrorAuthRefused, unauthenticated: true, awsType: awsType, message: msg}
	}
	authz := r.Header.Get("Authorization")
	if authz == "" {
		return deny("MissingAuthenticationTokenException", "Missing Authentication Token")
	}
	m := authzRe.FindStringSubmatch(authz)
	if m == nil {
		return deny("IncompleteSignatureException", "The Authorization header is not a valid AWS4-HMAC-SHA256 signature.")
	}
	keyID, scopeDate, region, service, signedHeaders := m[1], m[2], m[3], m[4], m[5]
	if service != "bedrock" {
		return deny("InvalidSignatureException", "Credential should be scoped to correct service: 'bedrock'.")
	}
	cred, ok := st.lookup(keyID)
	if !ok {
		return deny("UnrecognizedClientException", "The security token included in the request is invalid.")
	}
	if !now.Before(cred.expires) {
		return deny("ExpiredTokenException", "The security token included in the request is expired")
	}
	if r.Header.Get("X-Amz-Security-Token") != cred.token {
		return deny("UnrecognizedClientException", "The security token included in the request is invalid.")
	}
	signedAt, err := time.Parse("20060102T150405Z", r.Header.Get("X-Amz-Date"))
	if err != nil || signedAt.Format("20060102") != scopeDate {
		return deny("IncompleteSignatureException", "X-Amz-Date is missing or does not match the credential scope.")
	}
	if d := now.Sub(signedAt); d > maxClockSkew || d < -maxClockSkew {
		return deny("InvalidSignatureException", "Signature expired: the request time is too far from the server time.")
	}
	sum := sha256.Sum256(body)
	payloadHash := hex.EncodeToString(sum[:])
	if h := r.Header.Get("X-Amz-Content-Sha256"); h != "" && h != payloadHash {
		return deny("InvalidSignatureException", "The provided x-amz-content-sha256 header does not match the body.")
	}

	// Rebuild the request as the client signed it: the same method, path,
	// query and signed headers, nothing else.
	again := &http.Request{
		Method: r.Method,
		URL:    &url.URL{Scheme: "http", Host: r.Host, Path: r.URL.Path, RawPath: r.URL.RawPath, RawQuery: r.URL.RawQuery},
		Host:   r.Host,
		Header: http.Header{},
	}
	for _, name := range strings.Split(signedHeaders, ";") {
		switch name {
		case "host":
		case "content-length":
			again.ContentLength = r.ContentLength
		default:
			values := r.Header.Values(name)
			if len(values) == 0 {
				return deny("InvalidSignatureException", "A signed header is missing: "+name+".")
			}
			again.Header[http.CanonicalHeaderKey(name)] = values
		}
	}
	creds := aws.Credentials{AccessKeyID: keyID, SecretAccessKey: cred.secret, SessionToken: cred.token}
	if err := st.signer.SignHTTP(r.Context(), creds, again, payloadHash, service, region, signedAt); err != nil {
		return deny("InvalidSignatureException", "The request signature could not be checked.")
	}
	if !hmac.Equal([]byte(again.Header.Get("Authorization")), []byte(authz)) {
		return deny("InvalidSignatureException", "The request signature we calculated does not match the signature you provided. Check your AWS Secret Access Key and signing method.")
	}
	return nil
}

// handleSTS serves AssumeRole (form POST, or GET with a query, as STS
// accepts both). It does not check the caller's own signature: any caller
// may assume any well-formed role, except that a role whose name ends in
// "-ext" demands an ExternalId.
func (s *Server) handleSTS(w http.ResponseWriter, r *http.Request) {
	reqID := randomRequestID()
	if err := r.ParseForm(); err != nil {
		writeSTSError(w, http.StatusBadRequest, "Sender", "MalformedInput", "the form could not be read", reqID)
		return
	}
	f := r.Form
	if f.Get("Action") != "AssumeRole" {
		writeSTSError(w, http.StatusBadRequest, "Sender", "InvalidAction", "Could not find operation "+f.Get("Action")+" for version "+f.Get("Version"), reqID)
		return
	}
	if f.Get("Version") != "2011-06-15" {
		writeSTSError(w, http.StatusBadRequest, "Sender", "InvalidAction", "Version must be 2011-06-15", reqID)
		return
	}
	arn, session := f.Get("RoleArn"), f.Get("RoleSessionName")
	m := roleARNRe.FindStringSubmatch(arn)
	switch {
	case arn == "":
		writeSTSError(w, http.StatusBadRequest, "Sender", "MissingParameter", "The request must contain the parameter RoleArn", reqID)
		return
	case m == nil:
		writeSTSError(w, http.StatusBadRequest, "Sender", "ValidationError", "RoleArn is not a valid IAM role ARN", reqID)
		return
	case session == "":
		writeSTSError(w, http.StatusBadRequest, "Sender", "MissingParameter", "The request must contain the parameter RoleSessionName", reqID)
		return
	case !sessionNameRe.MatchString(session):
		writeSTSError(w, http.StatusBadRequest, "Sender", "ValidationError", "RoleSessionName must be 2 to 64 characters of [\\w+=,.@-]", reqID)
		return
	}
	duration := time.Hour
	if v := f.Get("DurationSeconds"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 900 || n > 43200 {
			writeSTSError(w, http.StatusBadRequest, "Sender", "ValidationError", "DurationSeconds must be between 900 and 43200", reqID)
			return
		}
		duration = time.Duration(n) * time.Second
	}
	account, role := m[1], m[2]
	if strings.HasSuffix(role, "-ext") && f.Get("ExternalId") == "" {
		writeSTSError(w, http.StatusForbidden, "Sender", "AccessDenied",
			"User is not authorized to perform: sts:AssumeRole on resource: "+arn+" (the role requires an ExternalId)", reqID)
		return
	}
	id, cred := s.sts.issue(time.Now(), duration, arn)
	s.stats.issued()
	s.log.Debug("simulated STS issued credentials", slog.String("role", arn))

	var resp assumeRoleResponse
	resp.Xmlns = stsNamespace
	resp.Result.User.Arn = "arn:aws:sts::" + account + ":assumed-role/" + role + "/" + session
	resp.Result.User.AssumedRoleID = "AROA" + randomString(17, "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567") + ":" + session
	resp.Result.Credentials = stsCredentials{
		AccessKeyID: id, SecretAccessKey: cred.secret, SessionToken: cred.token,
		Expiration: cred.expires.Format(time.RFC3339),
	}
	resp.Metadata.RequestID = reqID
	writeXML(w, http.StatusOK, resp)
}

type assumeRoleResponse struct {
	XMLName xml.Name `xml:"AssumeRoleResponse"`
	Xmlns   string   `xml:"xmlns,attr"`
	Result  struct {
		User struct {
			Arn           string `xml:"Arn"`
			AssumedRoleID string `xml:"AssumedRoleId"`
		} `xml:"AssumedRoleUser"`
		Credentials stsCredentials `xml:"Credentials"`
	} `xml:"AssumeRoleResult"`
	Metadata struct {
		RequestID string `xml:"RequestId"`
	} `xml:"ResponseMetadata"`
}

type stsCredentials struct {
	AccessKeyID     string `xml:"AccessKeyId"`
	SecretAccessKey string `xml:"SecretAccessKey"`
	SessionToken    string `xml:"SessionToken"`
	Expiration      string `xml:"Expiration"`
}

type stsErrorResponse struct {
	XMLName xml.Name `xml:"ErrorResponse"`
	Xmlns   string   `xml:"xmlns,attr"`
	Error   struct {
		Type    string `xml:"Type"`
		Code    string `xml:"Code"`
		Message string `xml:"Message"`
	} `xml:"Error"`
	RequestID string `xml:"RequestId"`
}

func writeSTSError(w http.ResponseWriter, status int, typ, code, msg, reqID string) {
	var e stsErrorResponse
	e.Xmlns = stsNamespace
	e.Error.Type, e.Error.Code, e.Error.Message = typ, code, msg
	e.RequestID = reqID
	writeXML(w, status, e)
}

func writeXML(w http.ResponseWriter, status int, v any) {
	body, err := xml.Marshal(v)
	if err != nil {
		http.Error(w, "simulated STS: encoding a response: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/xml")
	w.WriteHeader(status)
	_, _ = w.Write([]byte(xml.Header))
	_, _ = w.Write(body)
}

func randomRequestID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	h := hex.EncodeToString(b)
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}
