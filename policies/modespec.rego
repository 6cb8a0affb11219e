# Conclave's mode-spec rules.
#
# To validate a mode spec Conclave evaluates data.conclave.modespec.refusals
# with this input (core/modes.Input; docs/modes.md describes each part):
#
#     {"spec": {…the spec as sent…},
#      "engines": [{"id", "family", "max_tier", "available"}, …],
#      "vocabulary": {"tiers": [lowest first], "staff_roles", "critiques", "depths", "max_rounds", "max_seats"},
#      "author": {"org_id", "org_ticker", "system"},
#      "taken_tickers": ["OWNR:MODE", …],
#      "floor": {"floor_usd", "recommended_usd"} or null}
#
# and reads back a set of refusals {"code", "message", "path"} (plus
# "suggested_ticker" on ticker_taken, "floor_usd" and "recommended_usd" on
# price_below_floor). Every rule that a spec breaks adds its refusal; an
# empty set accepts the spec. Go orders the list (price_override_not_allowed
# first, then by path). The vocabulary comes from core, so this policy and
# core.CheckMode agree on tier, role and critique names.
#
# Each rule is one `refusals contains …` block under the heading of its
# group in docs/modes.md. To tighten a rule, edit its block or its data
# table; to add one, add a block (docs/policies.md has a worked example).
#
# Go bounds what this policy is given (core/modes: at most 64 KiB, rows of
# at most max_seats seats, a pool no longer than the engine catalogue, at
# most 128 fields), so its cost is bounded only if no rule's cost grows
# faster than the spec: no rule compares every element of a list with
# every other (group by sorting or counting instead), and no partial
# object rule (`p[k] := v if …`) is built from the spec, because OPA's cost
# to build one grows with the square of its entries; an object
# comprehension costs linear time.
package conclave.modespec

# ---------------------------------------------------------------------------
# Data tables: edit these to change the limits.
# ---------------------------------------------------------------------------

name_min := 3

name_max := 60

# Words no mode name may contain (compared in lower case, word by word), and
# whole names no mode may take.
reserved_words := {"conclave"}

reserved_names := {"auto", "default", "system"}

description_max := 280

use_when_max := 500

seats_min := 2

# The most seats a call convenes (core/modes.MaxSeats). Go refuses a longer
# row before this policy runs, so this table can lower it, not raise it.
seats_max := input.vocabulary.max_seats

straggler_deadline_max_s := 300

# fidelity values that once chose rounds and critique, and the values that
# never changed anything.
fidelity_retired_values := {"draft", "fast", "high", "max"}

fidelity_inert_values := {"", "standard", "default"}

known_fields := {
	"name", "ticker", "description", "use_when", "min_tier", "seats", "seats_by_tier",
	"pool", "family_diversity", "staff", "critique", "max_rounds", "quorum",
	"straggler_deadline_s", "hedge_percentile", "express_threshold", "cost_ceiling_usd",
	"api_commercial", "fidelity",
}

known_commercial_fields := {
	"price_tier", "q_surcharge_by_depth", "q_surcharge_usd",
	"q_surcharge_express_usd", "price_override_acknowledged",
}

# ---------------------------------------------------------------------------
# The input, read defensively.
# ---------------------------------------------------------------------------

spec := input.spec if {
	is_object(input.spec)
} else := {}

author := input.author if {
	is_object(input.author)
} else := {}

org_id := author.org_id if {
	is_string(author.org_id)
} else := ""

org_ticker := author.org_ticker if {
	is_string(author.org_ticker)
} else := ""

system_mode if author.system == true

tiers := input.vocabulary.tiers

tier_rank[t] := i + 1 if some i, t in tiers

lowest_tier := tiers[0]

highest_tier := tiers[count(tiers) - 1]

engines := {e.id: e | some e in input.engines}

taken := {t | some t in input.taken_tickers}

has(obj, key) if {
	is_object(obj)
	obj[key] != null
}

is_int(x) if {
	is_number(x)
	x == round(x)
}

# ---------------------------------------------------------------------------
# Other: unknown fields and values out of type or range (invalid_value).
# ---------------------------------------------------------------------------

