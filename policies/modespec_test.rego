# Tests of modespec.rego: the valid specs, one test per group of rules, and
# the extra fields. The Go table in modespec_test.go reaches every code with
# a spec that breaks its rule alone; these tests read the rules directly.
# Run them with `go test ./policies/...` (or `opa test policies/`).
package conclave.modespec_test

import data.conclave.modespec

# ---------------------------------------------------------------------------
# Fixtures.
# ---------------------------------------------------------------------------

engines := [
	{"id": "sim/swift", "family": "sim-openai", "max_tier": "experience", "available": true},
	{"id": "sim/atlas", "family": "sim-openai", "max_tier": "plus", "available": true},
	{"id": "sim/atlas-frontier", "family": "sim-openai", "max_tier": "pro", "available": true},
	{"id": "sim/sonnet", "family": "sim-anthropic", "max_tier": "plus", "available": true},
	{"id": "sim/opus", "family": "sim-anthropic", "max_tier": "pro", "available": true},
	{"id": "sim/retired", "family": "sim-openai", "max_tier": "pro", "available": false},
	{"id": "sim/gemini-flash", "family": "sim-google", "max_tier": "plus", "available": true},
	{"id": "sim/gemini-pro", "family": "sim-google", "max_tier": "pro", "available": true},
]

vocabulary := {
	"tiers": ["experience", "plus", "pro"],
	"staff_roles": ["judge", "synthesis", "grounding", "classifier"],
	"critiques": ["always", "deep", "never"],
	"depths": ["light", "medium", "deep", "hard"],
	"max_rounds": 5,
	"max_seats": 6,
}

plus_row := [
	{"engine": "sim/atlas", "backup": "sim/gemini-flash"},
	{"engine": "sim/sonnet", "backup": "sim/atlas"},
	{"engine": "sim/gemini-flash", "backup": "sim/sonnet"},
]

valid_spec := {
	"name": "Acme Review Panel",
	"ticker": "PANL",
	"use_when": "Trade-offs worth a second opinion.",
	"seats_by_tier": {"plus": plus_row},
	"staff": {"judge": {"engine": "sim/sonnet", "backup": "sim/atlas"}},
	"critique": "deep",
	"max_rounds": 2,
	"quorum": 2,
	"cost_ceiling_usd": 1.5,
	"api_commercial": {"q_surcharge_by_depth": {"light": 0.05, "medium": 0.10, "deep": 0.15}},
}

auto_spec := {
	"name": "Acme Frontier Draw",
	"ticker": "DRAW",
	"use_when": "Hard questions.",
	"min_tier": "plus",
	"seats": [{"engine": "auto"}, {"engine": "auto"}],
	"pool": ["sim/atlas-frontier", "sim/gemini-pro", "sim/opus", "sim/atlas"],
	"family_diversity": 2,
	"critique": "always",
	"max_rounds": 1,
	"cost_ceiling_usd": 2,
	"api_commercial": {"q_surcharge_usd": 0.4},
}

# with_spec is an input for s, validated for Acme with ACME:TAKN taken and a
# floor of 2 cents.
with_spec(s) := {
	"spec": s,
	"engines": engines,
	"vocabulary": vocabulary,
	"author": {"org_id": "org_acme", "org_ticker": "ACME", "system": false},
	"taken_tickers": ["ACME:TAKN", "ACME:TAKA"],
	"floor": {"floor_usd": 0.02, "recommended_usd": 0.05},
}

refusals(s) := rs if {
	rs := modespec.refusals with input as with_spec(s)
}

codes(s) := {r.code | some r in refusals(s)}

# patch replaces top-level fields of valid_spec (object.union alone would
# merge nested objects).
patch(p) := replace(valid_spec, p)

replace(base, p) := object.union(object.remove(base, object.keys(p)), p)

# ---------------------------------------------------------------------------
# Accepted specs.
# ---------------------------------------------------------------------------

test_valid_spec_has_no_refusals if count(refusals(valid_spec)) == 0

test_auto_spec_has_no_refusals if count(refusals(auto_spec)) == 0

test_system_mode_needs_no_org if {
	s := patch({"seats_by_tier": {"experience": plus_row, "plus": plus_row, "pro": [
		{"engine": "sim/atlas-frontier", "backup": "sim/gemini-pro"},
		{"engine": "sim/gemini-pro", "backup": "sim/atlas-frontier"},
	]}})

	# plus_row at experience is fine: every engine reaches experience.
	inp := object.union(with_spec(s), {"author": {"org_id": "", "org_ticker": "CNCL", "system": true}})
	rs := modespec.refusals with input as inp
	count(rs) == 0
}

