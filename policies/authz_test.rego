# Tests of authz.rego: every rule, every precedence pair, and the allows.
# Run them with `go test ./policies/...` (or `opa test policies/`).
package conclave.authz_test

import data.conclave.authz

# ---------------------------------------------------------------------------
# Fixtures. Inputs are built from these with object.union, which merges
# objects key by key and replaces arrays, so a test states only what differs.
# ---------------------------------------------------------------------------

all_scopes := ["models:read", "deliberate", "estimate", "receipts:read", "tests", "certify", "modes:write"]

live_key := {
	"kind": "api_key",
	"key_id": "key_live",
	"test": false,
	"scopes": all_scopes,
	"modes": [],
}

app := object.union(live_key, {"kind": "oauth_app", "key_id": "app_1"})

our_org := {"id": "org_ours", "plan": "standard"}

# A system mode open to every plan, with seats at every tier.
open_mode := {
	"id": "conclave-standard",
	"key": "standard",
	"ticker": "CNCL:STND",
	"plans": [],
	"tiers": ["experience", "plus", "pro"],
}

# A system mode limited to the pro plan.
pro_mode := {
	"id": "conclave-max",
	"key": "max",
	"ticker": "CNCL:MAXX",
	"plans": ["pro", "enterprise"],
	"tiers": ["experience", "plus", "pro"],
}

# A mode our organisation owns, with seats at plus only.
our_mode := {
	"id": "ours-panel",
	"key": "panel",
	"ticker": "OURS:PANL",
	"owner_org": "org_ours",
	"plans": ["pro"],
	"tiers": ["plus"],
}

# A mode another organisation owns, named without a suffix, whose listing
# publishes nothing: the caller would be served its latest release.
their_mode := {
	"id": "theirs-secret",
	"key": "secret",
	"ticker": "THEM:SCRT",
	"owner_org": "org_theirs",
	"plans": [],
	"tiers": ["experience", "plus", "pro"],
	"version": 2,
	"listing": "pending",
}

# The same mode, its version 1 published by the approved listing.
published_mode := object.union(their_mode, {"version": 1, "listing": "approved", "published": true})

# Its version 2, named @lab by an organisation it did not invite.
lab_mode := object.union(their_mode, {"version": 2, "suffix": "lab", "listing": "approved"})

# The same, by an organisation it invited.
invited_lab_mode := object.union(lab_mode, {"invited": true})

# chat is a chat.create request on open_mode at plus, changed by patch.
chat(patch) := object.union(
	{"action": "chat.create", "principal": live_key, "org": our_org, "mode": open_mode, "tier": "plus"},
	patch,
)

# request is a request for action with no mode and no tier.
request(act) := {"action": act, "principal": live_key, "org": our_org}

decide(inp) := d if {
	d := authz.decision with input as inp
}

code(inp) := decide(inp).code

allowed(inp) if decide(inp) == {"allow": true, "code": "", "message": ""}

scopes_without(s) := [x | some x in all_scopes; x != s]

# ---------------------------------------------------------------------------
# Allows.
# ---------------------------------------------------------------------------

test_allow_every_action_with_its_scope if {
	every act, scope in authz.required_scope {
		allowed(object.union(request(act), {"principal": {"scopes": [scope]}}))
	}
}

test_allow_chat_on_open_system_mode if allowed(chat({}))

test_allow_system_mode_listing_the_plan if {
	allowed(chat({"mode": pro_mode, "org": {"plan": "pro"}}))
}

test_allow_own_mode_whatever_its_plans if {
	# our_mode lists only "pro"; plans bind system modes, not owned ones.
	allowed(chat({"mode": our_mode}))
}

test_allow_key_limited_by_mode_id if {
	allowed(chat({"principal": {"modes": ["conclave-standard"]}}))
}

test_allow_key_limited_by_ticker if {
	allowed(chat({"principal": {"modes": ["CNCL:STND"]}}))
}

test_allow_api_key_any_tier_whatever_the_plan if {
	every t in ["experience", "plus", "pro"] {
		allowed(chat({"tier": t, "org": {"plan": "free"}}))
	}
}