refusals contains refusal("invalid_value", sprintf("Unknown field %q.", [k]), k) if {
	some k, _ in spec
	not k in known_fields
}

refusals contains refusal("invalid_value", "critique is required: always, deep or never.", "critique") if {
	not has(spec, "critique")
}

refusals contains refusal("invalid_value", sprintf("critique %v is not one of %v.", [spec.critique, input.vocabulary.critiques]), "critique") if {
	has(spec, "critique")
	not spec.critique in input.vocabulary.critiques
}

refusals contains refusal("invalid_value", sprintf("max_rounds is a whole number from 1 to %d.", [input.vocabulary.max_rounds]), "max_rounds") if {
	not int_in(spec, "max_rounds", 1, input.vocabulary.max_rounds)
}

refusals contains refusal("invalid_value", sprintf("quorum is a whole number from 0 to the %d seats of the smallest row.", [smallest_row]), "quorum") if {
	has(spec, "quorum")
	count(rows) > 0
	not int_in(spec, "quorum", 0, smallest_row)
}

refusals contains refusal("invalid_value", sprintf("straggler_deadline_s is a number of seconds from 0 to %d.", [straggler_deadline_max_s]), "straggler_deadline_s") if {
	has(spec, "straggler_deadline_s")
	not number_in(spec.straggler_deadline_s, 0, straggler_deadline_max_s)
}

refusals contains refusal("invalid_value", "hedge_percentile is a number from 0 to 100.", "hedge_percentile") if {
	has(spec, "hedge_percentile")
	not number_in(spec.hedge_percentile, 0, 100)
}

refusals contains refusal("invalid_value", "express_threshold is a number from 0 to 1 (0 turns the express lane off).", "express_threshold") if {
	has(spec, "express_threshold")
	not number_in(spec.express_threshold, 0, 1)
}

refusals contains refusal("invalid_value", "cost_ceiling_usd is a positive number of dollars.", "cost_ceiling_usd") if {
	not positive(spec.cost_ceiling_usd)
}

int_in(obj, key, lo, hi) if {
	is_int(obj[key])
	obj[key] >= lo
	obj[key] <= hi
}

number_in(x, lo, hi) if {
	is_number(x)
	x >= lo
	x <= hi
}

positive(x) if {
	is_number(x)
	x > 0
}

# fidelity is retired: a value that once did something points to what
# replaced it; a value that never did anything is refused as inert.
refusals contains refusal("fidelity_retired", sprintf("fidelity %q is retired: set critique and max_rounds instead.", [spec.fidelity]), "fidelity") if {
	spec.fidelity in fidelity_retired_values
}

refusals contains refusal("fidelity_inert", sprintf("fidelity %q has no effect; remove it.", [spec.fidelity]), "fidelity") if {
	spec.fidelity in fidelity_inert_values
}

refusals contains refusal("invalid_value", "fidelity is retired and takes no other value; remove it.", "fidelity") if {
	has(spec, "fidelity")
	not spec.fidelity in fidelity_retired_values
	not spec.fidelity in fidelity_inert_values
}

# ---------------------------------------------------------------------------
# Listing: name, ticker, description, use_when; the owner.
# ---------------------------------------------------------------------------

name := spec.name if {
	is_string(spec.name)
} else := ""

name_punctuation := `[ \-'&.,]`

refusals contains refusal("invalid_value", "name is a string.", "name") if {
	has(spec, "name")
	not is_string(spec.name)
}

refusals contains refusal("name_too_short", sprintf("The name needs at least %d characters.", [name_min]), "name") if {
	not bad_type(spec, "name")
	count(name) < name_min
}

refusals contains refusal("name_too_long", sprintf("The name has %d characters; the most is %d.", [count(name), name_max]), "name") if {
	count(name) > name_max
}

refusals contains refusal("name_bad_chars", "The name may hold only letters, digits, spaces and - ' & . ,", "name") if {
	not regex.match(`^[\p{L}\p{N} \-'&.,]*$`, name)
}

