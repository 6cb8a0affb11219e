// Package web serves Conclave's pages for people: sign-in with a passkey or
// a password, invitation and set-up links, one's account (passkeys,
// password, sessions), the organisation's people (owners invite and change
// roles), choosing the current organisation, and sign-out. Pages are
// server-rendered html/template with one stylesheet and one script (the
// passkey ceremonies), embedded; no inline script. Every handler is a thin
// translation onto core/people, which asks the same policy as REST and MCP.
//
// Sessions live in a cookie (HttpOnly, SameSite=Lax, Secure under https,
// host-only); every state-changing request passes net/http's
// CrossOriginProtection; every response carries a Content-Security-Policy
// without inline script, frame-ancestors 'none' and Referrer-Policy
// same-origin (HSTS under https). A page asked for on another host name is
// redirected to the one origin. /v1 and /mcp never see these cookies.
package web

import (
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/conclavehq/conclave/api/web/draw"
	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/core/access"
	"github.com/conclavehq/conclave/core/alerts"
	"github.com/conclavehq/conclave/core/bench/runs"
	"github.com/conclavehq/conclave/core/calls"
	"github.com/conclavehq/conclave/core/carrier"
	"github.com/conclavehq/conclave/core/dashboard"
	"github.com/conclavehq/conclave/core/expiring"
	"github.com/conclavehq/conclave/core/modes"
	"github.com/conclavehq/conclave/core/people"
)

// CookieName is the session cookie's name.
const CookieName = "conclave_session"

// maxFormBytes caps a page's request body (forms and passkey responses).
const maxFormBytes = 64 << 10

//go:embed templates/*.html
var templateFS embed.FS

//go:embed assets
var assetFS embed.FS

// Config configures the pages.
type Config struct {
	// PublicURL is the one origin ("http://localhost:8080"). Required.
	PublicURL string
	// TrustedProxies are the proxies whose X-Forwarded-For is believed
	// for the client address (core.ClientAddress). Defaults to none.
	TrustedProxies []netip.Prefix
}

// Deps are what the pages serve from.
type Deps struct {
	// People is the people service. Required.
	People *people.Service
	// Dashboard serves the dashboard's pages (overview, receipts, money,
	// BYOK, audit, key limits). Optional: without it only the people
	// pages are served.
	Dashboard *dashboard.Service
	// Health, when set, is asked before the sign-in form is shown, so that
	// with the database away the page says sign-in is unavailable (503)
	// instead of offering a form that cannot work. Optional.
	Health core.Pinger
	// Consent, when set, serves the consent page of the OAuth
	// authorization server (ConsentPath). Optional: without it there is
	// no such page.
	Consent Consent
	// Modes serves the mode pages: the organisation's modes, their
	// versions and the builder. Optional: without it there are none.
	Modes *modes.Service
	// Runs serves the test-run and certification pages and the
	// certificates. Optional: without it there are none.
	Runs *runs.Service
	// Calls serves the playground: a question asked from a page, billed
	// as a call of the session's person. Optional.
	Calls *calls.Service
	// Alerts serves the spend alerts' section of the settings page and
	// the overview's crossings. Optional: without it there are none.
	Alerts *alerts.Service
	// Logger defaults to a logger that discards.
	Logger *slog.Logger
}

type handler struct {
	cfg    Config
	people *people.Service
	dash   *dashboard.Service
	modes  *modes.Service
	runs   *runs.Service
	calls  *calls.Service
	alerts *alerts.Service
	// plays are the playground calls this replica started (playground.go).
	plays   *expiring.Map[string, *playRun]
	health  core.Pinger
	consent Consent
	log     *slog.Logger
	origin  *url.URL
	secure  bool
	pages   map[string]*template.Template
}