test_allow_app_within_plan_cap if {
	allowed(chat({"principal": app, "org": {"plan": "free"}, "tier": "experience"}))
	allowed(chat({"principal": app, "org": {"plan": "plus"}, "tier": "plus"}))
	allowed(chat({"principal": app, "org": {"plan": "standard"}, "tier": "plus"}))
	allowed(chat({"principal": app, "org": {"plan": "pro"}, "tier": "pro"}))
	allowed(chat({"principal": app, "org": {"plan": "enterprise"}, "tier": "pro"}))
}

test_allow_no_tier_skips_tier_checks if {
	inp := json.remove(chat({"mode": {"tiers": []}}), ["tier"])
	allowed(inp)
}

test_allow_test_key_outside_modes_write if {
	allowed(chat({"principal": {"test": true}}))
	allowed(object.union(request("models.read"), {"principal": {"test": true}}))
	allowed(object.union(request("modes.read"), {"principal": {"test": true}}))
}

# Validating a spec changes nothing, so a test key may.
test_allow_test_key_modes_validate if {
	allowed(object.union(request("modes.validate"), {"principal": {"test": true}}))
	allowed(object.union(request("modes.validate"), {"principal": {"test": true, "scopes": ["modes:write"]}}))
}

test_allow_live_key_modes_write if allowed(request("modes.write"))

test_allow_own_mode_read_and_write if {
	allowed(chat({"action": "modes.read", "mode": our_mode}))
	allowed(chat({"action": "modes.write", "mode": our_mode}))
}

test_allow_null_owner_org_is_system_mode if {
	allowed(chat({"mode": {"owner_org": null}}))
}

# ---------------------------------------------------------------------------
# Rule 1 — scope.
# ---------------------------------------------------------------------------

test_scope_missing_for_every_action if {
	every act, scope in authz.required_scope {
		code(object.union(request(act), {"principal": {"scopes": scopes_without(scope)}})) == "insufficient_scope"
	}
}

test_scope_message_names_scope if {
	d := decide(chat({"principal": {"scopes": ["models:read"]}}))
	d.allow == false
	contains(d.message, "\"deliberate\"")
}

# Reading modes needs models:read; validating a spec needs modes:write,
# like saving one.
test_scope_modes_read_and_validate if {
	d := decide(object.union(request("modes.read"), {"principal": {"scopes": ["modes:write"]}}))
	d.code == "insufficient_scope"
	contains(d.message, "\"models:read\"")
	allowed(object.union(request("modes.read"), {"principal": {"scopes": ["models:read"]}}))
	v := decide(object.union(request("modes.validate"), {"principal": {"scopes": ["models:read", "deliberate"]}}))
	v.code == "insufficient_scope"
	contains(v.message, "\"modes:write\"")
	allowed(object.union(request("modes.validate"), {"principal": {"scopes": ["modes:write"]}}))
}

test_scope_unknown_action if {
	code(request("models.delete")) == "insufficient_scope"
}

test_scope_missing_action if {
	code(json.remove(request("models.read"), ["action"])) == "insufficient_scope"
}

test_scope_null_scopes if {
	code(object.union(request("models.read"), {"principal": {"scopes": null}})) == "insufficient_scope"
}

test_scope_null_principal_and_org if {
	code({"action": "models.read", "principal": null, "org": null}) == "insufficient_scope"
}

test_scope_empty_input if {
	code({}) == "insufficient_scope"
}

# ---------------------------------------------------------------------------
# Rule 2 — test keys cannot change modes.
# ---------------------------------------------------------------------------

test_test_key_modes_write if {
	code(object.union(request("modes.write"), {"principal": {"test": true}})) == "test_key_not_allowed"
}

test_test_key_modes_write_on_own_mode if {
	code(chat({"action": "modes.write", "mode": our_mode, "principal": {"test": true}})) == "test_key_not_allowed"
}

test_test_key_may_validate_but_not_write if {
	allowed(object.union(request("modes.validate"), {"principal": {"test": true}}))
	code(object.union(request("modes.write"), {"principal": {"test": true}})) == "test_key_not_allowed"
}

# ---------------------------------------------------------------------------
# Rule 3 — mode entitlement.
# ---------------------------------------------------------------------------

# Another organisation's mode. Nothing published: mode_not_published, and
# the message names the mode the caller named, nothing more.
test_other_org_unpublished_is_not_published if {
	d := decide(chat({"mode": their_mode}))
	d.code == "mode_not_published"
	contains(d.message, "theirs-secret")
	not contains(d.message, "org_theirs")
}