refusals contains refusal("name_edge_punctuation", "The name must start and end with a letter or a digit.", "name") if {
	name != ""
	some edge in [substring(name, 0, 1), substring(name, count(name) - 1, 1)]
	regex.match(sprintf("^%s$", [name_punctuation]), edge)
}

refusals contains refusal("name_reserved", sprintf("The name %q is reserved.", [name]), "name") if {
	reserved_name
}

reserved_name if lower(trim_space(name)) in reserved_names

# name_words is the name in lower case with each run of characters other
# than letters and digits made one space, and a space at each end: a
# reserved word is then one search for " word ", whatever the name's
# length, not a comparison per word of the name. Most names hold no
# reserved word anywhere, which one search of the name finds first.
name_words := concat("", [" ", regex.replace(lower(name), `[^\p{L}\p{N}]+`, " "), " "])

reserved_name if {
	some word in reserved_words
	contains(lower(name), word)
	contains(name_words, concat("", [" ", word, " "]))
}

bad_type(obj, key) if {
	has(obj, key)
	not is_string(obj[key])
}

ticker := spec.ticker if {
	is_string(spec.ticker)
} else := ""

refusals contains refusal("ticker_required", "The mode needs a four-letter ticker.", "ticker") if {
	not bad_type(spec, "ticker")
	ticker == ""
}

refusals contains refusal("ticker_invalid", "The ticker is exactly four letters A to Z (only the mode part; the organisation part is added).", "ticker") if {
	bad_type(spec, "ticker")
}

refusals contains refusal("ticker_invalid", sprintf("The ticker %q is not exactly four letters A to Z (only the mode part; the organisation part is added).", [ticker]), "ticker") if {
	ticker != ""
	not regex.match(`^[A-Z]{4}$`, ticker)
}

full_ticker(t) := concat(":", [org_ticker, t])