// New returns the pages' handler, for every path outside /v1, /mcp, the
// discovery documents and the probes.
func New(cfg Config, d Deps) (http.Handler, error) {
	if d.People == nil {
		return nil, errors.New("web: People is required")
	}
	u, err := url.Parse(cfg.PublicURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("web: PublicURL %q is not an http(s) origin", cfg.PublicURL)
	}
	if d.Logger == nil {
		d.Logger = slog.New(slog.DiscardHandler)
	}
	h := &handler{cfg: cfg, people: d.People, dash: d.Dashboard, health: d.Health, consent: d.Consent, log: d.Logger, origin: u,
		modes: d.Modes, runs: d.Runs, calls: d.Calls, alerts: d.Alerts,
		secure: u.Scheme == "https", pages: map[string]*template.Template{}}
	if err := h.parsePages(append([]string{"signin", "link", "message", "home", "account", "people", "orgs", "keys", "revoke"},
		dashboardPages...)...); err != nil {
		return nil, err
	}
	assets, err := fs.Sub(assetFS, "assets")
	if err != nil {
		return nil, err
	}

	mux := http.NewServeMux()
	mux.HandleFunc("GET /assets/charts.css", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/css; charset=utf-8")
		_, _ = io.WriteString(w, draw.CSS)
	})
	mux.Handle("GET /assets/", h.files(http.StripPrefix("/assets/", http.FileServerFS(assets))))
	mux.HandleFunc("GET /{$}", h.signedIn(h.overview))
	mux.HandleFunc("GET /sign-in", h.signInPage)
	mux.HandleFunc("POST /sign-in", h.signInPassword)
	mux.HandleFunc("POST /sign-in/passkey/begin", h.passkeySignInBegin)
	mux.HandleFunc("POST /sign-in/passkey/finish", h.passkeySignInFinish)
	mux.HandleFunc("POST /sign-out", h.signOut)
	mux.HandleFunc("GET /link/{secret}", h.linkPage)
	mux.HandleFunc("POST /link/{secret}/password", h.linkPassword)
	mux.HandleFunc("POST /link/{secret}/passkey/begin", h.linkPasskeyBegin)
	mux.HandleFunc("POST /link/{secret}/passkey/finish", h.linkPasskeyFinish)
	mux.HandleFunc("POST /link/{secret}/accept", h.signedIn(h.linkAccept))
	mux.HandleFunc("GET /account", h.signedIn(h.account))
	mux.HandleFunc("POST /account/password", h.signedIn(h.accountPassword))
	mux.HandleFunc("POST /account/passkeys/begin", h.signedIn(h.addPasskeyBegin))
	mux.HandleFunc("POST /account/passkeys/finish", h.signedIn(h.addPasskeyFinish))
	mux.HandleFunc("POST /account/passkeys/{id}/remove", h.signedIn(h.removePasskey))
	mux.HandleFunc("POST /account/sign-out-everywhere", h.signedIn(h.signOutEverywhere))
	mux.HandleFunc("GET /people", h.signedIn(h.peoplePage))
	mux.HandleFunc("POST /people/invite", h.signedIn(h.invite))
	mux.HandleFunc("POST /people/{id}/role", h.signedIn(h.setRole))
	mux.HandleFunc("GET /people/{id}/remove", h.signedIn(h.confirmRemoveMember))
	mux.HandleFunc("POST /people/{id}/remove", h.signedIn(h.removeMember))
	mux.HandleFunc("POST /people/{id}/end-sessions", h.signedIn(h.endSessions))
	mux.HandleFunc("GET /keys", h.signedIn(h.keysPage))
	mux.HandleFunc("POST /keys", h.signedIn(h.createKey))
	mux.HandleFunc("GET /keys/{id}/revoke", h.signedIn(h.confirmRevoke))
	mux.HandleFunc("POST /keys/{id}/revoke", h.signedIn(h.revokeKey))
	mux.HandleFunc("GET /orgs", h.signedIn(h.orgsPage))
	mux.HandleFunc("POST /orgs", h.signedIn(h.chooseOrg))
	h.dashboardRoutes(mux)
	for _, add := range []func(*http.ServeMux) error{h.settingsRoutes, h.consentRoutes, h.modesRoutes, h.runsRoutes, h.playgroundRoutes, h.alertsRoutes} {
		if err := add(mux); err != nil {
			return nil, err
		}
	}
	mux.HandleFunc("/", h.notFound)

	csrf := http.NewCrossOriginProtection()
	csrf.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.message(w, r, http.StatusForbidden, "Refused", "This request came from another site, so it was refused. Nothing was changed.")
	}))
	return h.headers(h.oneOrigin(csrf.Handler(http.MaxBytesHandler(mux, maxFormBytes)))), nil
}

// headers sets the security headers of every page response.
func (h *handler) headers(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hd := w.Header()
		hd.Set("Content-Security-Policy", "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "+
			"connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'; object-src 'none'")
		hd.Set("Referrer-Policy", "same-origin")
		hd.Set("X-Content-Type-Options", "nosniff")
		hd.Set("X-Frame-Options", "DENY")
		if h.secure {
			hd.Set("Strict-Transport-Security", "max-age=63072000; includeSubDomains")
		}
		if !strings.HasPrefix(r.URL.Path, "/assets/") {
			hd.Set("Cache-Control", "no-store")
		}
		next.ServeHTTP(w, r)
	})
}