test_other_org_listing_states_without_a_published_version if {
	every l in ["none", "pending", "approved", "rejected", "delisted"] {
		code(chat({"mode": object.union(their_mode, {"listing": l})})) == "mode_not_published"
	}
	code(chat({"mode": object.union(their_mode, {"listing": "approved", "published": false})})) == "mode_not_published"
}

# The published version is open to every organisation, for every action
# but reading the owner's drafts or changing the mode.
test_other_org_published_is_allowed if {
	allowed(chat({"mode": published_mode}))
	allowed(object.union(request("estimate.create"), {"mode": published_mode}))
	allowed(object.union(request("models.read"), {"mode": published_mode}))
	# Named by its version (@v1), the published version is still open.
	allowed(chat({"mode": object.union(published_mode, {"suffix": "v1"})}))
}

# Only true opens a mode: a published or invited that is missing, null or
# a string does not.
test_other_org_published_must_be_true if {
	code(chat({"mode": object.union(their_mode, {"published": "true"})})) == "mode_not_published"
	code(chat({"mode": object.union(their_mode, {"published": null})})) == "mode_not_published"
	code(chat({"mode": object.union(lab_mode, {"invited": "yes"})})) == "lab_not_available"
}

# A lab version (any but the published one), named with a suffix, is open
# to the organisations the owner invited.
test_other_org_invited_lab_is_allowed if {
	allowed(chat({"mode": invited_lab_mode}))
	allowed(chat({"mode": object.union(invited_lab_mode, {"suffix": "v2"})}))
	allowed(object.union(request("estimate.create"), {"mode": invited_lab_mode}))
	allowed(object.union(request("models.read"), {"mode": invited_lab_mode}))
	# The lab is open before any listing, too.
	allowed(chat({"mode": object.union(invited_lab_mode, {"listing": "none"})}))
}

test_other_org_lab_not_invited_is_lab_not_available if {
	d := decide(chat({"mode": lab_mode}))
	d.code == "lab_not_available"
	contains(d.message, "Version 2")
	contains(d.message, "theirs-secret")
	code(chat({"mode": object.union(lab_mode, {"suffix": "v3", "version": 3})})) == "lab_not_available"
	code(chat({"mode": object.union(lab_mode, {"invited": false})})) == "lab_not_available"
}

# An invitation opens lab versions named with a suffix only: the mode
# named as it stands serves the published version, and there is none.
test_other_org_invited_without_suffix_is_not_published if {
	code(chat({"mode": object.union(their_mode, {"invited": true})})) == "mode_not_published"
	code(chat({"mode": object.union(their_mode, {"invited": true, "suffix": ""})})) == "mode_not_published"
	code(chat({"mode": object.union(their_mode, {"invited": true, "suffix": null})})) == "mode_not_published"
}

# Reading another organisation's drafts and versions, or changing its
# mode, is the owner's alone, published or invited.
test_other_org_read_and_write_are_forbidden if {
	every act in ["modes.read", "modes.write"] {
		every m in [their_mode, published_mode, lab_mode, invited_lab_mode] {
			code(chat({"action": act, "mode": m})) == "forbidden"
		}
	}
	d := decide(chat({"action": "modes.write", "mode": published_mode}))
	contains(d.message, "Only the organisation that owns a mode")
}

# The three answers about another organisation's mode exclude each other.
test_other_org_one_answer_at_a_time if {
	every act in ["chat.create", "modes.read"] {
		every m in [their_mode, published_mode, lab_mode, invited_lab_mode] {
			ranked := {d.code | some d in authz.denials; d.rank == authz.precedence.mode_of_another_org} with input as chat({"action": act, "mode": m})
			count(ranked) <= 1
		}
	}
}

# An organisation whose id is missing owns nothing.
test_mode_owned_but_org_id_missing_is_another_orgs if {
	code(chat({"mode": our_mode, "org": {"id": null}})) == "mode_not_published"
	code(chat({"action": "modes.write", "mode": our_mode, "org": {"id": null}})) == "forbidden"
}

test_system_mode_excluding_plan if {
	code(chat({"mode": pro_mode})) == "mode_not_permitted"
}

test_system_mode_excluding_missing_plan if {
	code(chat({"mode": pro_mode, "org": {"plan": null}})) == "mode_not_permitted"
}