letters := split("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "")

# Free tickers near the one asked for: its last letter changed, then its
# last two, in alphabetical order.
ticker_suggestions := array.concat(
	[c |
		some l in letters
		c := concat("", [substring(ticker, 0, 3), l])
		c != ticker
		not full_ticker(c) in taken
	],
	[c |
		some l1 in letters
		some l2 in letters
		c := concat("", [substring(ticker, 0, 2), l1, l2])
		c != ticker
		not full_ticker(c) in taken
	],
)

refusals contains object.union(
	refusal("ticker_taken", sprintf("The ticker %s is in use.", [full_ticker(ticker)]), "ticker"),
	{"suggested_ticker": ticker_suggestions[0]},
) if {
	regex.match(`^[A-Z]{4}$`, ticker)
	org_ticker != ""
	full_ticker(ticker) in taken
}

refusals contains refusal("invalid_value", "description is a string.", "description") if {
	bad_type(spec, "description")
}

description := spec.description if {
	is_string(spec.description)
} else := ""

refusals contains refusal("description_too_long", sprintf("The description has %d characters; the most is %d.", [count(description), description_max]), "description") if {
	count(description) > description_max
}

# The characters no description or use_when may hold: <, > and the
# control characters. A text is searched for each (a native search, about
# twenty times faster than a regular expression over a long text).
forbidden_chars := {
	"<", ">", "\u007f",
	"\u0000", "\u0001", "\u0002", "\u0003", "\u0004", "\u0005", "\u0006", "\u0007",
	"\u0008", "\u0009", "\u000a", "\u000b", "\u000c", "\u000d", "\u000e", "\u000f",
	"\u0010", "\u0011", "\u0012", "\u0013", "\u0014", "\u0015", "\u0016", "\u0017",
	"\u0018", "\u0019", "\u001a", "\u001b", "\u001c", "\u001d", "\u001e", "\u001f",
}

has_forbidden_char(text) if {
	some c in forbidden_chars
	contains(text, c)
}

refusals contains refusal("description_bad_chars", "The description may not hold <, > or control characters.", "description") if {
	has_forbidden_char(description)
}

use_when := spec.use_when if {
	is_string(spec.use_when)
} else := ""

refusals contains refusal("use_when_invalid", "use_when is a sentence saying when to pick this mode, without <, > or control characters.", "use_when") if {
	use_when_bad
}

use_when_bad if not is_string(spec.use_when)

use_when_bad if trim_space(use_when) == ""

use_when_bad if has_forbidden_char(use_when)

refusals contains refusal("use_when_too_long", sprintf("use_when has %d characters; the most is %d.", [count(use_when), use_when_max]), "use_when") if {
	count(use_when) > use_when_max
}

refusals contains refusal("org_required", "Modes belong to organisations: the author has none.", "") if {
	not system_mode
	org_id == ""
}

# ---------------------------------------------------------------------------
# Price.
# ---------------------------------------------------------------------------

commercial := spec.api_commercial if {
	is_object(spec.api_commercial)
} else := {}

refusals contains refusal("invalid_value", "api_commercial is an object.", "api_commercial") if {
	has(spec, "api_commercial")
	not is_object(spec.api_commercial)
}

refusals contains refusal("invalid_value", sprintf("Unknown field %q.", [k]), concat(".", ["api_commercial", k])) if {
	some k, _ in commercial
	not k in known_commercial_fields
}

refusals contains refusal("price_override_not_allowed", "price_override_acknowledged is not accepted: any price at or above the floor is allowed without it. Remove the field.", "api_commercial.price_override_acknowledged") if {
	"price_override_acknowledged" in object.keys(commercial)
}

by_depth := commercial.q_surcharge_by_depth if {
	is_object(commercial.q_surcharge_by_depth)
} else := {}

refusals contains refusal("price_required", "Set a price: api_commercial.q_surcharge_by_depth or api_commercial.q_surcharge_usd.", "api_commercial") if {
	count(by_depth) == 0
	not has(commercial, "q_surcharge_usd")
}

refusals contains refusal("invalid_value", "q_surcharge_by_depth is an object from depth (light, medium, deep) to dollars.", "api_commercial.q_surcharge_by_depth") if {
	has(commercial, "q_surcharge_by_depth")
	not is_object(commercial.q_surcharge_by_depth)
}

refusals contains refusal("invalid_value", sprintf("Unknown depth %q (light, medium, deep).", [d]), depth_path(d)) if {
	some d, _ in by_depth
	not d in input.vocabulary.depths
}

refusals contains refusal("invalid_value", "Give deep or hard (the same band), not both.", "api_commercial.q_surcharge_by_depth") if {
	has(by_depth, "deep")
	has(by_depth, "hard")
}

depth_path(d) := concat(".", ["api_commercial.q_surcharge_by_depth", d])

# prices maps the path of every price the spec sets to its value. A price
# for an unknown depth is refused as such, and not read.
prices := object.union({depth_path(d): v | some d, v in by_depth; d in input.vocabulary.depths}, flat_prices)

flat_prices := {concat(".", ["api_commercial", k]): commercial[k] |
	some k in ["q_surcharge_usd", "q_surcharge_express_usd"]
	has(commercial, k)
}

refusals contains refusal("invalid_value", "A price is a number of dollars, zero or more.", p) if {
	some p, v in prices
	not number_in(v, 0, 1000000)
}

refusals contains refusal("invalid_value", "price_tier is a string.", "api_commercial.price_tier") if {
	bad_type(commercial, "price_tier")
}

# The floor (core/modes.Floor, worked out in Go) binds the surcharges a call
# is billed by depth or flat; the express surcharge is exempt, because an
# express call runs one engine alone.
refusals contains object.union(
	refusal("price_below_floor", sprintf("The price %v is under this mode's floor of %v dollars.", [v, input.floor.floor_usd]), p),
	{"floor_usd": input.floor.floor_usd, "recommended_usd": input.floor.recommended_usd},
) if {
	is_object(input.floor)
	some p, v in prices
	p != "api_commercial.q_surcharge_express_usd"
	is_number(v)
	v >= 0
	v < input.floor.floor_usd
}

# ---------------------------------------------------------------------------
# Seats: which rows the spec gives.
# ---------------------------------------------------------------------------

has_seats if has(spec, "seats")

has_by_tier if has(spec, "seats_by_tier")

by_tier := spec.seats_by_tier if {
	is_object(spec.seats_by_tier)
} else := {}

min_tier := spec.min_tier if has(spec, "min_tier")

refusals contains refusal("seat_selection_required", "Give seats (with min_tier) or seats_by_tier.", "") if {
	not has_seats
	not has_by_tier
}

refusals contains refusal("seats_ambiguous", "Give seats or seats_by_tier, not both.", "") if {
	has_seats
	has_by_tier
}

refusals contains refusal("invalid_value", "seats is a list of seats.", "seats") if {
	has_seats
	not is_array(spec.seats)
}

refusals contains refusal("seats_by_tier_invalid", "seats_by_tier is an object from tier to a list of seats, with at least one tier.", "seats_by_tier") if {
	has_by_tier
	not by_tier_well_formed
}

by_tier_well_formed if {
	count(by_tier) > 0
	every _, row in by_tier {
		is_array(row)
	}
}

refusals contains refusal("seat_tier_unknown", sprintf("%q is not a tier (%v).", [t, tiers]), concat(".", ["seats_by_tier", t])) if {
	some t, _ in by_tier
	not tier_rank[t]
}

refusals contains refusal("seat_tier_unknown", sprintf("min_tier %v is not a tier (%v).", [min_tier, tiers]), "min_tier") if {
	has(spec, "min_tier")
	not tier_rank[min_tier]
}

refusals contains refusal("tier_required", "A single seats row needs min_tier: the lowest tier it serves.", "min_tier") if {
	has_seats
	not has_by_tier
	not has(spec, "min_tier")
}

by_tier_ranks := {tier_rank[t] | some t, _ in by_tier; tier_rank[t]}

refusals contains refusal("seat_tiers_not_contiguous", "seats_by_tier skips a tier: give rows for consecutive tiers.", "seats_by_tier") if {
	count(by_tier_ranks) > 0
	(max(by_tier_ranks) - min(by_tier_ranks)) + 1 != count(by_tier_ranks)
}

lowest_row_tier := tiers[min(by_tier_ranks) - 1] if count(by_tier_ranks) > 0

refusals contains refusal("seat_tiers_min_tier_mismatch", sprintf("min_tier is %v but the lowest row of seats_by_tier is %s.", [min_tier, lowest_row_tier]), "min_tier") if {
	tier_rank[min_tier]
	min_tier != lowest_row_tier
}

# rows are the seat rows to check: each row of seats_by_tier at its tier,
# or the one seats row at the highest tier it serves (every tier from
# min_tier up), which is where its engines are held and its pool is
# thinnest.
rows contains {"tier": t, "path": concat(".", ["seats_by_tier", t]), "seats": row, "by_tier": true} if {
	some t, row in by_tier
	tier_rank[t]
	is_array(row)
}

rows contains {"tier": highest_tier, "path": "seats", "seats": spec.seats, "by_tier": false} if {
	not has_by_tier
	is_array(spec.seats)
}

seat_path(r, i) := sprintf("%s[%d]", [r.path, i])

is_auto(seat) if seat.engine == "auto"

auto_row(r) if {
	count(r.seats) > 0
	every seat in r.seats {
		is_auto(seat)
	}
}

any_auto if {
	some r in rows
	some seat in r.seats
	is_auto(seat)
}

auto_rows := {r | some r in rows; auto_row(r)}

smallest_row := min({count(r.seats) | some r in rows}) if {
	count(rows) > 0
} else := 0

highest_seat_rank := max({tier_rank[r.tier] | some r in rows}) if count(rows) > 0

refusals contains refusal("invalid_value", "A seat is an object with an engine id (or \"auto\") and an optional backup.", seat_path(r, i)) if {
	some r in rows
	some i, seat in r.seats
	not well_formed_seat(seat)
}

well_formed_seat(seat) if {
	is_object(seat)
	is_string(seat.engine)
	seat.engine != ""
	every k, v in seat {
		k in {"engine", "backup"}
		is_string(v)
	}
}

refusals contains refusal("six_seats_required", sprintf("A seat row holds %d to %d seats; this one has %d.", [seats_min, seats_max, count(r.seats)]), r.path) if {
	some r in rows
	not number_in(count(r.seats), seats_min, seats_max)
}

# The engines a fixed seat names: its primary and its backup, with paths.
seat_refs contains {"id": seat.engine, "path": concat(".", [seat_path(r, i), "engine"]), "tier": r.tier} if {
	some r in rows
	some i, seat in r.seats
	well_formed_seat(seat)
	not is_auto(seat)
}

seat_refs contains {"id": seat.backup, "path": concat(".", [seat_path(r, i), "backup"]), "tier": r.tier} if {
	some r in rows
	some i, seat in r.seats
	well_formed_seat(seat)
	not is_auto(seat)
	is_string(seat.backup)
	seat.backup != ""
}

refusals contains refusal("seat_engine_not_found", sprintf("No engine %q; list_engines names them.", [ref.id]), ref.path) if {
	some ref in all_refs
	not engines[ref.id]
}

refusals contains refusal("engine_unavailable", sprintf("Engine %q is not available to fill seats now.", [ref.id]), ref.path) if {
	some ref in all_refs
	engines[ref.id].available == false
}

refusals contains refusal("seat_engine_above_tier", sprintf("Engine %q fills seats up to %s, below this row's tier %s.", [ref.id, engines[ref.id].max_tier, ref.tier]), ref.path) if {
	some ref in seat_refs
	tier_rank[engines[ref.id].max_tier] < tier_rank[ref.tier]
}

# A row's seats of each engine, found by sorting [engine, index] pairs: the
# seats of one engine are then next to each other, its first seat first,
# so one pass finds every later seat (comparing each seat with every
# earlier one would cost the square of the row).
refusals contains refusal("duplicate_seat_engine", sprintf("Engine %q already sits at %s.", [e, seat_path(r, firsts[e])]), concat(".", [seat_path(r, i), "engine"])) if {
	some r in rows
	seats := engine_seats(r)
	firsts := {e: i | some k, [e, i] in seats; run_start(seats, k)}
	some k, [e, i] in seats
	not run_start(seats, k)
	well_formed_seat(r.seats[i])
}

# engine_seats(r) are the sorted [engine, index] pairs of row r's seats that
# name a fixed engine (a malformed seat too: it still takes the engine's
# first place).
engine_seats(r) := sort([[seat.engine, i] |
	some i, seat in r.seats
	is_object(seat)
	seat.engine
	not is_auto(seat)
])

run_start(_, 0)

run_start(seats, k) if seats[k - 1][0] != seats[k][0]

refusals contains refusal("single_family_row", sprintf("Every seat of this row is from the %s family; seat at least two families.", [fam]), r.path) if {
	some r in rows
	count(r.seats) >= 2
	every seat in r.seats {
		well_formed_seat(seat)
		not is_auto(seat)
		engines[seat.engine]
	}
	families := {engines[seat.engine].family | some seat in r.seats}
	count(families) == 1
	some fam in families
}

# ---------------------------------------------------------------------------
# Seat rows by tier.
# ---------------------------------------------------------------------------

refusals contains refusal("seats_by_tier_needs_fixed", "Every row of seats_by_tier is auto seats: fix engines in a row, or write one seats row with min_tier.", "seats_by_tier") if {
	by_tier_rows := {r | some r in rows; r.by_tier}
	count(by_tier_rows) > 0
	every r in by_tier_rows {
		auto_row(r)
	}
}

refusals contains refusal("auto_rows_differ_by_tier", sprintf("The auto rows of seats_by_tier hold different numbers of seats (%v).", [sizes]), "seats_by_tier") if {
	sizes := {count(r.seats) | some r in auto_rows; r.by_tier}
	count(sizes) > 1
}

# Staff held to a tier above every seat row: the mode never runs that tier.
refusals contains refusal("seat_tiers_below_staff", sprintf("Staff %s is held to %s, above the highest seat tier of the mode.", [role, st.tier]), concat(".", ["staff", role, "tier"])) if {
	some role, st in staff
	tier_rank[st.tier] > highest_seat_rank
}

# ---------------------------------------------------------------------------
# Auto seats.
# ---------------------------------------------------------------------------

pool := spec.pool if {
	is_array(spec.pool)
} else := []

refusals contains refusal("invalid_value", "pool is a list of engine ids.", "pool") if {
	has(spec, "pool")
	not pool_well_formed
}

pool_well_formed if {
	is_array(spec.pool)
	every id in spec.pool {
		is_string(id)
	}
}

refusals contains refusal("invalid_value", "A pool is only for auto seats; this mode has none.", "pool") if {
	count(pool) > 0
	not any_auto
}

refusals contains refusal("auto_needs_fixed_pool", "Auto seats are drawn from pool: list its engines (fixed ids, not auto).", "pool") if {
	any_auto
	not system_mode
	not fixed_pool
}

fixed_pool if {
	count(pool) > 0
	not "auto" in pool
}

pool_refs contains {"id": id, "path": sprintf("pool[%d]", [i])} if {
	some i, id in pool
	is_string(id)
	id != "auto"
}

staff_refs contains {"id": st[k], "path": concat(".", ["staff", role, k])} if {
	some role, st in staff
	some k in ["engine", "backup"]
	is_string(st[k])
	not st[k] in {"", "auto"}
}

all_refs := (seat_refs | pool_refs) | staff_refs

refusals contains refusal("auto_seats_mixed", "A row is all auto seats or all fixed engines.", r.path) if {
	some r in rows
	has_auto_seat(r)
	has_fixed_seat(r)
}

has_auto_seat(r) if {
	some seat in r.seats
	is_auto(seat)
}

has_fixed_seat(r) if {
	some seat in r.seats
	well_formed_seat(seat)
	not is_auto(seat)
}

refusals contains refusal("auto_seat_backup", "An auto seat takes its backup from the pool; remove backup.", concat(".", [seat_path(r, i), "backup"])) if {
	some r in rows
	some i, seat in r.seats
	is_auto(seat)
	has(seat, "backup")
}

# eligible(t) are the pool's engines that can fill an auto seat at tier t.
eligible(t) := {id |
	some id in pool
	e := engines[id]
	e.available == true
	tier_rank[e.max_tier] >= tier_rank[t]
}

refusals contains refusal("auto_picked_needs_backup", sprintf("At tier %s the pool has %d eligible engines for %d auto seats; each picked seat needs a backup, so add engines.", [r.tier, count(eligible(r.tier)), count(r.seats)]), r.path) if {
	fixed_pool
	some r in auto_rows
	count(eligible(r.tier)) <= count(r.seats)
}

has_diversity if has(spec, "family_diversity")

refusals contains refusal("family_diversity_needs_auto", "family_diversity governs auto seats; this mode has none.", "family_diversity") if {
	has_diversity
	not any_auto
}

refusals contains refusal("family_diversity_invalid", "family_diversity is a whole number from 1 to the seats of each auto row and the families its pool offers.", "family_diversity") if {
	has_diversity
	any_auto
	fixed_pool
	not diversity_fits
}

diversity_fits if {
	d := spec.family_diversity
	is_int(d)
	d >= 1
	every r in auto_rows {
		d <= count(r.seats)
		d <= count({engines[id].family | some id in eligible(r.tier)})
	}
}

# ---------------------------------------------------------------------------
# Staff.
# ---------------------------------------------------------------------------

# staff are the spec's known roles that are objects: an unknown role is
# refused as such (staff_role_unknown), and what it holds is not read.
staff := {role: st | some role, st in spec.staff; is_object(st); role in input.vocabulary.staff_roles} if {
	is_object(spec.staff)
} else := {}

refusals contains refusal("invalid_value", "staff is an object from role to {engine, backup, tier}.", "staff") if {
	has(spec, "staff")
	not is_object(spec.staff)
}

refusals contains refusal("staff_role_unknown", sprintf("%q is not a staff role (%v).", [role, input.vocabulary.staff_roles]), concat(".", ["staff", role])) if {
	some role, _ in spec.staff
	not role in input.vocabulary.staff_roles
}

refusals contains refusal("invalid_value", "A staff role is an object {engine, backup, tier}.", concat(".", ["staff", role])) if {
	some role, st in spec.staff
	role in input.vocabulary.staff_roles
	not is_object(st)
}

refusals contains refusal("invalid_value", sprintf("Unknown field %q.", [k]), concat(".", ["staff", role, k])) if {
	some role, st in staff
	some k, _ in st
	not k in {"engine", "backup", "tier"}
}

refusals contains refusal("invalid_value", "A staff engine or backup is an engine id.", concat(".", ["staff", role, k])) if {
	some role, st in staff
	some k in ["engine", "backup"]
	bad_type(st, k)
}

refusals contains refusal("invalid_value", sprintf("Staff %s names no engine.", [role]), concat(".", ["staff", role, "engine"])) if {
	some role, st in staff
	object.get(st, "engine", "") == ""
	object.get(st, "backup", "") == ""
}

refusals contains refusal("staff_auto_not_allowed", "Staff roles name fixed engines; auto is for seats.", concat(".", ["staff", role, k])) if {
	some role, st in staff
	some k in ["engine", "backup"]
	st[k] == "auto"
}

refusals contains refusal("staff_backup_without_primary", sprintf("Staff %s has a backup but no engine.", [role]), concat(".", ["staff", role, "engine"])) if {
	some role, st in staff
	object.get(st, "engine", "") == ""
	object.get(st, "backup", "") != ""
}

refusals contains refusal("staff_backup_same_as_primary", sprintf("Staff %s has %q as both engine and backup.", [role, st.engine]), concat(".", ["staff", role, "backup"])) if {
	some role, st in staff
	is_string(st.engine)
	st.engine != ""
	st.backup == st.engine
}

refusals contains refusal("staff_tiers_shape", sprintf("Staff %s's tier is one tier name, not %v.", [role, st.tier]), concat(".", ["staff", role, "tier"])) if {
	some role, st in staff
	has(st, "tier")
	not is_string(st.tier)
}

refusals contains refusal("staff_tier_unknown", sprintf("%q is not a tier (%v).", [st.tier, tiers]), concat(".", ["staff", role, "tier"])) if {
	some role, st in staff
	is_string(st.tier)
	not tier_rank[st.tier]
}

refusals contains refusal("staff_tier_is_lowest", sprintf("Holding staff %s to %s says nothing: every engine reaches it. Remove tier.", [role, st.tier]), concat(".", ["staff", role, "tier"])) if {
	some role, st in staff
	st.tier == lowest_tier
}

refusals contains refusal("staff_engine_above_tier", sprintf("Staff %s is held to %s, but %q reaches only %s.", [role, st.tier, st[k], engines[st[k]].max_tier]), concat(".", ["staff", role, k])) if {
	some role, st in staff
	tier_rank[st.tier]
	some k in ["engine", "backup"]
	tier_rank[engines[st[k]].max_tier] < tier_rank[st.tier]
}

# ---------------------------------------------------------------------------
# System modes: every organisation sees them at every tier, so their seats
# are fixed, per tier, and no tier may go.
# ---------------------------------------------------------------------------

refusals contains refusal("system_mode_seats_untiered", "A system mode gives its seats as seats_by_tier.", "seats") if {
	system_mode
	has_seats
}

refusals contains refusal("system_mode_seats", "A system mode seats fixed engines, not auto seats.", r.path) if {
	system_mode
	some r in rows
	some seat in r.seats
	is_auto(seat)
}

refusals contains refusal("system_mode_tier_dropped", sprintf("A system mode keeps a seat row for every tier; %s has none.", [t]), concat(".", ["seats_by_tier", t])) if {
	system_mode
	has_by_tier
	some t in tiers
	not has(by_tier, t)
}

# ---------------------------------------------------------------------------
# The refusal shape.
# ---------------------------------------------------------------------------

refusal(code, message, path) := {"code": code, "message": message, "path": path}
