package core

import (
	"strconv"
	"strings"
	"time"
)

// Spell writes a duration of whole days, hours or minutes as words ("7
// days", "an hour", "15 minutes"); any other duration as time.Duration
// prints it.
func Spell(d time.Duration) string {
	const day = 24 * time.Hour
	if d <= 0 || d%time.Minute != 0 {
		return d.String()
	}
	n, unit := int(d/time.Minute), "minute"
	switch {
	case d%day == 0:
		n, unit = int(d/day), "day"
	case d%time.Hour == 0:
		n, unit = int(d/time.Hour), "hour"
	}
	switch {
	case n == 1 && unit == "hour":
		return "an hour"
	case n == 1:
		return "a " + unit
	}
	return strconv.Itoa(n) + " " + unit + "s"
}

// Thousands writes an integer with thousands separators: 12,450.
func Thousands(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// List joins words as prose: "a", "a and b", "a, b and c"; "" for none.
func List(ws []string) string {
	switch len(ws) {
	case 0:
		return ""
	case 1:
		return ws[0]
	}
	return strings.Join(ws[:len(ws)-1], ", ") + " and " + ws[len(ws)-1]
}
