package web

import (
	"errors"
	"net/http"
	"net/url"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/core/bench/runs"
)

// The certificate of a certified mode: its page for the organisation, and
// the public page an owner may publish it at. The public page shows the
// certificate's figures, the mode's id and version and the dates, and
// names no engine or baseline model.

// certificateRoutes adds the certificates' pages.
func (h *handler) certificateRoutes(mux *http.ServeMux) error {
	if err := h.parsePagesWith("run-result", "certificate", "certificate-public"); err != nil {
		return err
	}
	mux.HandleFunc("GET /certificates/{id}", h.signedIn(h.certificatePage))
	mux.HandleFunc("POST /certificates/{id}/publish", h.signedIn(h.publishCertificate))
	mux.HandleFunc("GET /c/{public}", h.publicCertificate)
	return nil
}

type certificateData struct {
	B      *runs.Batch
	Result *resultView
	// PublicURL is the public address while published; CanPublish shows
	// the owners' control.
	PublicURL  string
	CanPublish bool
	RunPath    string
}

func (h *handler) certificatePage(w http.ResponseWriter, r *http.Request) {
	if !h.inOrg(w, r) {
		return
	}
	p := principalOf(r.Context())
	c, err := h.runs.Certificate(r.Context(), p, r.PathValue("id"))
	if err != nil {
		if ce := core.AsError(err); ce.Code == core.CodeBatchNotFound || ce.Code == core.CodeMissingBatchID {
			h.notFound(w, r)
			return
		}
		h.failed(w, r, err)
		return
	}
	d := &certificateData{B: c.Batch, Result: resultOf(c.Batch, false), RunPath: runPath(c.Batch),
		CanPublish: h.people.Allowed(r.Context(), p, core.ActionOrgSettings)}
	if c.PublicID != "" {
		d.PublicURL = h.origin.String() + "/c/" + url.PathEscape(c.PublicID)
	}
	v := newView("Certificate", p)
	switch r.URL.Query().Get("done") {
	case "published":
		v.Notice = "Published: anyone with the address below can read this certificate."
	case "unpublished":
		v.Notice = "Unpublished: the public address no longer answers."
	}
	v.Nav, v.Wide, v.Data = "runs", true, d
	h.render(w, r, http.StatusOK, "certificate", v)
}

// publishCertificate turns the public page on (publish=on) or off.
func (h *handler) publishCertificate(w http.ResponseWriter, r *http.Request) {
	if !h.inOrg(w, r) {
		return
	}
	on := r.PostFormValue("publish") == "on"
	id := r.PathValue("id")
	if _, err := h.runs.PublishCertificate(r.Context(), principalOf(r.Context()), id, on); err != nil {
		if ce := core.AsError(err); ce.Code == core.CodeBatchNotFound {
			h.notFound(w, r)
			return
		}
		h.failed(w, r, err)
		return
	}
	done := "unpublished"
	if on {
		done = "published"
	}
	http.Redirect(w, r, "/certificates/"+url.PathEscape(id)+"?done="+done, http.StatusSeeOther)
}

// publicCertificate is a published certificate, for anyone, signed in or
// not; anything else at its address is 404.
func (h *handler) publicCertificate(w http.ResponseWriter, r *http.Request) {
	b, err := h.runs.PublicCertificate(r.Context(), r.PathValue("public"))
	if err != nil {
		if errors.Is(err, core.ErrNotFound) {
			h.notFound(w, r)
			return
		}
		h.failed(w, r, err)
		return
	}
	v := newView("Certificate of "+b.ModeID, nil)
	v.Data = &certificateData{B: b, Result: resultOf(b, true)}
	h.render(w, r, http.StatusOK, "certificate-public", v)
}