test_plan_limited_modes_replace_configured_plans if {
	limited := {"conclave-standard": {"pro"}}
	code(chat({"org": {"plan": "standard"}})) == "mode_not_permitted" with authz.plan_limited_modes as limited
	allowed(chat({"org": {"plan": "pro"}})) with authz.plan_limited_modes as limited
	allowed(chat({"mode": pro_mode, "org": {"plan": "standard"}})) with authz.plan_limited_modes as {"conclave-max": {"standard"}}
	allowed(chat({"mode": our_mode})) with authz.plan_limited_modes as {"ours-panel": {"free"}}
}

test_system_mode_message_names_mode if {
	contains(decide(chat({"mode": pro_mode})).message, "conclave-max")
}

# ---------------------------------------------------------------------------
# Rule 4 — key limited to named modes.
# ---------------------------------------------------------------------------

test_key_limited_to_other_modes if {
	# Outside the key's list, a mode reads as one that does not exist: the
	# same code and message as an unknown id.
	d := decide(chat({"principal": {"modes": ["conclave-fast", "CNCL:FAST"]}}))
	d.code == "model_not_found"
	d.message == authz.hidden_mode_message
	code(object.union_n([request("models.read"), {"mode": open_mode}, {"principal": {"modes": ["conclave-fast"]}}])) == "model_not_found"
	code(object.union_n([request("estimate.create"), {"mode": open_mode}, {"principal": {"modes": ["conclave-fast"]}}])) == "model_not_found"
}

test_key_limited_cannot_change_other_modes if {
	d := decide(chat(object.union({"action": "modes.write"}, {"principal": {"modes": ["conclave-fast"]}})))
	d.code == "mode_not_allowed"
	contains(d.message, "limited to named modes")
}

test_key_limited_cannot_read_other_modes if {
	code(chat({"action": "modes.read", "mode": our_mode, "principal": {"modes": ["conclave-fast"]}})) == "mode_not_allowed"
	code(chat({"action": "modes.write", "mode": our_mode, "principal": {"modes": ["conclave-fast"]}})) == "mode_not_allowed"
	allowed(chat({"action": "modes.read", "mode": our_mode, "principal": {"modes": ["OURS:PANL"]}}))
}

# A published mode of another organisation outside the key's list is, to
# that key, a mode that does not exist.
test_key_limited_hides_a_published_mode if {
	code(chat({"mode": published_mode, "principal": {"modes": ["conclave-fast"]}})) == "model_not_found"
	allowed(chat({"mode": published_mode, "principal": {"modes": ["THEM:SCRT"]}}))
}

test_key_limited_without_mode_in_request if {
	# A request naming no mode is not restricted by the key's mode list.
	allowed(object.union(request("receipts.read"), {"principal": {"modes": ["conclave-fast"]}}))
}

# ---------------------------------------------------------------------------
# Rule 5 — tier.
# ---------------------------------------------------------------------------

test_tier_without_seats if {
	code(chat({"mode": our_mode, "tier": "pro"})) == "tier_not_permitted"
}

test_tier_without_seats_empty_tiers if {
	code(chat({"mode": {"tiers": []}})) == "tier_not_permitted"
}

test_tier_null_tiers if {
	code(chat({"mode": {"tiers": null}})) == "tier_not_permitted"
}

test_tier_unknown if {
	d := decide(chat({"tier": "ultra"}))
	d.code == "tier_not_permitted"
	contains(d.message, "ultra")
}

test_tier_app_over_plan_cap if {
	code(chat({"principal": app, "org": {"plan": "free"}, "tier": "plus"})) == "tier_not_permitted"
	code(chat({"principal": app, "org": {"plan": "free"}, "tier": "pro"})) == "tier_not_permitted"
	code(chat({"principal": app, "org": {"plan": "plus"}, "tier": "pro"})) == "tier_not_permitted"
	code(chat({"principal": app, "org": {"plan": "standard"}, "tier": "pro"})) == "tier_not_permitted"
}

test_tier_app_unknown_plan_capped_at_lowest if {
	code(chat({"principal": app, "org": {"plan": "mystery"}, "tier": "plus"})) == "tier_not_permitted"
	allowed(chat({"principal": app, "org": {"plan": "mystery"}, "tier": "experience"}))
}

test_tier_missing_kind_is_capped if {
	code(chat({"principal": {"kind": null}, "org": {"plan": "free"}, "tier": "pro"})) == "tier_not_permitted"
}

