package web

import (
	"net/http"

	"github.com/conclavehq/conclave/core"
	coreoauth "github.com/conclavehq/conclave/core/oauth"
)

// appsData is what the connected apps page shows: the grants the person
// may see (everyone's for an owner, their own for a member), and the
// email of each grant's person.
type appsData struct {
	Apps     []*coreoauth.Grant
	People   map[string]string
	Everyone bool
}

// appsRoutes serves the connected apps pages when the authorization server
// is on: the list, and revoking one (confirmed first).
func (h *handler) appsRoutes(mux *http.ServeMux) error {
	if err := h.parsePages("apps", "app-revoke"); err != nil {
		return err
	}
	mux.HandleFunc("GET /apps", h.signedIn(h.appsPage))
	mux.HandleFunc("GET /apps/{id}/revoke", h.signedIn(h.confirmRevokeApp))
	mux.HandleFunc("POST /apps/{id}/revoke", h.signedIn(h.revokeApp))
	return nil
}

func (h *handler) appsPage(w http.ResponseWriter, r *http.Request) {
	p := principalOf(r.Context())
	grants, err := h.people.Apps(r.Context(), p)
	if err != nil {
		h.failed(w, r, err)
		return
	}
	d := appsData{Apps: grants, People: map[string]string{}, Everyone: h.people.Allowed(r.Context(), p, core.ActionAppsRead)}
	if d.Everyone {
		if members, err := h.people.Members(r.Context(), p); err == nil {
			for _, m := range members {
				d.People[m.ID] = m.Email
			}
		}
	}
	v := newView("Connected apps", p)
	v.Nav, v.Wide, v.Data, v.Notice, v.Origin = "apps", true, d, notice(r), h.people.Origin()
	h.render(w, r, http.StatusOK, "apps", v)
}

// visibleApp finds the grant of the path among those the person may see:
// core.ErrNotFound otherwise.
func (h *handler) visibleApp(r *http.Request) (*coreoauth.Grant, error) {
	grants, err := h.people.Apps(r.Context(), principalOf(r.Context()))
	if err != nil {
		return nil, err
	}
	for _, g := range grants {
		if g.ID == r.PathValue("id") && !g.Revoked() {
			return g, nil
		}
	}
	return nil, core.ErrNotFound
}

func (h *handler) confirmRevokeApp(w http.ResponseWriter, r *http.Request) {
	g, err := h.visibleApp(r)
	if err != nil {
		h.failed(w, r, err)
		return
	}
	v := newView("Disconnect "+appName(g), principalOf(r.Context()))
	v.Nav, v.Data = "apps", g
	h.render(w, r, http.StatusOK, "app-revoke", v)
}

func (h *handler) revokeApp(w http.ResponseWriter, r *http.Request) {
	if _, err := h.people.RevokeApp(r.Context(), principalOf(r.Context()), r.PathValue("id")); err != nil {
		h.failed(w, r, err)
		return
	}
	http.Redirect(w, r, "/apps?done=app-revoked", http.StatusSeeOther)
}

// appName is the app's name as it declared it, else its client id.
func appName(g *coreoauth.Grant) string {
	if g.ClientName != "" {
		return g.ClientName
	}
	return g.ClientID
}
