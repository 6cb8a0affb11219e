package web

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/core/access"
	"github.com/conclavehq/conclave/core/alerts"
)

// Spend alerts (core/alerts): a section of the settings page where owners
// set the monthly budget, the percentages of it to be alerted at, the
// balance floor and the webhook; and the overview's list of this month's
// crossings.

// alertsView is the settings page's alerts section.
type alertsView struct {
	Settings *alerts.Settings
	// Secret is the webhook secret just made: shown on this page only.
	Secret string
}

// alertsRoutes serves the alerts section's forms when the server has
// alerts.
func (h *handler) alertsRoutes(mux *http.ServeMux) error {
	if h.alerts == nil {
		return nil
	}
	mux.HandleFunc("POST /settings/alerts", h.signedIn(h.setAlertThresholds))
	mux.HandleFunc("POST /settings/alerts/webhook", h.signedIn(h.setAlertWebhook))
	mux.HandleFunc("POST /settings/alerts/webhook/remove", h.signedIn(h.removeAlertWebhook))
	return nil
}

// alertsInto reads the alerts section of the settings page into v, the
// form's values unless v already holds what was typed.
func (h *handler) alertsInto(r *http.Request, v *view) error {
	if h.alerts == nil {
		return nil
	}
	st, err := h.alerts.Settings(r.Context(), v.principal)
	if err != nil {
		return err
	}
	if v.Alerts == nil {
		v.Alerts = &alertsView{}
	}
	v.Alerts.Settings = st
	if _, typed := v.Values["percents"]; !typed {
		if st.Budget != nil {
			v.Values["budget"] = strings.TrimPrefix(usd(*st.Budget), "$")
		}
		var ps []string
		for _, p := range st.Percents {
			ps = append(ps, strconv.Itoa(p))
		}
		v.Values["percents"] = strings.Join(ps, ", ")
		if st.Floor != nil {
			v.Values["floor"] = strings.TrimPrefix(usd(*st.Floor), "$")
		}
	}
	return nil
}

// alertsRefused shows the settings page with err beside its field, or
// fails the page.
func (h *handler) alertsRefused(w http.ResponseWriter, r *http.Request, v *view, err error) {
	var fe *alerts.FieldError
	if errors.As(err, &fe) {
		v.Errors[fe.Field] = fe.Message
		h.settingsView(w, r, http.StatusUnprocessableEntity, v)
		return
	}
	h.failed(w, r, err)
}

// amountField reads an optional dollar amount of the form: nil when empty.
func amountField(r *http.Request, field string) (*core.Micros, error) {
	s := strings.TrimPrefix(strings.TrimSpace(r.PostFormValue(field)), "$")
	if s == "" {
		return nil, nil
	}
	m, err := core.ParseUSD(strings.ReplaceAll(s, ",", ""))
	if err != nil {
		return nil, &alerts.FieldError{Field: field, Message: "Enter an amount in dollars, such as 100 or 12.50, or leave it empty."}
	}
	return &m, nil
}

// setAlertThresholds sets the budget, percentages and floor.
func (h *handler) setAlertThresholds(w http.ResponseWriter, r *http.Request) {
	p := principalOf(r.Context())
	v := newView("Settings", p)
	for _, f := range []string{"budget", "percents", "floor"} {
		v.Values[f] = r.PostFormValue(f)
	}
	budget, err := amountField(r, "budget")
	if err != nil {
		h.alertsRefused(w, r, v, err)
		return
	}
	floor, err := amountField(r, "floor")
	if err != nil {
		h.alertsRefused(w, r, v, err)
		return
	}
	var percents []int
	for _, f := range strings.FieldsFunc(r.PostFormValue("percents"), func(c rune) bool { return c == ',' || c == ' ' || c == '%' }) {
		n, err := strconv.Atoi(f)
		if err != nil {
			h.alertsRefused(w, r, v, &alerts.FieldError{Field: "percents", Message: "Enter whole percentages separated by commas, such as 80, 90, 100."})
			return
		}
		percents = append(percents, n)
	}
	if err := h.alerts.SetThresholds(r.Context(), p, budget, percents, floor); err != nil {
		h.alertsRefused(w, r, v, err)
		return
	}
	http.Redirect(w, r, "/settings?done=alerts#alerts", http.StatusSeeOther)
}

// setAlertWebhook sets the webhook URL and shows its new secret, once.
func (h *handler) setAlertWebhook(w http.ResponseWriter, r *http.Request) {
	p := principalOf(r.Context())
	v := newView("Settings", p)
	raw := r.PostFormValue("webhook_url")
	secret, err := h.alerts.SetWebhook(r.Context(), p, raw)
	if err != nil {
		v.Values["webhook_url"] = raw
		h.alertsRefused(w, r, v, err)
		return
	}
	v.Alerts = &alertsView{Secret: secret}
	v.Notice = "Webhook saved. Copy its signing secret now: it is shown only this once."
	w.Header().Set("Cache-Control", "no-store")
	h.settingsView(w, r, http.StatusOK, v)
}

// removeAlertWebhook clears the webhook and its secret.
func (h *handler) removeAlertWebhook(w http.ResponseWriter, r *http.Request) {
	if err := h.alerts.RemoveWebhook(r.Context(), principalOf(r.Context())); err != nil {
		h.failed(w, r, err)
		return
	}
	http.Redirect(w, r, "/settings?done=webhook-removed#alerts", http.StatusSeeOther)
}

// crossedAlerts are the sentences of this month's crossings for the
// overview: owners only, none when the server has no alerts. A failure
// to read them leaves them out rather than failing the overview.
func (h *handler) crossedAlerts(r *http.Request, p *access.Principal) []string {
	if h.alerts == nil || !h.people.Allowed(r.Context(), p, core.ActionOrgSettings) {
		return nil
	}
	cs, err := h.alerts.Crossings(r.Context(), p)
	if err != nil {
		return nil
	}
	var base string
	if st, err := h.alerts.Settings(r.Context(), p); err == nil && st.Budget == nil {
		base = "monthly quota"
	} else {
		base = "budget"
	}
	out := make([]string, 0, len(cs))
	for _, c := range cs {
		out = append(out, crossingText(c, base))
	}
	return out
}

// crossingText says what c was, as the overview shows it.
func crossingText(c *alerts.Crossing, base string) string {
	on := c.At.UTC().Format("2 Jan")
	if c.Kind == alerts.KindBalance {
		return fmt.Sprintf("The balance fell below the %s floor on %s (it was %s).", usd(c.Limit), on, usd(c.Value))
	}
	return fmt.Sprintf("Monthly spend passed %d%% of the %s %s on %s (%s spent).", c.Percent, usd(c.Limit), base, on, usd(c.Value))
}