test_tier_seats_checked_before_plan_cap if {
	d := decide(chat({"principal": app, "mode": our_mode, "org": {"plan": "free"}, "tier": "pro"}))
	d.code == "tier_not_permitted"
	contains(d.message, "no seats")
}

# ---------------------------------------------------------------------------
# Precedence: forbidden, mode_not_published or lab_not_available (another
# org's mode) > model_not_found or mode_not_allowed (mode-limited key) >
# insufficient_scope (endpoint) > test_key_not_allowed > mode_not_permitted >
# tier_not_permitted. One test per pair.
# ---------------------------------------------------------------------------

no_scopes := {"principal": {"scopes": []}}

as_test_key := {"principal": {"test": true}}

limited_key := {"principal": {"modes": ["conclave-fast"]}}

bad_tier := {"tier": "ultra"}

modes_write := {"action": "modes.write"}

modes_read := {"action": "modes.read"}

test_precedence_other_org_over_scope if {
	code(chat(object.union({"mode": their_mode}, no_scopes))) == "mode_not_published"
	code(chat(object.union({"mode": lab_mode}, no_scopes))) == "lab_not_available"
	code(chat(object.union_n([{"mode": their_mode}, modes_read, no_scopes]))) == "forbidden"
}

test_precedence_other_org_over_test_key if {
	code(chat(object.union_n([{"mode": their_mode}, modes_write, as_test_key]))) == "forbidden"
	code(chat(object.union_n([{"mode": published_mode}, modes_write, as_test_key]))) == "forbidden"
}

# A mode owned by another org is never a system mode, so these two cannot
# both apply to one input; check the ranking itself on made-up denials.
test_precedence_other_org_over_mode_not_permitted if {
	every c in ["forbidden", "mode_not_published", "lab_not_available"] {
		d := authz.decision with authz.denials as {
			{"rank": authz.precedence.plan_excluded, "code": "mode_not_permitted", "message": "b"},
			{"rank": authz.precedence.mode_of_another_org, "code": c, "message": "a"},
		}
		d.code == c
	}
}

test_precedence_other_org_over_limited_key if {
	code(chat(object.union({"mode": their_mode}, limited_key))) == "mode_not_published"
	code(chat(object.union({"mode": lab_mode}, limited_key))) == "lab_not_available"
	code(chat(object.union_n([{"mode": their_mode}, modes_read, limited_key]))) == "forbidden"
	code(chat(object.union_n([{"mode": their_mode}, modes_write, limited_key]))) == "forbidden"
}

test_precedence_other_org_over_tier if {
	code(chat(object.union({"mode": their_mode}, bad_tier))) == "mode_not_published"
	code(chat(object.union({"mode": lab_mode}, bad_tier))) == "lab_not_available"
}

# Once another organisation's mode is open to the caller, the other rules
# apply to it as to any mode.
test_precedence_open_other_org_mode_meets_the_other_rules if {
	every m in [published_mode, invited_lab_mode] {
		code(chat(object.union({"mode": m}, no_scopes))) == "insufficient_scope"
		code(chat(object.union({"mode": m}, limited_key))) == "model_not_found"
		code(chat(object.union({"mode": m}, bad_tier))) == "tier_not_permitted"
		code(chat(object.union({"mode": object.union(m, {"tiers": ["plus"]})}, {"tier": "pro"}))) == "tier_not_permitted"
	}
}

test_precedence_scope_over_test_key if {
	d := decide(chat(object.union_n([modes_write, as_test_key, {"principal": {"scopes": ["deliberate"]}}])))
	d.code == "insufficient_scope"
	contains(d.message, "\"modes:write\"")
}

test_precedence_scope_over_mode_not_permitted if {
	code(chat(object.union({"mode": pro_mode}, no_scopes))) == "insufficient_scope"
}

test_precedence_limited_key_over_scope if {
	code(chat(object.union_n([limited_key, no_scopes]))) == "model_not_found"
}

test_precedence_scope_over_tier if {
	code(chat(object.union(bad_tier, no_scopes))) == "insufficient_scope"
}

test_precedence_test_key_over_mode_not_permitted if {
	code(chat(object.union_n([{"mode": pro_mode}, modes_write, as_test_key]))) == "test_key_not_allowed"
}

test_precedence_limited_key_over_test_key if {
	code(chat(object.union_n([modes_write, as_test_key, limited_key]))) == "mode_not_allowed"
}

