package alerts

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/conclavehq/conclave/core"
)

// Headers of a webhook post.
const (
	// SignatureHeader carries "t=<unix seconds>,v1=<hex HMAC-SHA256>" of
	// "<t>.<body>" keyed with the webhook secret.
	SignatureHeader = "Conclave-Signature"
	// EventIDHeader carries the event's id, the same on every attempt: a
	// receiver deduplicates by it.
	EventIDHeader = "Conclave-Event-Id"
)

// Event is the JSON body of a webhook post.
type Event struct {
	// ID is the crossing's id (evt_…), the same on every attempt.
	ID string `json:"id"`
	// Type is "alert.monthly_spend" or "alert.balance".
	Type         string    `json:"type"`
	CreatedAt    time.Time `json:"created_at"`
	Organization string    `json:"organization"`
	// Period is the calendar month (UTC) the crossing counts in, "2026-11".
	Period string `json:"period"`
	// ThresholdPercent is the monthly-spend threshold; absent for the
	// balance floor.
	ThresholdPercent int `json:"threshold_percent,omitempty"`
	// BudgetUSD and SpentUSD are the monthly budget (or quota) and the
	// month's spend when it was noticed (monthly_spend).
	BudgetUSD *core.Dollars `json:"budget_usd,omitempty"`
	SpentUSD  *core.Dollars `json:"spent_usd,omitempty"`
	// FloorUSD and BalanceUSD are the balance floor and the balance when it
	// was noticed (balance).
	FloorUSD   *core.Dollars `json:"floor_usd,omitempty"`
	BalanceUSD *core.Dollars `json:"balance_usd,omitempty"`
}

// EventOf is the webhook body of c.
func EventOf(c *Crossing) *Event {
	e := &Event{ID: c.ID, Type: "alert." + string(c.Kind), CreatedAt: c.At.UTC(), Organization: c.OrgID,
		Period: c.Period.UTC().Format("2006-01")}
	limit, value := core.Dollars(c.Limit), core.Dollars(c.Value)
	if c.Kind == KindMonthlySpend {
		e.ThresholdPercent, e.BudgetUSD, e.SpentUSD = c.Percent, &limit, &value
	} else {
		e.FloorUSD, e.BalanceUSD = &limit, &value
	}
	return e
}

// Body is e as posted.
func (e *Event) Body() []byte {
	b, _ := json.Marshal(e) // a struct of plain fields always marshals
	return b
}

// Sign is the Conclave-Signature header of body sent at t.
func Sign(secret string, t time.Time, body []byte) string {
	ts := strconv.FormatInt(t.Unix(), 10)
	return "t=" + ts + ",v1=" + mac(secret, ts, body)
}

func mac(secret, ts string, body []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(ts))
	m.Write([]byte("."))
	m.Write(body)
	return hex.EncodeToString(m.Sum(nil))
}

// ErrSignature is a signature that does not verify.
var ErrSignature = errors.New("alerts: the signature does not verify")

// Verify checks header (a Conclave-Signature) against body and secret, and
// that its time is within tolerance of now: what a receiver does.
func Verify(secret, header string, body []byte, now time.Time, tolerance time.Duration) error {
	var ts string
	var sigs []string
	for _, part := range strings.Split(header, ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(part), "=")
		switch k {
		case "t":
			ts = v
		case "v1":
			sigs = append(sigs, v)
		}
	}
	unix, err := strconv.ParseInt(ts, 10, 64)
	if err != nil || len(sigs) == 0 {
		return ErrSignature
	}
	if d := now.Sub(time.Unix(unix, 0)); d > tolerance || d < -tolerance {
		return ErrSignature
	}
	want := mac(secret, ts, body)
	for _, s := range sigs {
		if hmac.Equal([]byte(s), []byte(want)) {
			return nil
		}
	}
	return ErrSignature
}
