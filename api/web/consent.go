package web

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"

	"github.com/conclavehq/conclave/core"
	coreoauth "github.com/conclavehq/conclave/core/oauth"
)

// ConsentPath is where the authorization server sends a person to answer
// an app's request (with ?id=).
const ConsentPath = "/oauth/consent"

// Consent is the authorization server's side of the consent page
// (api/oauth implements it): the request the page shows and the person's
// answer. The page checks the session and that the organisation chosen is
// the person's.
type Consent interface {
	// Pending returns the request awaiting an answer: core.ErrNotFound
	// when unknown or expired, core.ErrGone when answered already.
	Pending(ctx context.Context, id string) (*coreoauth.ConsentRequest, error)
	// Approve grants it to the person in the organisation, as the actor
	// on ctx, and returns where to send the browser.
	Approve(ctx context.Context, id, personID, orgID string) (string, error)
	// Deny refuses it and returns where to send the browser.
	Deny(ctx context.Context, id string) (string, error)
}

// consentView is the consent page's own data.
type consentView struct {
	ID           string
	App          string
	Verified     bool
	VerifiedHost string
	RedirectHost string
	LoopbackOnly bool
	Orgs         []*core.Membership
	Current      string
	Scopes       []scopeWords
	Offline      bool
}

type scopeWords struct{ Name, Words string }

// scopeText says in plain words what each scope lets an app do.
var scopeText = map[string]string{
	core.ScopeModelsRead:   "See the models and modes, and what they cost",
	core.ScopeDeliberate:   "Run deliberations, billed to the organisation",
	core.ScopeEstimate:     "Estimate what a deliberation would cost",
	core.ScopeReceiptsRead: "Read the receipts of calls",
	core.ScopeTests:        "Launch and follow test runs of modes, billed to the organisation",
	core.ScopeCertify:      "Launch certifications of modes, billed to the organisation",
	core.ScopeModesWrite:   "Create, change and release the organisation's modes",
}

// consentRoutes serves the consent page when the authorization server is
// on.
func (h *handler) consentRoutes(mux *http.ServeMux) error {
	if h.consent == nil {
		return nil
	}
	if err := h.parsePages("consent"); err != nil {
		return err
	}
	mux.HandleFunc("GET "+ConsentPath, h.signedIn(h.consentPage))
	mux.HandleFunc("POST "+ConsentPath, h.signedIn(h.consentAnswer))
	return h.appsRoutes(mux)
}

// pendingFailed answers a request the page cannot show.
func (h *handler) pendingFailed(w http.ResponseWriter, r *http.Request, err error) {
	switch {
	case errors.Is(err, core.ErrNotFound):
		h.message(w, r, http.StatusNotFound, "Request expired",
			"This request to connect an app expired or is not valid. Start connecting the app again from the app.")
	case errors.Is(err, core.ErrGone):
		h.message(w, r, http.StatusGone, "Already answered",
			"This request to connect an app was already answered. Start again from the app if it did not connect.")
	default:
		h.failed(w, r, err)
	}
}

func (h *handler) consentPage(w http.ResponseWriter, r *http.Request) {
	p := principalOf(r.Context())
	req, err := h.consent.Pending(r.Context(), r.URL.Query().Get("id"))
	if err != nil {
		h.pendingFailed(w, r, err)
		return
	}
	orgs, err := h.people.Memberships(r.Context(), p)
	if err != nil {
		h.failed(w, r, err)
		return
	}
	if len(orgs) == 0 {
		h.message(w, r, http.StatusForbidden, "No organisation",
			"You belong to no organisation, so there is none to connect the app to. An owner can invite you.")
		return
	}
	name := req.ClientName
	if name == "" {
		name = "An unnamed app"
	}
	d := &consentView{ID: req.ID, App: name, Verified: req.Verified, VerifiedHost: req.VerifiedHost,
		RedirectHost: req.RedirectHost, LoopbackOnly: req.LoopbackOnly, Orgs: orgs, Current: orgs[0].OrgID,
		Offline: req.Offline}
	if p.Org != nil && slices.ContainsFunc(orgs, func(m *core.Membership) bool { return m.OrgID == p.Org.ID }) {
		d.Current = p.Org.ID
	}
	for _, s := range core.AllScopes {
		if slices.Contains(req.Scopes, s) {
			d.Scopes = append(d.Scopes, scopeWords{Name: s, Words: scopeText[s]})
		}
	}
	v := newView("Connect "+name, p)
	v.Data = d
	// The answer's redirect chain ends at the app: the form may lead
	// there.
	if src := formTarget(req.RedirectURI); src != "" {
		csp := w.Header().Get("Content-Security-Policy")
		w.Header().Set("Content-Security-Policy", strings.Replace(csp, "form-action 'self'", "form-action 'self' "+src, 1))
	}
	h.render(w, r, http.StatusOK, "consent", v)
}

// cspSource is what a CSP source expression may be built of here.
var cspSource = regexp.MustCompile(`^[a-z][a-z0-9+.-]*:(//[A-Za-z0-9.\-\[\]:]+)?$`)

// formTarget is the CSP source of a redirect URI: its origin for http(s),
// its scheme for a private-use URI; "" when it cannot be written as one.
func formTarget(uri string) string {
	u, err := url.Parse(uri)
	if err != nil {
		return ""
	}
	src := u.Scheme + ":"
	if u.Scheme == "http" || u.Scheme == "https" {
		src = u.Scheme + "://" + u.Host
	}
	if !cspSource.MatchString(src) {
		return ""
	}
	return src
}

func (h *handler) consentAnswer(w http.ResponseWriter, r *http.Request) {
	p := principalOf(r.Context())
	id := r.PostFormValue("id")
	var (
		to  string
		err error
	)
	switch r.PostFormValue("decision") {
	case "approve":
		orgs, merr := h.people.Memberships(r.Context(), p)
		if merr != nil {
			h.failed(w, r, merr)
			return
		}
		org := r.PostFormValue("org")
		if !slices.ContainsFunc(orgs, func(m *core.Membership) bool { return m.OrgID == org }) {
			h.message(w, r, http.StatusBadRequest, "Choose an organisation",
				"Choose one of your organisations for the app to act in, then answer again.")
			return
		}
		to, err = h.consent.Approve(r.Context(), id, p.Person.ID, org)
	case "deny":
		to, err = h.consent.Deny(r.Context(), id)
	default:
		h.message(w, r, http.StatusBadRequest, "No answer", "Answer with Allow or Deny.")
		return
	}
	if err != nil {
		h.pendingFailed(w, r, err)
		return
	}
	http.Redirect(w, r, to, http.StatusSeeOther)
}
