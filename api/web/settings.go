package web

import (
	"net/http"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/core/people"
)

// settingsRoutes serves the organisation's settings page (owners: the
// policy's org.settings): content retention, whether receipts keep their
// calls' transcripts.
func (h *handler) settingsRoutes(mux *http.ServeMux) error {
	if err := h.parsePages("settings"); err != nil {
		return err
	}
	mux.HandleFunc("GET /settings", h.signedIn(h.settingsPage))
	mux.HandleFunc("POST /settings/transcripts", h.signedIn(h.setTranscripts))
	return nil
}

// settingsView shows the settings page of org (read fresh), with v's
// notice or errors.
func (h *handler) settingsView(w http.ResponseWriter, r *http.Request, status int, v *view) {
	org, err := h.people.OrgSettings(r.Context(), v.principal)
	if err != nil {
		h.failed(w, r, err)
		return
	}
	if v.Values["transcripts"] == "" {
		v.Values["transcripts"] = "keep"
		if !org.KeepTranscripts {
			v.Values["transcripts"] = "drop"
		}
	}
	if err := h.alertsInto(r, v); err != nil {
		h.failed(w, r, err)
		return
	}
	v.Nav, v.Data = "settings", org
	h.render(w, r, status, "settings", v)
}

func (h *handler) settingsPage(w http.ResponseWriter, r *http.Request) {
	v := newView("Settings", principalOf(r.Context()))
	v.Notice = notice(r)
	h.settingsView(w, r, http.StatusOK, v)
}

// setTranscripts sets content retention: transcripts=keep or drop.
func (h *handler) setTranscripts(w http.ResponseWriter, r *http.Request) {
	p := principalOf(r.Context())
	choice := r.PostFormValue("transcripts")
	var err error
	switch choice {
	case "keep", "drop":
		_, err = h.people.SetTranscripts(r.Context(), p, choice == "keep")
	default:
		err = &people.FieldError{Field: "transcripts", Message: "Choose whether receipts keep their transcripts."}
	}
	if err != nil {
		v := newView("Settings", p)
		if status, ok := fieldError(w, err, v); ok {
			h.settingsView(w, r, status, v)
			return
		}
		h.failed(w, r, err)
		return
	}
	done := "transcripts-kept"
	if choice == "drop" {
		done = "transcripts-dropped"
	}
	http.Redirect(w, r, "/settings?done="+done, http.StatusSeeOther)
}

// settingsAllowed tells the layout whether to offer the settings page.
func (h *handler) settingsAllowed(r *http.Request, v *view) bool {
	return h.people.Allowed(r.Context(), v.principal, core.ActionOrgSettings)
}