# ---------------------------------------------------------------------------
# Listing.
# ---------------------------------------------------------------------------

test_name_rules if {
	codes(patch({"name": "Ab"})) == {"name_too_short"}
	codes(patch({"name": concat("", ["A" | some _ in numbers.range(1, 61)])})) == {"name_too_long"}
	codes(patch({"name": "Acme!"})) == {"name_bad_chars"}
	codes(patch({"name": "-Acme"})) == {"name_edge_punctuation"}
	codes(patch({"name": "Default"})) == {"name_reserved"}
	codes(patch({"name": "conclave-panel"})) == {"name_reserved"}
	codes(patch({"name": "Ünïcode & Co., Ltd"})) == set()
	codes(patch({"name": 7})) == {"invalid_value"}
}

test_missing_name_is_too_short if codes(object.remove(valid_spec, ["name"])) == {"name_too_short"}

test_ticker_rules if {
	codes(object.remove(valid_spec, ["ticker"])) == {"ticker_required"}
	codes(patch({"ticker": "PAN1"})) == {"ticker_invalid"}
	codes(patch({"ticker": 1234})) == {"ticker_invalid"}
}

test_ticker_taken_suggests_a_free_one if {
	[r] := [r | some r in refusals(patch({"ticker": "TAKN"}))]
	r.code == "ticker_taken"
	r.suggested_ticker == "TAKB" # TAKA is taken too
}

test_description_and_use_when if {
	codes(patch({"description": "a\u0007b"})) == {"description_bad_chars"}
	codes(object.remove(valid_spec, ["use_when"])) == {"use_when_invalid"}
	codes(patch({"use_when": "<script>"})) == {"use_when_invalid"}
}

test_org_required_for_organisations if {
	inp := object.union(with_spec(valid_spec), {"author": {"org_id": "", "org_ticker": "", "system": false}})
	rs := modespec.refusals with input as inp
	{r.code | some r in rs} == {"org_required"}
}

# ---------------------------------------------------------------------------
# Price.
# ---------------------------------------------------------------------------

test_price_below_floor_carries_the_floor if {
	s := patch({"api_commercial": {"q_surcharge_usd": 0.01, "q_surcharge_express_usd": 0}})
	[r] := [r | some r in refusals(s)]
	r.code == "price_below_floor"
	r.path == "api_commercial.q_surcharge_usd"
	r.floor_usd == 0.02
	r.recommended_usd == 0.05
}

test_no_floor_no_floor_rule if {
	s := patch({"api_commercial": {"q_surcharge_usd": 0.01}})
	inp := object.union(with_spec(s), {"floor": null})
	rs := modespec.refusals with input as inp
	count(rs) == 0
}

test_price_rules if {
	codes(patch({"api_commercial": {}})) == {"price_required"}
	codes(patch({"api_commercial": {"q_surcharge_usd": 0.1, "price_override_acknowledged": false}})) == {"price_override_not_allowed"}
	codes(patch({"api_commercial": {"q_surcharge_by_depth": {"easy": 0.1}}})) == {"invalid_value"}
	codes(patch({"api_commercial": {"q_surcharge_by_depth": {"deep": 0.1, "hard": 0.1}}})) == {"invalid_value"}
	codes(patch({"api_commercial": {"q_surcharge_usd": -1}})) == {"invalid_value"}
}

# ---------------------------------------------------------------------------
# Seats.
# ---------------------------------------------------------------------------

test_seat_rules if {
	codes(patch({"seats_by_tier": {"plus": [plus_row[0]]}, "quorum": 1})) == {"six_seats_required"}
	codes(patch({"seats_by_tier": {"plus": [plus_row[0], plus_row[1], plus_row[0]]}})) == {"duplicate_seat_engine"}
	codes(patch({"seats_by_tier": {"plus": [plus_row[0], {"engine": "sim/nope"}]}})) == {"seat_engine_not_found"}
	codes(patch({"seats_by_tier": {"plus": [plus_row[1], {"engine": "sim/retired"}]}})) == {"engine_unavailable"}
	codes(patch({"seats_by_tier": {"plus": [plus_row[1], {"engine": "sim/swift"}]}})) == {"seat_engine_above_tier"}
	codes(patch({"seats_by_tier": {"plus": [plus_row[0], {"engine": "sim/atlas-frontier"}]}})) == {"single_family_row"}
	codes(object.remove(valid_spec, ["seats_by_tier"])) == {"seat_selection_required"}
	codes(patch({"seats": plus_row, "min_tier": "plus"})) == {"seats_ambiguous"}
}

