package core

import (
	"context"
	"strings"
	"time"
)

// Egress sends provider requests for the engines of a deployment. It
// resolves the engine's endpoint, refuses hosts outside its allow-list,
// strips any authentication an adapter set, injects the engine's credential
// for the scheme the adapter names, applies timeouts and size caps, and
// retries retryable failures with back-off. It is the only part of Conclave
// that talks to providers.
type Egress interface {
	// Call runs one seat call for engine through adapter: build, send,
	// parse, retry. A provider failure comes back as a SeatAnswer with Error
	// set; a Go error means the call could not be made at all.
	Call(ctx context.Context, c *EgressCall) (*SeatAnswer, error)
}

// EgressCall is one seat call for the egress layer.
type EgressCall struct {
	Engine  *Engine
	Adapter Adapter
	Request *SeatRequest
	// OrgID is the organisation whose own credentials the call may use
	// (bring-your-own-key): the paying organisation on a seat call. "" means
	// the service's own credentials, as for judge, synthesis and the
	// classifier, which always run on them.
	OrgID string
}

// Credentials finds the credential an engine call must carry. The egress
// layer asks it on every call and gives the result to no one but the
// request it signs. Bring-your-own-key plugs in here.
type Credentials interface {
	Credential(ctx context.Context, req *CredentialRequest) (*Credential, error)
}

// CredentialRequest says which credential is needed.
type CredentialRequest struct {
	Engine *Engine
	Scheme AuthScheme
	OrgID  string // "" for the service's own credentials
}

// Credential is a secret and where it came from. It must never be logged,
// stored in plain text, or passed to an adapter.
type Credential struct {
	Scheme AuthScheme
	// Secret is the API key for bearer, x-api-key and google-api-key.
	Secret string
	// AWS holds short-lived credentials for aws-sigv4.
	AWS *AWSCredential
	// Source names where the credential came from: SourceService, or
	// SourceBYOK(provider) for an organisation's own credential.
	Source string
}

// Credential sources.
const (
	// SourceService is the source of the service's own credentials.
	SourceService = "service"
	// sourceBYOKPrefix starts the source of an organisation's own
	// credential: "byok:openai", "byok:aws".
	sourceBYOKPrefix = "byok:"
)

// SourceBYOK is the source of an organisation's own credential for a
// bring-your-own-key provider ("openai", "anthropic", "google", "mistral",
// "aws"): "byok:" and the provider.
func SourceBYOK(provider string) string { return sourceBYOKPrefix + provider }

// IsBYOKSource reports whether a call's source is an organisation's own
// credential, whose token cost the organisation pays its provider: such a
// call's BilledCall has BYOK set, and its fee rate is FeeRateBYOKPPM.
func IsBYOKSource(source string) bool { return strings.HasPrefix(source, sourceBYOKPrefix) }

// AWSCredential is a short-lived AWS credential (from STS AssumeRole).
type AWSCredential struct {
	AccessKeyID     string
	SecretAccessKey string
	SessionToken    string
	Region          string
	Expires         time.Time
}

// String never prints the secret.
func (c *Credential) String() string { return "credential(" + string(c.Scheme) + ", " + c.Source + ")" }

// GoString never prints the secret either.
func (c *Credential) GoString() string { return c.String() }
