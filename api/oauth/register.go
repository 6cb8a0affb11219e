package oauth

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"net/netip"
	"strconv"
	"time"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/core/carrier"
	coreoauth "github.com/conclavehq/conclave/core/oauth"
)

// Limiter spends one attempt of a budget; core.People satisfies it.
type Limiter interface {
	SpendAttempt(ctx context.Context, p *core.AttemptParams) (time.Duration, error)
}

// RegistrarConfig configures dynamic client registration.
type RegistrarConfig struct {
	// Limit registrations per client address in Window. Default 20 an
	// hour (Claude registers anew on every fresh connection).
	Limit  int
	Window time.Duration
	// TrustedProxies decide the client address (core/carrier).
	TrustedProxies []netip.Prefix
}

// Registrar serves POST /register: RFC 7591 dynamic registration of
// public clients, for the clients that do not offer a metadata document
// (Cursor, the TypeScript SDK 1.x).
type Registrar struct {
	cfg     RegistrarConfig
	store   coreoauth.ClientStore
	limiter Limiter
}

// NewRegistrar returns the registration endpoint's handler.
func NewRegistrar(cfg RegistrarConfig, store coreoauth.ClientStore, limiter Limiter) *Registrar {
	if cfg.Limit <= 0 {
		cfg.Limit = 20
	}
	if cfg.Window <= 0 {
		cfg.Window = time.Hour
	}
	return &Registrar{cfg: cfg, store: store, limiter: limiter}
}

// maxRegistration caps a registration request's body.
const maxRegistration = 64 << 10

// registered is the registration response (RFC 7591 §3.2.1).
type registered struct {
	ClientID         string `json:"client_id"`
	ClientIDIssuedAt int64  `json:"client_id_issued_at"`
	coreoauth.ClientMetadata
}

// oauthError writes an OAuth error body.
func oauthError(w http.ResponseWriter, status int, code, description string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"error": code, "error_description": description})
}

func (g *Registrar) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		oauthError(w, http.StatusMethodNotAllowed, "invalid_request", "Register a client with POST.")
		return
	}
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		oauthError(w, http.StatusBadRequest, "invalid_client_metadata", "Send the client metadata as application/json.")
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxRegistration+1))
	if err != nil || len(body) > maxRegistration {
		oauthError(w, http.StatusBadRequest, "invalid_client_metadata", "The client metadata is larger than 64 KiB or could not be read.")
		return
	}
	var m coreoauth.ClientMetadata
	if err := json.Unmarshal(body, &m); err != nil {
		oauthError(w, http.StatusBadRequest, "invalid_client_metadata", "The client metadata is not a JSON object of the expected fields.")
		return
	}
	m.ClientID = ""
	c, err := coreoauth.CheckMetadata(&m)
	switch {
	case errors.Is(err, coreoauth.ErrRedirectURI):
		oauthError(w, http.StatusBadRequest, "invalid_redirect_uri", err.Error())
		return
	case err != nil:
		oauthError(w, http.StatusBadRequest, "invalid_client_metadata", err.Error())
		return
	}
	addr := carrier.ClientAddress(r, g.cfg.TrustedProxies)
	wait, err := g.limiter.SpendAttempt(r.Context(), &core.AttemptParams{Subjects: []core.AttemptBudget{
		{Subject: "register:" + addr, Limit: g.cfg.Limit, Window: g.cfg.Window}}})
	if err != nil {
		oauthError(w, http.StatusServiceUnavailable, "temporarily_unavailable", "Registration is unavailable right now. Retry shortly.")
		return
	}
	if wait > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(int((wait+time.Second-1)/time.Second)))
		oauthError(w, http.StatusTooManyRequests, "invalid_request", "Too many registrations from this address. Retry after the time in Retry-After.")
		return
	}
	if len(c.GrantTypes) == 0 {
		c.GrantTypes = []string{"authorization_code", "refresh_token"}
	}
	if len(c.ResponseTypes) == 0 {
		c.ResponseTypes = []string{"code"}
	}
	rc := &coreoauth.RegisteredClient{ID: core.NewID("client"), Client: *c, Address: addr}
	if err := g.store.RegisterClient(r.Context(), rc); err != nil {
		oauthError(w, http.StatusServiceUnavailable, "temporarily_unavailable", "The client could not be registered. Retry shortly.")
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusCreated)
	_ = json.NewEncoder(w).Encode(registered{ClientID: rc.ID, ClientIDIssuedAt: rc.RegisteredAt.Unix(), ClientMetadata: rc.ClientMetadata})
}