# Every later seat of an engine is refused, each naming the engine's first
# seat; a malformed earlier seat of the engine counts as its first.
test_duplicate_seat_engine_names_the_first_seat if {
	a := {"engine": "sim/atlas", "backup": "sim/sonnet"}
	rs := refusals(patch({"seats_by_tier": {"plus": [plus_row[1], a, plus_row[2], a, a]}}))
	{[r.path, r.message] | some r in rs; r.code == "duplicate_seat_engine"} == {
		["seats_by_tier.plus[3].engine", "Engine \"sim/atlas\" already sits at seats_by_tier.plus[1]."],
		["seats_by_tier.plus[4].engine", "Engine \"sim/atlas\" already sits at seats_by_tier.plus[1]."],
	}
	malformed := refusals(patch({"seats_by_tier": {"plus": [{"engine": "sim/atlas", "spare": 1}, plus_row[1], a]}}))
	{[r.code, r.path] | some r in malformed} == {
		["invalid_value", "seats_by_tier.plus[0]"],
		["duplicate_seat_engine", "seats_by_tier.plus[2].engine"],
	}
}

# A row of vocabulary.max_seats seats passes the count; one more does not
# (Go refuses it first, before the policy runs).
test_seat_row_length_is_the_vocabulary_s if {
	six := [plus_row[0], plus_row[1], plus_row[2], {"engine": "sim/opus"}, {"engine": "sim/gemini-pro"}, {"engine": "sim/atlas-frontier"}]
	codes(patch({"seats_by_tier": {"plus": six}})) == set()
	codes(patch({"seats_by_tier": {"plus": array.concat(six, [{"engine": "sim/swift"}])}})) == {"six_seats_required", "seat_engine_above_tier"}
}

# Many prices, each checked once.
test_prices_by_depth_and_flat if {
	rs := refusals(patch({"api_commercial": {
		"q_surcharge_by_depth": {"light": 0.01, "medium": -1, "deep": 0.15, "easy": 0.2},
		"q_surcharge_usd": 0.01,
		"q_surcharge_express_usd": 0,
	}}))
	{[r.code, r.path] | some r in rs} == {
		["price_below_floor", "api_commercial.q_surcharge_by_depth.light"],
		["invalid_value", "api_commercial.q_surcharge_by_depth.medium"],
		["invalid_value", "api_commercial.q_surcharge_by_depth.easy"],
		["price_below_floor", "api_commercial.q_surcharge_usd"],
	}
}

test_seat_rows_by_tier if {
	codes(patch({"seats_by_tier": []})) == {"seats_by_tier_invalid"}
	codes(patch({"seats_by_tier": {"plus": plus_row, "max": plus_row}})) == {"seat_tier_unknown"}
	codes(patch({"seats_by_tier": {"experience": plus_row, "pro": [
		{"engine": "sim/atlas-frontier"},
		{"engine": "sim/gemini-pro"},
	]}})) == {"seat_tiers_not_contiguous"}
	codes(patch({"min_tier": "experience"})) == {"seat_tiers_min_tier_mismatch"}
	codes(object.remove(auto_spec, ["min_tier"])) == {"tier_required"}
}

# ---------------------------------------------------------------------------
# Staff.
# ---------------------------------------------------------------------------

staff(judge) := patch({"staff": {"judge": judge}})