// files serves the embedded assets, but no listing of their folder.
func (h *handler) files(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/") {
			h.notFound(w, r)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// oneOrigin redirects a page asked for on another host name to the same
// path on the one origin: cookies and passkeys belong to that origin only.
func (h *handler) oneOrigin(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.EqualFold(r.Host, h.origin.Host) {
			target := *h.origin
			target.Path, target.RawQuery = r.URL.Path, r.URL.RawQuery
			code := http.StatusFound
			if r.Method != http.MethodGet && r.Method != http.MethodHead {
				code = http.StatusPermanentRedirect
			}
			http.Redirect(w, r, target.String(), code)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// address is the request's client address.
func (h *handler) address(r *http.Request) string {
	return carrier.ClientAddress(r, h.cfg.TrustedProxies)
}

// view is what every page renders from.
type view struct {
	Title  string
	Person *core.Person
	Org    *core.Org
	Role   core.Role
	Notice string
	Error  string
	// ShowPeople offers the people page to those the policy lets manage
	// people; the page itself asks again.
	ShowPeople bool
	// ShowMoney and ShowAudit offer the money and audit pages likewise;
	// ShowApps the connected apps, when the authorization server is on.
	ShowMoney, ShowAudit, ShowApps bool
	// ShowSettings offers the organisation's settings page (owners).
	ShowSettings bool
	// ShowModes, ShowRuns and ShowPlayground offer the mode pages, the
	// runs and the playground when the server serves them.
	ShowModes, ShowRuns, ShowPlayground bool
	// Nav names the section the page belongs to, marked current in the
	// navigation; Wide lets a page of tables use the screen's width.
	Nav       string
	Wide      bool
	principal *access.Principal

	// Values are what was typed (never a secret), Errors the message
	// beside each field.
	Values map[string]string
	Errors map[string]string

	Message    string
	Link       *people.LinkView
	LinkSecret string
	Passkeys   []*core.Passkey
	HasPass    bool
	Members    []*core.Member
	CanManage  bool
	NewLink    string
	NewEmail   string
	LinkTTL    string
	Orgs       []*core.Membership
	// The keys page: the keys a person may see, their creators' emails by
	// person id, a new key's secret (shown once), the key to revoke.
	Keys     []*core.Key
	Creators map[string]string
	NewKey   string
	Origin   string
	Key      *core.Key
	// A page of keys: links to the first page (on a later one) and the
	// next.
	KeysFirst, KeysNext string
	// Data is a dashboard page's own figures (see dashboard.go).
	Data any
	// Alerts is the settings page's spend alerts section (alerts.go).
	Alerts *alertsView
}

// HasPassword is the account page's flag under its template name.
func (v *view) HasPassword() bool { return v.HasPass }

// NewLinkEmail names whom a new invitation link is for.
func (v *view) NewLinkEmail() string { return v.NewEmail }

func newView(title string, p *access.Principal) *view {
	v := &view{Title: title, Values: map[string]string{}, Errors: map[string]string{}}
	if p != nil {
		v.Person, v.Org, v.Role, v.principal = p.Person, p.Org, p.Role, p
	}
	return v
}

// parsePages parses each named page (templates/NAME.html) in the layout,
// with the templates' helpers, into h.pages.
func (h *handler) parsePages(names ...string) error { return h.parsePagesWith("", names...) }

// parsePagesWith parses each named page as parsePages does, with the
// partial templates/PARTIAL.html beside it ("" for none).
func (h *handler) parsePagesWith(partial string, names ...string) error {
	funcs := template.FuncMap{"join": strings.Join}
	for k, f := range dashboardFuncs {
		funcs[k] = f
	}
	for _, name := range names {
		files := []string{"templates/layout.html", "templates/" + name + ".html"}
		if partial != "" {
			files = append(files, "templates/"+partial+".html")
		}
		t, err := template.New("").Funcs(funcs).ParseFS(templateFS, files...)
		if err != nil {
			return err
		}
		h.pages[name] = t
	}
	return nil
}

// render writes a page.
func (h *handler) render(w http.ResponseWriter, r *http.Request, status int, page string, v *view) {
	if v.principal != nil && v.principal.Org != nil {
		v.ShowPeople = h.people.Allowed(r.Context(), v.principal, core.ActionPeopleManage)
		v.ShowMoney = h.people.Allowed(r.Context(), v.principal, core.ActionJournalRead)
		v.ShowAudit = h.people.Allowed(r.Context(), v.principal, core.ActionAuditRead)
		v.ShowApps = h.consent != nil
		v.ShowSettings = h.settingsAllowed(r, v)
		v.ShowModes, v.ShowRuns, v.ShowPlayground = h.modes != nil, h.runs != nil, h.plays != nil
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	if err := h.pages[page].ExecuteTemplate(w, "layout", v); err != nil {
		h.log.Warn("rendering a page", slog.String("page", page), slog.String("error", err.Error()))
	}
}

// message renders a page that only says something.
func (h *handler) message(w http.ResponseWriter, r *http.Request, status int, title, msg string) {
	v := newView(title, principalOf(r.Context()))
	v.Message = msg
	h.render(w, r, status, "message", v)
}

func (h *handler) notFound(w http.ResponseWriter, r *http.Request) {
	h.message(w, r, http.StatusNotFound, "Not found", "There is no page at this address.")
}

// failed answers an error no form can show: a refusal of the policy, a
// missing thing, or the database being away.
func (h *handler) failed(w http.ResponseWriter, r *http.Request, err error) {
	var ce *core.Error
	switch {
	case errors.As(err, &ce):
		status := core.InfoFor(ce.Code).Status
		title := "Not allowed"
		if ce.Code == core.CodeServiceUnavailable {
			title = "Unavailable"
		}
		h.message(w, r, status, title, ce.Message)
	case errors.Is(err, core.ErrNotFound):
		h.notFound(w, r)
	default:
		h.log.Error("a page failed", slog.String("path", r.URL.Path), slog.String("error", err.Error()))
		h.message(w, r, http.StatusServiceUnavailable, "Unavailable", "Something went wrong on our side; nothing was changed. Try again shortly.")
	}
}

type principalKey struct{}

func principalOf(ctx context.Context) *access.Principal {
	p, _ := ctx.Value(principalKey{}).(*access.Principal)
	return p
}

// session resolves the request's cookie: the principal, or nil when signed
// out (a stale or forged cookie is cleared). A store failure is returned.
func (h *handler) session(w http.ResponseWriter, r *http.Request) (*access.Principal, error) {
	c, err := r.Cookie(CookieName)
	if err != nil || c.Value == "" {
		return nil, nil
	}
	p, _, err := h.people.Principal(r.Context(), c.Value, h.address(r))
	if errors.Is(err, core.ErrNotFound) {
		h.clearCookie(w)
		return nil, nil
	}
	return p, err
}

// signedIn runs next for a signed-in person, with the principal and its
// actor on the request's context; others go to the sign-in page.
func (h *handler) signedIn(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		p, err := h.session(w, r)
		if err != nil {
			h.failed(w, r, err)
			return
		}
		if p == nil {
			if r.Method == http.MethodGet {
				http.Redirect(w, r, "/sign-in?next="+url.QueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
				return
			}
			h.message(w, r, http.StatusUnauthorized, "Signed out", "You are signed out. Sign in, then try again.")
			return
		}
		ctx := context.WithValue(r.Context(), principalKey{}, p)
		next(w, r.WithContext(core.WithActor(ctx, p.Actor())))
	}
}

// withOrg runs next for a signed-in person acting in an organisation; a
// person in none is told so (inOrg).
func (h *handler) withOrg(next http.HandlerFunc) http.HandlerFunc {
	return h.signedIn(func(w http.ResponseWriter, r *http.Request) {
		if h.inOrg(w, r) {
			next(w, r)
		}
	})
}

func (h *handler) setCookie(w http.ResponseWriter, secret string) {
	http.SetCookie(w, &http.Cookie{Name: CookieName, Value: secret, Path: "/", HttpOnly: true, Secure: h.secure,
		SameSite: http.SameSiteLaxMode, MaxAge: int(h.people.Config().SessionMaxAge / time.Second)})
}

func (h *handler) clearCookie(w http.ResponseWriter) {
	http.SetCookie(w, &http.Cookie{Name: CookieName, Value: "", Path: "/", HttpOnly: true, Secure: h.secure,
		SameSite: http.SameSiteLaxMode, MaxAge: -1})
}

// signIn sets the new session's cookie, ending the one the browser had
// (the session id is rotated at every sign-in).
func (h *handler) signIn(w http.ResponseWriter, r *http.Request, s *people.SignedIn) {
	if c, err := r.Cookie(CookieName); err == nil && c.Value != "" {
		_ = h.people.SignOut(r.Context(), c.Value)
	}
	h.setCookie(w, s.Secret)
}

// next is where to go after signing in: a path of this origin, never
// another site. Browsers drop tabs and newlines from an address and read a
// backslash as a slash, so "/\t/evil.example" and "/\\evil.example" would
// leave the site: anything but a plain local path goes home.
func next(r *http.Request) string {
	return localPath(r.FormValue("next"))
}

func localPath(n string) string {
	if n == "" || n[0] != '/' || len(n) > 2048 || strings.ContainsRune(n, '\\') {
		return "/"
	}
	for i := 0; i < len(n); i++ {
		if n[i] < 0x20 || n[i] == 0x7f {
			return "/"
		}
	}
	u, err := url.Parse(n)
	if err != nil || u.Scheme != "" || u.Host != "" || u.User != nil || strings.HasPrefix(u.Path, "//") {
		return "/"
	}
	return n
}

// fieldError renders a form's page again with err beside its field, or,
// for too many attempts, the wait above the form (and in Retry-After);
// other errors are not the form's.
func fieldError(w http.ResponseWriter, err error, v *view) (int, bool) {
	var fe *people.FieldError
	if errors.As(err, &fe) {
		v.Errors[fe.Field] = fe.Message
		return http.StatusUnprocessableEntity, true
	}
	var ce *core.Error
	if errors.As(err, &ce) && ce.Code == core.CodeRateLimitExceeded {
		v.Error = ce.Message
		retryAfter(w, ce)
		return http.StatusTooManyRequests, true
	}
	return 0, false
}

// retryAfter sets Retry-After from a refusal that carries a wait.
func retryAfter(w http.ResponseWriter, ce *core.Error) {
	if ce.RetryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(int((ce.RetryAfter+time.Second-1)/time.Second)))
	}
}

// --- Sign-in -------------------------------------------------------------------

func (h *handler) signInPage(w http.ResponseWriter, r *http.Request) {
	p, err := h.session(w, r)
	if err != nil {
		h.renderSignInUnavailable(w, r)
		return
	}
	if p != nil {
		http.Redirect(w, r, next(r), http.StatusSeeOther)
		return
	}
	if h.health != nil {
		ctx, cancel := context.WithTimeout(r.Context(), 3*time.Second)
		err := h.health.Ping(ctx)
		cancel()
		if err != nil {
			h.log.Warn("sign-in is unavailable", slog.String("error", err.Error()))
			h.renderSignInUnavailable(w, r)
			return
		}
	}
	v := newView("Sign in", nil)
	v.Values["next"] = next(r)
	h.render(w, r, http.StatusOK, "signin", v)
}

func (h *handler) renderSignInUnavailable(w http.ResponseWriter, r *http.Request) {
	v := newView("Sign in", nil)
	v.Values["email"], v.Values["next"] = r.PostFormValue("email"), next(r)
	v.Error = "Sign-in is unavailable right now. Try again in a few minutes."
	h.render(w, r, http.StatusServiceUnavailable, "signin", v)
}

func (h *handler) signInPassword(w http.ResponseWriter, r *http.Request) {
	email := r.PostFormValue("email")
	s, err := h.people.SignInPassword(r.Context(), email, r.PostFormValue("password"), h.address(r))
	if err != nil {
		v := newView("Sign in", nil)
		v.Values["email"], v.Values["next"] = email, next(r)
		if status, ok := fieldError(w, err, v); ok {
			h.render(w, r, status, "signin", v)
			return
		}
		h.log.Warn("sign-in failed", slog.String("error", err.Error()))
		h.renderSignInUnavailable(w, r)
		return
	}
	h.signIn(w, r, s)
	http.Redirect(w, r, next(r), http.StatusSeeOther)
}

// jsonError answers a passkey endpoint's failure as {"error": message}.
func (h *handler) jsonError(w http.ResponseWriter, err error) {
	status, msg := http.StatusServiceUnavailable, "Something went wrong on our side. Try again shortly."
	var (
		fe *people.FieldError
		ce *core.Error
	)
	switch {
	case errors.As(err, &fe):
		status, msg = http.StatusUnprocessableEntity, fe.Message
	case errors.As(err, &ce):
		status, msg = core.InfoFor(ce.Code).Status, ce.Message
		retryAfter(w, ce)
	case errors.Is(err, core.ErrGone):
		status, msg = http.StatusGone, "This link was already used or has expired."
	case errors.Is(err, core.ErrNotFound):
		status, msg = http.StatusNotFound, "This link is not valid."
	default:
		h.log.Warn("a passkey step failed", slog.String("error", err.Error()))
	}
	writeJSON(w, status, map[string]string{"error": msg})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// begun answers a ceremony's start: the options and the ceremony's
// secret, or why it could not start.
func (h *handler) begun(w http.ResponseWriter, c *people.Ceremony, err error) {
	if err != nil {
		h.jsonError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"options": json.RawMessage(c.Options), "ceremony": c.Secret})
}

// finishBody is what the passkey script posts to finish a ceremony.
type finishBody struct {
	Ceremony   string          `json:"ceremony"`
	Credential json.RawMessage `json:"credential"`
	Name       string          `json:"name"`
}

func readFinish(r *http.Request) (*finishBody, error) {
	var b finishBody
	data, err := io.ReadAll(r.Body)
	if err != nil {
		return nil, &people.FieldError{Field: "passkey", Message: "The passkey answer is too large."}
	}
	if err := json.Unmarshal(data, &b); err != nil || len(b.Credential) == 0 {
		return nil, &people.FieldError{Field: "passkey", Message: "The passkey answer could not be read."}
	}
	return &b, nil
}

func (h *handler) passkeySignInBegin(w http.ResponseWriter, r *http.Request) {
	c, err := h.people.BeginPasskeySignIn(r.Context(), h.address(r))
	h.begun(w, c, err)
}

func (h *handler) passkeySignInFinish(w http.ResponseWriter, r *http.Request) {
	b, err := readFinish(r)
	if err != nil {
		h.jsonError(w, err)
		return
	}
	s, err := h.people.FinishPasskeySignIn(r.Context(), b.Ceremony, b.Credential, h.address(r))
	if err != nil {
		h.jsonError(w, err)
		return
	}
	h.signIn(w, r, s)
	writeJSON(w, http.StatusOK, map[string]string{"redirect": next(r)})
}

func (h *handler) signOut(w http.ResponseWriter, r *http.Request) {
	if c, err := r.Cookie(CookieName); err == nil {
		if err := h.people.SignOut(r.Context(), c.Value); err != nil {
			h.failed(w, r, err)
			return
		}
	}
	h.clearCookie(w)
	http.Redirect(w, r, "/sign-in", http.StatusSeeOther)
}

// --- Links ---------------------------------------------------------------------

// linkGone answers a link that cannot be used: nothing changed.
func (h *handler) linkFailed(w http.ResponseWriter, r *http.Request, err error) {
	switch {
	case errors.Is(err, core.ErrGone):
		h.message(w, r, http.StatusGone, "Link used or expired",
			"This link was already used or has expired. Ask whoever sent it for a new one. Nothing was changed.")
	case errors.Is(err, core.ErrNotFound):
		h.message(w, r, http.StatusNotFound, "Link not valid",
			"This link is not valid: check that it was copied whole, or ask for a new one. Nothing was changed.")
	default:
		h.failed(w, r, err)
	}
}

// linkView renders the link page with what was typed and err beside its
// field.
func (h *handler) linkView(w http.ResponseWriter, r *http.Request, p *access.Principal, status int, v *view) {
	secret := r.PathValue("secret")
	lv, err := h.people.Link(r.Context(), secret)
	if err != nil {
		h.linkFailed(w, r, err)
		return
	}
	v.Link, v.LinkSecret = lv, secret
	h.render(w, r, status, "link", v)
}

func (h *handler) linkPage(w http.ResponseWriter, r *http.Request) {
	p, err := h.session(w, r)
	if err != nil {
		h.failed(w, r, err)
		return
	}
	h.linkView(w, r, p, http.StatusOK, newView("Your invitation", p))
}

func (h *handler) linkPassword(w http.ResponseWriter, r *http.Request) {
	name := r.PostFormValue("name")
	s, err := h.people.AcceptWithPassword(r.Context(), r.PathValue("secret"), name, r.PostFormValue("password"), h.address(r))
	if err != nil {
		v := newView("Your invitation", nil)
		v.Values["name"] = name
		if status, ok := fieldError(w, err, v); ok {
			if msg, isLink := v.Errors["link"]; isLink {
				v.Error = msg
			}
			h.linkView(w, r, nil, status, v)
			return
		}
		h.linkFailed(w, r, err)
		return
	}
	h.signIn(w, r, s)
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

func (h *handler) linkPasskeyBegin(w http.ResponseWriter, r *http.Request) {
	c, err := h.people.BeginLinkPasskey(r.Context(), r.PathValue("secret"), r.PostFormValue("name"))
	h.begun(w, c, err)
}

func (h *handler) linkPasskeyFinish(w http.ResponseWriter, r *http.Request) {
	b, err := readFinish(r)
	if err != nil {
		h.jsonError(w, err)
		return
	}
	s, err := h.people.FinishLinkPasskey(r.Context(), r.PathValue("secret"), b.Ceremony, b.Credential, h.address(r))
	if err != nil {
		h.jsonError(w, err)
		return
	}
	h.signIn(w, r, s)
	writeJSON(w, http.StatusOK, map[string]string{"redirect": "/"})
}

func (h *handler) linkAccept(w http.ResponseWriter, r *http.Request) {
	p := principalOf(r.Context())
	m, err := h.people.AcceptSignedIn(r.Context(), r.PathValue("secret"), p)
	if err != nil {
		h.linkFailed(w, r, err)
		return
	}
	if c, err := r.Cookie(CookieName); err == nil {
		_ = h.people.ChooseOrg(r.Context(), c.Value, p, m.OrgID)
	}
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

// --- Home, account, organisations ------------------------------------------------

func (h *handler) accountView(w http.ResponseWriter, r *http.Request, status int, v *view) {
	p := principalOf(r.Context())
	var err error
	if v.Passkeys, err = h.people.Passkeys(r.Context(), p); err != nil {
		h.failed(w, r, err)
		return
	}
	if v.HasPass, err = h.people.HasPassword(r.Context(), p); err != nil {
		h.failed(w, r, err)
		return
	}
	v.Nav = "account"
	h.render(w, r, status, "account", v)
}

func (h *handler) account(w http.ResponseWriter, r *http.Request) {
	v := newView("Account", principalOf(r.Context()))
	v.Notice = notice(r)
	h.accountView(w, r, http.StatusOK, v)
}

// notice is the one-line confirmation a redirect asked for (?done=…), from
// a fixed set: nothing a link could inject.
func notice(r *http.Request) string {
	switch r.URL.Query().Get("done") {
	case "password":
		return "Password saved. Your other sessions were signed out."
	case "passkey-removed":
		return "Passkey removed."
	case "passkey-added":
		return "Passkey added."
	case "role":
		return "Role changed."
	case "removed":
		return "Person removed from the organisation."
	case "ended":
		return "Their sessions were ended."
	case "org":
		return "Switched organisation."
	case "revoked":
		return "Key revoked. Calls with it are refused within a few seconds."
	case "app-revoked":
		return "App disconnected: its next call is refused, and it must ask you again to reconnect."
	case "limits":
		return "Limits saved. Calls with the key follow them within a few seconds."
	case "byok-set":
		return "Provider key saved. Calls use it within about half a minute; test it below."
	case "transcripts-kept":
		return "Transcripts on: receipts of calls that finish from now on keep their prompt and answer text."
	case "transcripts-dropped":
		return "Transcripts off: receipts of calls that finish from now on keep no prompt or answer text. Receipts already written keep theirs."
	case "alerts":
		return "Alert thresholds saved. The alert check compares them with the month's spend and the balance about once a minute."
	case "webhook-removed":
		return "Webhook removed. Crossed thresholds are still shown on the overview, and posted nowhere."
	case "byok-removed":
		return "Provider key removed. Calls run on the service's keys within about half a minute."
	}
	return ""
}

func (h *handler) accountPassword(w http.ResponseWriter, r *http.Request) {
	p := principalOf(r.Context())
	keep := ""
	if c, err := r.Cookie(CookieName); err == nil {
		keep = c.Value
	}
	if err := h.people.ChangePassword(r.Context(), p, r.PostFormValue("current"), r.PostFormValue("password"), keep); err != nil {
		h.accountFailed(w, r, p, err)
		return
	}
	http.Redirect(w, r, "/account?done=password", http.StatusSeeOther)
}

// accountFailed shows a refused account change beside its field on the
// account page, and anything else as its own page.
func (h *handler) accountFailed(w http.ResponseWriter, r *http.Request, p *access.Principal, err error) {
	v := newView("Account", p)
	if status, ok := fieldError(w, err, v); ok {
		h.accountView(w, r, status, v)
		return
	}
	h.failed(w, r, err)
}

func (h *handler) addPasskeyBegin(w http.ResponseWriter, r *http.Request) {
	c, err := h.people.BeginAddPasskey(r.Context(), principalOf(r.Context()))
	h.begun(w, c, err)
}

func (h *handler) addPasskeyFinish(w http.ResponseWriter, r *http.Request) {
	b, err := readFinish(r)
	if err != nil {
		h.jsonError(w, err)
		return
	}
	if _, err := h.people.FinishAddPasskey(r.Context(), principalOf(r.Context()), b.Ceremony, b.Credential, b.Name); err != nil {
		h.jsonError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"redirect": "/account?done=passkey-added"})
}

func (h *handler) removePasskey(w http.ResponseWriter, r *http.Request) {
	p := principalOf(r.Context())
	if err := h.people.RemovePasskey(r.Context(), p, r.PathValue("id")); err != nil {
		h.accountFailed(w, r, p, err)
		return
	}
	http.Redirect(w, r, "/account?done=passkey-removed", http.StatusSeeOther)
}

func (h *handler) signOutEverywhere(w http.ResponseWriter, r *http.Request) {
	if err := h.people.SignOutEverywhere(r.Context(), principalOf(r.Context())); err != nil {
		h.failed(w, r, err)
		return
	}
	h.clearCookie(w)
	http.Redirect(w, r, "/sign-in", http.StatusSeeOther)
}

func (h *handler) orgsPage(w http.ResponseWriter, r *http.Request) {
	p := principalOf(r.Context())
	v := newView("Organisations", p)
	v.Notice = notice(r)
	var err error
	if v.Orgs, err = h.people.Memberships(r.Context(), p); err != nil {
		h.failed(w, r, err)
		return
	}
	h.render(w, r, http.StatusOK, "orgs", v)
}

func (h *handler) chooseOrg(w http.ResponseWriter, r *http.Request) {
	c, err := r.Cookie(CookieName)
	if err != nil {
		http.Redirect(w, r, "/sign-in", http.StatusSeeOther)
		return
	}
	if err := h.people.ChooseOrg(r.Context(), c.Value, principalOf(r.Context()), r.PostFormValue("org")); err != nil {
		h.failed(w, r, err)
		return
	}
	http.Redirect(w, r, "/orgs?done=org", http.StatusSeeOther)
}

// --- People ------------------------------------------------------------------------

func (h *handler) peopleView(w http.ResponseWriter, r *http.Request, status int, v *view) {
	p := principalOf(r.Context())
	members, err := h.people.Members(r.Context(), p)
	if err != nil {
		h.failed(w, r, err)
		return
	}
	v.Members, v.Nav = members, "people"
	v.CanManage = h.people.Allowed(r.Context(), p, core.ActionPeopleManage)
	if !v.CanManage {
		h.message(w, r, http.StatusForbidden, "Not allowed",
			fmt.Sprintf("Only people whose role may manage people can open this page; you are %s %s of %s.", article(string(p.Role)), p.Role, p.Org.Name))
		return
	}
	h.render(w, r, status, "people", v)
}

func (h *handler) peoplePage(w http.ResponseWriter, r *http.Request) {
	v := newView("People", principalOf(r.Context()))
	v.Notice = notice(r)
	h.peopleView(w, r, http.StatusOK, v)
}

func (h *handler) invite(w http.ResponseWriter, r *http.Request) {
	p := principalOf(r.Context())
	email, role := r.PostFormValue("email"), r.PostFormValue("role")
	link, _, err := h.people.Invite(r.Context(), p, email, core.Role(role))
	v := newView("People", p)
	if err != nil {
		v.Values["email"], v.Values["role"] = email, role
		if status, ok := fieldError(w, err, v); ok {
			h.peopleView(w, r, status, v)
			return
		}
		h.failed(w, r, err)
		return
	}
	// The link is shown once, on this answer; it is never stored.
	v.NewLink, v.NewEmail, v.LinkTTL = link, core.NormalEmail(email), core.Spell(h.people.Config().LinkTTL)
	h.peopleView(w, r, http.StatusCreated, v)
}

func (h *handler) setRole(w http.ResponseWriter, r *http.Request) {
	p := principalOf(r.Context())
	if _, err := h.people.SetRole(r.Context(), p, r.PathValue("id"), core.Role(r.PostFormValue("role"))); err != nil {
		h.peopleFailed(w, r, err)
		return
	}
	http.Redirect(w, r, "/people?done=role", http.StatusSeeOther)
}

// confirmRemoveMember asks before a person is removed.
func (h *handler) confirmRemoveMember(w http.ResponseWriter, r *http.Request) {
	p := principalOf(r.Context())
	if !h.people.Allowed(r.Context(), p, core.ActionPeopleManage) {
		h.failed(w, r, core.Errorf(core.CodeForbidden, "Only people whose role may manage people can remove someone."))
		return
	}
	members, err := h.people.Members(r.Context(), p)
	if err != nil {
		h.failed(w, r, err)
		return
	}
	for _, m := range members {
		if m.ID == r.PathValue("id") {
			v := newView("Remove "+m.Email, p)
			v.Nav, v.Data = "people", m
			h.render(w, r, http.StatusOK, "person-remove", v)
			return
		}
	}
	h.notFound(w, r)
}

func (h *handler) removeMember(w http.ResponseWriter, r *http.Request) {
	if err := h.people.RemoveMember(r.Context(), principalOf(r.Context()), r.PathValue("id")); err != nil {
		h.peopleFailed(w, r, err)
		return
	}
	http.Redirect(w, r, "/people?done=removed", http.StatusSeeOther)
}

func (h *handler) endSessions(w http.ResponseWriter, r *http.Request) {
	if _, err := h.people.EndSessions(r.Context(), principalOf(r.Context()), r.PathValue("id")); err != nil {
		h.peopleFailed(w, r, err)
		return
	}
	http.Redirect(w, r, "/people?done=ended", http.StatusSeeOther)
}

// article is "a" or "an" before word.
func article(word string) string {
	if word != "" && strings.ContainsRune("aeiou", rune(word[0])) {
		return "an"
	}
	return "a"
}

// peopleFailed shows a refused change on the people page (last_owner, a
// bad role) and anything else as its own page.
func (h *handler) peopleFailed(w http.ResponseWriter, r *http.Request, err error) {
	var (
		ce *core.Error
		fe *people.FieldError
	)
	v := newView("People", principalOf(r.Context()))
	switch {
	case errors.As(err, &ce) && ce.Code == core.CodeLastOwner:
		v.Error = ce.Message
		h.peopleView(w, r, http.StatusConflict, v)
	case errors.As(err, &fe):
		v.Error = fe.Message
		h.peopleView(w, r, http.StatusUnprocessableEntity, v)
	default:
		h.failed(w, r, err)
	}
}

// --- Keys ------------------------------------------------------------------------

// keysPerPage is how many keys the keys page lists at a time.
const keysPerPage = 50

// keysView renders the keys page: the keys the person may revoke (all of
// them for owners, their own for members), with their creators.
func (h *handler) keysView(w http.ResponseWriter, r *http.Request, status int, v *view) {
	p := principalOf(r.Context())
	if p.Org == nil {
		h.message(w, r, http.StatusForbidden, "Not allowed", "You are not in an organisation yet.")
		return
	}
	// A page of keys at a time, by a cursor: rendering every key of an
	// organisation with hundreds would make the page as slow as they are
	// many.
	var after *core.KeyCursor
	if at, id := r.URL.Query().Get("after"), r.URL.Query().Get("after_id"); at != "" {
		t, err := time.Parse(time.RFC3339Nano, at)
		if err != nil || !carrier.Text(id) {
			h.message(w, r, http.StatusUnprocessableEntity, "Not a page", "This is not a page of keys. Open the keys page from the start.")
			return
		}
		after = &core.KeyCursor{CreatedAt: t, ID: id}
		v.KeysFirst = "/keys"
	}
	keys, err := h.people.KeysPage(r.Context(), p, after, keysPerPage+1)
	if err != nil {
		h.failed(w, r, err)
		return
	}
	if len(keys) > keysPerPage {
		keys = keys[:keysPerPage]
		last := keys[len(keys)-1]
		v.KeysNext = "/keys?" + url.Values{"after": {last.CreatedAt.UTC().Format(time.RFC3339Nano)}, "after_id": {last.ID}}.Encode()
	}
	v.Keys, v.Origin, v.Creators = keys, h.people.Origin(), map[string]string{}
	v.Nav, v.Wide = "keys", true
	if members, err := h.people.Members(r.Context(), p); err == nil {
		for _, m := range members {
			v.Creators[m.ID] = m.Email
		}
	}
	h.render(w, r, status, "keys", v)
}

func (h *handler) keysPage(w http.ResponseWriter, r *http.Request) {
	v := newView("Keys", principalOf(r.Context()))
	v.Notice = notice(r)
	h.keysView(w, r, http.StatusOK, v)
}

func (h *handler) createKey(w http.ResponseWriter, r *http.Request) {
	p := principalOf(r.Context())
	name, test := strings.TrimSpace(r.PostFormValue("name")), r.PostFormValue("test") == "1"
	secret, _, err := h.people.CreateKey(r.Context(), p, &people.NewKey{Name: name, Test: test})
	v := newView("Keys", p)
	if err != nil {
		v.Values["name"] = name
		if test {
			v.Values["test"] = "1"
		}
		if status, ok := fieldError(w, err, v); ok {
			h.keysView(w, r, status, v)
			return
		}
		h.failed(w, r, err)
		return
	}
	// The secret is shown once, on this answer; only its hash is kept.
	v.NewKey = secret
	h.keysView(w, r, http.StatusCreated, v)
}

// revocable finds one of the keys the person may revoke.
func (h *handler) revocable(r *http.Request) (*core.Key, error) {
	keys, err := h.people.Keys(r.Context(), principalOf(r.Context()))
	if err != nil {
		return nil, err
	}
	for _, k := range keys {
		if k.ID == r.PathValue("id") {
			return k, nil
		}
	}
	return nil, core.ErrNotFound
}

func (h *handler) confirmRevoke(w http.ResponseWriter, r *http.Request) {
	k, err := h.revocable(r)
	if err != nil {
		h.failed(w, r, err)
		return
	}
	v := newView("Revoke "+k.Name, principalOf(r.Context()))
	v.Key = k
	h.render(w, r, http.StatusOK, "revoke", v)
}

func (h *handler) revokeKey(w http.ResponseWriter, r *http.Request) {
	if _, err := h.people.RevokeKey(r.Context(), principalOf(r.Context()), r.PathValue("id")); err != nil {
		h.failed(w, r, err)
		return
	}
	http.Redirect(w, r, "/keys?done=revoked", http.StatusSeeOther)
}