test_precedence_test_key_over_tier if {
	code(chat(object.union_n([modes_write, as_test_key, bad_tier]))) == "test_key_not_allowed"
}

test_precedence_limited_key_over_mode_not_permitted if {
	code(chat(object.union({"mode": pro_mode}, limited_key))) == "model_not_found"
}

test_precedence_mode_not_permitted_over_tier if {
	code(chat(object.union({"mode": pro_mode}, bad_tier))) == "mode_not_permitted"
}

test_precedence_limited_key_over_tier if {
	code(chat(object.union(limited_key, bad_tier))) == "model_not_found"
}

# ---------------------------------------------------------------------------
# The decision's shape.
# ---------------------------------------------------------------------------

test_denial_shape if {
	d := decide(chat({"mode": pro_mode}))
	object.keys(d) == {"allow", "code", "message"}
	d.allow == false
	d.code != ""
	d.message != ""
}

test_allow_shape if {
	object.keys(decide(chat({}))) == {"allow", "code", "message"}
}

test_precedence_table_has_a_rank_per_rule if {
	ranks := [r | some r in authz.precedence]
	count(ranks) == count({r | some r in ranks})
}

# ---------------------------------------------------------------------------
# Roles: the action × role table, for people and the keys they created.
# ---------------------------------------------------------------------------

session := {"kind": "session", "key_id": "", "test": false, "scopes": all_scopes, "modes": []}

# by_role(role, act) is act done by a signed-in person of that role, in our org.
by_role(role, act) := object.union(request(act), {"principal": session, "person": {"id": "person_me", "role": role}})

member_may := {
	"models.read", "chat.create", "estimate.create", "receipts.read", "journal.read", "tests.create",
	"tests.read", "certify.read", "modes.read", "modes.write", "modes.validate", "keys.create", "people.read",
}

member_may_not := {
	"certify.create", "certify.cancel", "modes.release", "modes.list", "keys.limits", "people.manage",
	"byok.write", "audit.read", "org.settings",
}

test_owner_may_do_everything if {
	every act, _ in authz.role_grants {
		allowed(object.union(by_role("owner", act), {"owner": "person_someone_else"}))
	}
}

test_member_defaults if {
	every act in member_may {
		allowed(by_role("member", act))
	}
	every act in member_may_not {
		d := decide(by_role("member", act))
		d.code == "forbidden"
		contains(d.message, "member")
	}
}

test_table_covers_every_action if {
	every act in member_may | member_may_not | {"tests.cancel", "keys.revoke"} {
		authz.role_grants[act]
	}
	count(authz.role_grants) == count(member_may | member_may_not) + 2
}

test_member_own_only if {
	allowed(object.union(by_role("member", "keys.revoke"), {"owner": "person_me"}))
	allowed(object.union(by_role("member", "tests.cancel"), {"owner": "person_me"}))
	code(object.union(by_role("member", "keys.revoke"), {"owner": "person_other"})) == "forbidden"
	code(object.union(by_role("member", "tests.cancel"), {"owner": ""})) == "forbidden"
	code(by_role("member", "tests.cancel")) == "forbidden"
}

test_left_person_refused_everything if {
	d := decide(by_role("", "models.read"))
	d.code == "forbidden"
	contains(d.message, "no longer")
}

test_org_actions_are_not_a_keys if {
	code(request("people.manage")) == "insufficient_scope"
	code(object.union(request("byok.write"), {"person": {"id": "person_me", "role": "owner"}})) == "insufficient_scope"
}

test_key_of_a_member_bounded_by_the_role if {
	k := object.union(request("certify.create"), {"person": {"id": "person_me", "role": "member"}})
	code(k) == "forbidden"
	allowed(object.union(request("certify.read"), {"person": {"id": "person_me", "role": "member"}}))
}

test_keys_create_scopes_bounded if {
	allowed(object.union(by_role("member", "keys.create"), {"scopes": ["deliberate", "certify"]}))
	allowed(object.union(by_role("owner", "keys.create"), {"scopes": all_scopes}))
	d := decide(object.union(by_role("member", "keys.create"), {"scopes": ["deliberate", "admin"]}))
	d.code == "forbidden"
	contains(d.message, "admin")
}

test_session_not_capped_by_plan if {
	allowed(object.union(chat({"principal": session, "org": {"plan": "free"}, "tier": "pro"}), {"person": {"id": "person_me", "role": "member"}}))
}
