package egress

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"

	"github.com/conclavehq/conclave/core"
)

// knownScheme reports whether egress knows how to apply s.
func knownScheme(s core.AuthScheme) bool {
	switch s {
	case core.AuthBearer, core.AuthXAPIKey, core.AuthGoogleAPIKey, core.AuthAWSSigV4, core.AuthNone:
		return true
	}
	return false
}

// checkCredential makes sure a credential fits the scheme before it is
// used. Errors describe the credential's shape, never its content.
func checkCredential(scheme core.AuthScheme, cred *core.Credential) error {
	if cred == nil {
		return errors.New("no credential")
	}
	if cred.Scheme != scheme {
		return fmt.Errorf("credential is for scheme %q, the adapter needs %q", cred.Scheme, scheme)
	}
	if scheme == core.AuthAWSSigV4 {
		a := cred.AWS
		if a == nil || a.AccessKeyID == "" || a.SecretAccessKey == "" {
			return errors.New("AWS credential is incomplete")
		}
		return nil
	}
	if cred.Secret == "" {
		return errors.New("credential is empty")
	}
	if !validHeaderValue(cred.Secret) {
		return errors.New("credential holds characters a header cannot carry")
	}
	return nil
}

// sigV4Service is the signing name of Bedrock's runtime API.
const sigV4Service = "bedrock"

// authorize adds the credential to r as its scheme says. It runs last, once
// every header and body byte is final, because SigV4 signs them.
func (e *Egress) authorize(ctx context.Context, r *http.Request, body []byte, scheme core.AuthScheme, cred *core.Credential, region string) error {
	switch scheme {
	case core.AuthNone:
	case core.AuthBearer:
		r.Header.Set("Authorization", "Bearer "+cred.Secret)
	case core.AuthXAPIKey:
		r.Header.Set("X-Api-Key", cred.Secret)
	case core.AuthGoogleAPIKey:
		r.Header.Set("X-Goog-Api-Key", cred.Secret)
	case core.AuthAWSSigV4:
		a := cred.AWS
		if region == "" {
			region = a.Region
		}
		if region == "" {
			return errors.New("no AWS region: set the engine's aws_region")
		}
		sum := sha256.Sum256(body)
		ac := aws.Credentials{
			AccessKeyID: a.AccessKeyID, SecretAccessKey: a.SecretAccessKey, SessionToken: a.SessionToken,
			Source: "conclave", CanExpire: !a.Expires.IsZero(), Expires: a.Expires,
		}
		if err := e.signer.SignHTTP(ctx, ac, r, hex.EncodeToString(sum[:]), sigV4Service, region, e.now()); err != nil {
			return errors.New("signing the request with SigV4 failed")
		}
	default:
		return fmt.Errorf("unknown credential scheme %q", scheme)
	}
	return nil
}

// minScrubLen is the shortest secret scrubbed out of responses: shorter
// strings occur by chance in ordinary text and were never real keys.
const minScrubLen = 8

// secrets lists the strings of cred that must not reach an adapter.
func secrets(cred *core.Credential) []string {
	if cred == nil {
		return nil
	}
	var out []string
	add := func(s string) {
		if len(s) >= minScrubLen {
			out = append(out, s)
		}
	}
	add(cred.Secret)
	if cred.AWS != nil {
		add(cred.AWS.SecretAccessKey)
		add(cred.AWS.SessionToken)
		add(cred.AWS.AccessKeyID)
	}
	return out
}

func newSigner() *v4.Signer { return v4.NewSigner() }

// sleepCtx waits d or until ctx ends.
func sleepCtx(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
