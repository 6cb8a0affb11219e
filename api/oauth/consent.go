package oauth

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"

	"github.com/conclavehq/conclave/core"
	coreoauth "github.com/conclavehq/conclave/core/oauth"
)

// The consent page (api/web) asks the Server about the request it shows
// and tells it the person's answer: Pending, Approve, Deny. The page
// checks the person's session and that the organisation is theirs;
// Approve checks the membership again, in the statement that grants.

// Pending returns what the consent page shows of a request awaiting the
// person's answer: core.ErrNotFound when there is none (unknown or
// expired), core.ErrGone when it was answered already.
func (s *Server) Pending(ctx context.Context, id string) (*coreoauth.ConsentRequest, error) {
	ar, c, err := s.waiting(ctx, id)
	if err != nil {
		return nil, err
	}
	out := &coreoauth.ConsentRequest{ID: ar.ID, ClientName: c.name(), ClientID: c.id, Verified: c.verified,
		RedirectURI: ar.RedirectURI, RedirectHost: redirectHost(ar.RedirectURI), LoopbackOnly: c.Native,
		Scopes: slices.Clone(ar.Scopes), Offline: slices.Contains(ar.Scopes, coreoauth.ScopeOffline)}
	if c.verified {
		out.VerifiedHost = c.host()
	}
	return out, nil
}

// Approve grants the request to personID in orgID, as core.ActorOf(ctx),
// and returns where to send the browser: the callback, which hands the
// app its code. core.ErrNotFound when the request no longer waits or the
// person is not in the organisation; core.ErrGone when it was answered.
func (s *Server) Approve(ctx context.Context, id, personID, orgID string) (string, error) {
	ar, c, err := s.waiting(ctx, id)
	if err != nil {
		return "", err
	}
	g := &coreoauth.Grant{ID: core.NewID("grant"), ClientID: ar.ClientID, ClientName: c.name(), Verified: c.verified,
		PersonID: personID, OrgID: orgID, Scopes: ar.Scopes, Resource: ar.Resource}
	if _, err := s.store.ApproveAuthRequest(ctx, id, g); err != nil {
		return "", fmt.Errorf("approving %s: %w", id, err)
	}
	return s.issuer + PathCallback + "?id=" + url.QueryEscape(id), nil
}

// Deny refuses the request and returns where to send the browser: back to
// the app with access_denied (and its state and iss).
func (s *Server) Deny(ctx context.Context, id string) (string, error) {
	ar, _, err := s.waiting(ctx, id)
	if err != nil {
		return "", err
	}
	if err := s.store.DeleteAuthRequest(ctx, id); err != nil {
		return "", fmt.Errorf("denying %s: %w", id, err)
	}
	return s.responseURL(ar.RedirectURI, url.Values{"error": {"access_denied"},
		"error_description": {"The person declined to connect the app."}, "state": nonEmpty(ar.State)}), nil
}

// waiting returns a request still waiting for an answer, with its client.
func (s *Server) waiting(ctx context.Context, id string) (*coreoauth.AuthRequest, *client, error) {
	if id == "" {
		return nil, nil, core.ErrNotFound
	}
	ar, err := s.store.AuthRequest(ctx, id)
	if err != nil {
		return nil, nil, err
	}
	if ar.Done {
		return nil, nil, core.ErrGone
	}
	c, err := s.storage.clientByID(ctx, ar.ClientID)
	if errors.Is(err, errUnknownClient) {
		// Deleted, or its document changed since /authorize.
		return nil, nil, core.ErrNotFound
	}
	if err != nil {
		return nil, nil, err
	}
	return ar, c, nil
}

// redirectHost is what the consent page names as where the browser goes
// back to: the host of an http(s) URI, the scheme of a private-use one
// ("cursor:").
func redirectHost(uri string) string {
	u, err := url.Parse(uri)
	if err != nil {
		return ""
	}
	if u.Scheme == "http" || u.Scheme == "https" {
		return u.Host
	}
	if u.Host != "" {
		return u.Scheme + "://" + u.Host
	}
	return u.Scheme + ":"
}
