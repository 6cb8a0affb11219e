package core

import (
	"strconv"
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
