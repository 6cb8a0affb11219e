package bank

import (
	"fmt"
	"sort"
	"time"

	"github.com/conclavehq/conclave/core"
)

// Date families, computed with the time package on UTC midnights (the
// proleptic Gregorian calendar, no clock read anywhere).

func day(y int, m time.Month, d int) time.Time { return time.Date(y, m, d, 0, 0, 0, 0, time.UTC) }

// longDate writes "5 March 2031".
func longDate(t time.Time) string { return fmt.Sprintf("%d %s %d", t.Day(), t.Month(), t.Year()) }

// daysBetween counts days by Unix seconds: time.Time.Sub saturates after
// 292 years.
func daysBetween(a, b time.Time) int { return int((b.Unix() - a.Unix()) / 86400) }

// randomDay is a uniform day in [from, from+span).
func randomDay(r *rng, from time.Time, span int) time.Time { return from.AddDate(0, 0, r.intn(span)) }

func dateProblem(q string, want time.Time, decoys ...time.Time) problem {
	p := problem{question: q + " " + askFor("<day> <month> <year>"), answer: longDate(want), check: dateCheck(want)}
	for _, d := range append(decoys, want.AddDate(0, 0, -1), want.AddDate(0, 0, 1)) {
		if !d.Equal(want) {
			p.decoys = append(p.decoys, longDate(d))
		}
	}
	return p
}

func weekdayProblem(q string, want time.Weekday, decoys ...time.Weekday) problem {
	p := problem{question: q + " " + askFor("<weekday>"), answer: want.String(), check: choiceCheck(weekdays, want.String())}
	for _, d := range append(decoys, (want+6)%7, (want+1)%7) {
		if d != want {
			p.decoys = append(p.decoys, d.String())
		}
	}
	return p
}

// genDateBetween: days from one date to another.
func genDateBetween(r *rng, level int) (problem, bool) {
	var a, b time.Time
	switch level {
	case 1:
		y := r.between(2001, 2099)
		if y%4 == 0 {
			return problem{}, false
		}
		a = randomDay(r, day(y, time.January, 1), 300)
		b = a.AddDate(0, 0, r.between(5, 60))
	case 2:
		a = randomDay(r, day(1990, time.January, 1), 365*50)
		b = a.AddDate(0, 0, r.between(120, 800))
	default:
		a = randomDay(r, day(1700, time.January, 1), 365*500)
		b = a.AddDate(0, 0, r.between(3000, 60000))
	}
	want := daysBetween(a, b)
	// The usual slips: counting both ends, and treating every year as 365 days.
	noLeap := want - leapDaysBetween(a, b)
	return intProblem(fmt.Sprintf("How many days are there from %s to %s? Count %s but not %s.",
		longDate(a), longDate(b), longDate(b), longDate(a)), want, noLeap), true
}

// leapDaysBetween counts the 29 Februaries in (a, b].
func leapDaysBetween(a, b time.Time) int {
	n := 0
	for y := a.Year(); y <= b.Year(); y++ {
		f := day(y, time.February, 29)
		if f.Month() == time.February && f.After(a) && !f.After(b) {
			n++
		}
	}
	return n
}

// genDateAdd: the date a number of days after another.
func genDateAdd(r *rng, level int) (problem, bool) {
	var a time.Time
	var n int
	switch level {
	case 1:
		a = randomDay(r, day(2030, time.January, 1), 365*10)
		n = r.between(10, 40)
	case 2:
		a = randomDay(r, day(1995, time.January, 1), 365*40)
		n = r.between(100, 500)
	default:
		a = randomDay(r, day(1750, time.January, 1), 365*400)
		n = r.between(2000, 40000)
	}
	want := a.AddDate(0, 0, n)
	verb := "after"
	if level == 3 && r.chance(1, 2) {
		verb = "before"
		want = a.AddDate(0, 0, -n)
	}
	q := fmt.Sprintf("What is the date %s days %s %s?", commas(n), verb, longDate(a))
	return dateProblem(q, want, want.AddDate(1, 0, 0), want.AddDate(0, 0, 2)), true
}

// genWeekdayOffset: the weekday a number of days from a named weekday.
func genWeekdayOffset(r *rng, level int) (problem, bool) {
	from := time.Weekday(r.intn(7))
	n := r.byLevel(level, [3][2]int{{8, 40}, {100, 1000}, {1000, 100000}})
	q := fmt.Sprintf("Today is a %s. What day of the week will it be %s days from now?", from, commas(n))
	want := time.Weekday((int(from) + n) % 7)
	if level > 1 && r.chance(1, 2) {
		q = fmt.Sprintf("Today is a %s. What day of the week was it %s days ago?", from, commas(n))
		want = time.Weekday(((int(from)-n)%7 + 7) % 7)
	}
	return weekdayProblem(q, want), true
}

// genDateWeekday: the weekday of a date, from a nearby reference date
// (levels 1 and 2) or from nothing (level 3).
func genDateWeekday(r *rng, level int) (problem, bool) {
	var q string
	var t time.Time
	switch level {
	case 1:
		ref := randomDay(r, day(2025, time.January, 1), 365*20)
		ref = day(ref.Year(), ref.Month(), 1)
		t = ref.AddDate(0, 0, r.between(8, 27))
		q = fmt.Sprintf("%s is a %s. What day of the week is %s?", longDate(ref), ref.Weekday(), longDate(t))
	case 2:
		ref := randomDay(r, day(1980, time.January, 1), 365*60)
		t = ref.AddDate(0, 0, r.between(-700, 700))
		if abs(daysBetween(ref, t)) < 60 {
			return problem{}, false
		}
		q = fmt.Sprintf("%s was a %s. What day of the week is %s?", longDate(ref), ref.Weekday(), longDate(t))
	default:
		t = randomDay(r, day(1601, time.January, 1), 365*700)
		q = fmt.Sprintf("In the Gregorian calendar, what day of the week was (or will be) %s?", longDate(t))
	}
	return weekdayProblem(q, t.Weekday()), true
}