test_staff_rules if {
	codes(patch({"staff": {"critic": {"engine": "sim/sonnet"}}})) == {"staff_role_unknown"}
	codes(staff({"engine": "auto"})) == {"staff_auto_not_allowed"}
	codes(staff({"engine": "sim/sonnet", "tier": {"plus": true}})) == {"staff_tiers_shape"}
	codes(staff({"engine": "sim/sonnet", "tier": "max"})) == {"staff_tier_unknown"}
	codes(staff({"engine": "sim/sonnet", "tier": "experience"})) == {"staff_tier_is_lowest"}
	codes(staff({"backup": "sim/sonnet"})) == {"staff_backup_without_primary"}
	codes(staff({"engine": "sim/sonnet", "backup": "sim/sonnet"})) == {"staff_backup_same_as_primary"}
	codes(staff({"engine": "sim/sonnet", "backup": "sim/swift", "tier": "plus"})) == {"staff_engine_above_tier"}
	codes(staff({"engine": "sim/gemini-pro", "tier": "pro"})) == {"seat_tiers_below_staff"}
	codes(staff({})) == {"invalid_value"}
}

# ---------------------------------------------------------------------------
# System modes.
# ---------------------------------------------------------------------------

system_codes(s) := {r.code | some r in rs} if {
	inp := object.union(with_spec(s), {"author": {"org_id": "", "org_ticker": "CNCL", "system": true}})
	rs := modespec.refusals with input as inp
}

test_system_mode_rules if {
	system_codes(valid_spec) == {"system_mode_tier_dropped"}
	system_codes(auto_spec) == {"system_mode_seats_untiered", "system_mode_seats"}
}

# ---------------------------------------------------------------------------
# Auto seats.
# ---------------------------------------------------------------------------

auto(p) := replace(auto_spec, p)

test_auto_rules if {
	codes(object.remove(auto_spec, ["pool"])) == {"auto_needs_fixed_pool"}
	codes(auto({"pool": ["auto"]})) == {"auto_needs_fixed_pool"}
	codes(auto({"seats": [{"engine": "auto"}, {"engine": "sim/gemini-pro"}]})) == {"auto_seats_mixed"}
	mixed := refusals(auto({"seats": [{"engine": "auto"}, {"engine": "sim/opus"}, {"engine": "auto"}, {"engine": "sim/gemini-pro"}]}))
	[r.path | some r in mixed; r.code == "auto_seats_mixed"] == ["seats"]
	codes(auto({"seats": [{"engine": "auto", "backup": "sim/atlas"}, {"engine": "auto"}]})) == {"auto_seat_backup"}

	# sim/atlas stops at plus: two engines reach pro for two seats, and
	# none is left as a backup.
	codes(auto({"pool": ["sim/atlas-frontier", "sim/gemini-pro", "sim/atlas"]})) == {"auto_picked_needs_backup"}
	codes(auto({"family_diversity": 3})) == {"family_diversity_invalid"}
	codes(auto({"family_diversity": 1.5})) == {"family_diversity_invalid"}
	codes(patch({"family_diversity": 2})) == {"family_diversity_needs_auto"}
	codes(patch({"pool": ["sim/atlas"]})) == {"invalid_value"}
}

test_auto_rows_by_tier if {
	two := [{"engine": "auto"}, {"engine": "auto"}]
	three := [{"engine": "auto"}, {"engine": "auto"}, {"engine": "auto"}]
	pool := ["sim/atlas-frontier", "sim/gemini-pro", "sim/opus", "sim/atlas", "sim/sonnet"]
	codes(patch({"seats_by_tier": {"plus": three, "pro": two}, "pool": pool})) == {"seats_by_tier_needs_fixed", "auto_rows_differ_by_tier"}
	codes(patch({"seats_by_tier": {"experience": plus_row, "plus": three, "pro": two}, "pool": pool})) == {"auto_rows_differ_by_tier"}
}

# ---------------------------------------------------------------------------
# Other.
# ---------------------------------------------------------------------------

test_other_rules if {
	codes(patch({"fidelity": "max"})) == {"fidelity_retired"}
	codes(patch({"fidelity": ""})) == {"fidelity_inert"}
	codes(patch({"fidelity": "ultra"})) == {"invalid_value"}
	codes(patch({"critique": "sometimes"})) == {"invalid_value"}
	codes(patch({"quorum": 4})) == {"invalid_value"}
	codes(patch({"express_threshold": 2})) == {"invalid_value"}
	codes(patch({"cost_ceiling_usd": 0})) == {"invalid_value"}
	codes(patch({"colour": "blue"})) == {"invalid_value"}
}

test_every_refusal_has_a_path_and_message if {
	s := patch({"name": "", "ticker": "x", "max_rounds": 0, "fidelity": "high"})
	rs := refusals(s)
	count(rs) == 4
	every r in rs {
		is_string(r.path)
		r.message != ""
	}
}