var ordinals = []string{"", "first", "second", "third", "fourth"}

// genNthWeekday: the date of the nth (or last) given weekday of a month.
func genNthWeekday(r *rng, level int) (problem, bool) {
	y := r.between(2020, 2060)
	if level == 3 {
		y = r.between(1850, 2250)
	}
	mo := time.Month(r.between(1, 12))
	wd := time.Weekday(r.intn(7))
	first := day(y, mo, 1)
	firstWd := first.AddDate(0, 0, (int(wd)-int(first.Weekday())+7)%7)
	var want time.Time
	var q string
	last := level >= 2 && r.chance(1, 3)
	if last {
		want = firstWd
		for want.AddDate(0, 0, 7).Month() == mo {
			want = want.AddDate(0, 0, 7)
		}
		q = fmt.Sprintf("What is the date of the last %s of %s %d?", wd, mo, y)
	} else {
		n := r.between(1, 4)
		want = firstWd.AddDate(0, 0, 7*(n-1))
		q = fmt.Sprintf("What is the date of the %s %s of %s %d?", ordinals[n], wd, mo, y)
	}
	if level == 1 {
		q = fmt.Sprintf("%s is a %s. ", longDate(first), first.Weekday()) + q
	}
	return dateProblem(q, want, want.AddDate(0, 0, 7), want.AddDate(0, 0, -7)), true
}

// genAgeOnDate: completed years of age on a date, and at level 3 the age in
// days.
func genAgeOnDate(r *rng, level int) (problem, bool) {
	born := randomDay(r, day(1930, time.January, 1), 365*70)
	if born.Month() == time.February && born.Day() == 29 {
		return problem{}, false // the age of a leap-day baby depends on the law of the land
	}
	on := born.AddDate(r.between(5, 80), 0, 0).AddDate(0, 0, r.between(-20, 20))
	if level == 1 {
		on = born.AddDate(r.between(5, 80), r.between(-5, 5), 0)
	}
	years := on.Year() - born.Year()
	if on.Month() < born.Month() || on.Month() == born.Month() && on.Day() < born.Day() {
		years--
	}
	name := pick(r, people)
	if level == 3 {
		return intProblem(fmt.Sprintf("%s was born on %s. How many days old is %s on %s (0 on the day of birth)?",
			name, longDate(born), name, longDate(on)), daysBetween(born, on), years*365), true
	}
	naive := on.Year() - born.Year()
	return intProblem(fmt.Sprintf("%s was born on %s. How old, in completed years, is %s on %s?",
		name, longDate(born), name, longDate(on)), years, naive), true
}

// weekdayDate writes "Tuesday 3 March 2031".
func weekdayDate(t time.Time) string { return t.Weekday().String() + " " + longDate(t) }

func isWeekend(t time.Time) bool { return t.Weekday() == time.Saturday || t.Weekday() == time.Sunday }

// genWorkingDays: the weekdays (Monday to Friday) in a span of dates,
// both ends counted, and at level 3 less the listed holidays that fall on
// weekdays.
func genWorkingDays(r *rng, level int) (problem, bool) {
	a := randomDay(r, day(2026, time.January, 1), 365*20)
	span := r.byLevel(level, [3][2]int{{9, 30}, {60, 200}, {150, 365}})
	b := a.AddDate(0, 0, span)
	var holidays []time.Time
	if level == 3 {
		seen := map[int]bool{}
		for len(holidays) < 4 {
			off := r.between(1, span-1)
			if !seen[off] {
				seen[off] = true
				holidays = append(holidays, a.AddDate(0, 0, off))
			}
		}
		sort.Slice(holidays, func(i, j int) bool { return holidays[i].Before(holidays[j]) })
	}
	closed := map[time.Time]bool{}
	weekendHolidays := 0
	for _, h := range holidays {
		closed[h] = true
		if isWeekend(h) {
			weekendHolidays++
		}
	}
	if level == 3 && (weekendHolidays == 0 || weekendHolidays == len(holidays)) {
		return problem{}, false
	}
	want, weekdaysOnly := 0, 0
	for t := a; !t.After(b); t = t.AddDate(0, 0, 1) {
		if !isWeekend(t) {
			weekdaysOnly++
			if !closed[t] {
				want++
			}
		}
	}
	if want == 0 {
		return problem{}, false
	}
	from, to := longDate(a), longDate(b)
	if level == 1 {
		from, to = weekdayDate(a), weekdayDate(b)
	}
	q := fmt.Sprintf("How many weekdays (Monday to Friday) are there from %s to %s, counting both of those dates?", from, to)
	decoys := []int{span + 1, (span + 1) * 5 / 7}
	if level == 3 {
		var hs []string
		for _, h := range holidays {
			hs = append(hs, longDate(h))
		}
		q = fmt.Sprintf("An office opens Monday to Friday, except on public holidays; a holiday that falls on a weekend "+
			"is not moved to another day. The public holidays from %s to %s are %s. On how many days is the office open "+
			"in that period, counting both of those dates?", from, to, core.List(hs))
		decoys = append(decoys, weekdaysOnly, weekdaysOnly-len(holidays))
	}
	return intProblem(q, want, decoys...), true
}
