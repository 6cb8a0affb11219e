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

# A person acting without a key carries every scope (their role bounds
# them): signed in on the pages, or through a connected app.
session := {"kind": "session", "key_id": "", "test": false, "scopes": all_scopes, "modes": []}

app := object.union(session, {"kind": "oauth_app"})

# me(role) is the person acting, with their role in our organisation.
me(role) := {"id": "person_me", "role": role}

me_member := me("member")

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

# on_plan(name, tier) is our organisation on the plan name, configured with
# tier as its highest tier for connected apps; on_plan_modes adds the modes
# the plan opens.
on_plan(name, t) := {"plan": name, "plan_max_tier": t}

on_plan_modes(name, t, modes) := {"plan": name, "plan_max_tier": t, "plan_modes": modes}

test_allow_app_within_plan_cap if {
	allowed(chat({"principal": app, "person": me_member, "org": on_plan("free", "experience"), "tier": "experience"}))
	allowed(chat({"principal": app, "person": me_member, "org": on_plan("plus", "plus"), "tier": "plus"}))
	allowed(chat({"principal": app, "person": me_member, "org": on_plan("plus", "plus"), "tier": "experience"}))
	allowed(chat({"principal": app, "person": me_member, "org": on_plan("pro", "pro"), "tier": "pro"}))
}

# The plan's name means nothing by itself: the cap is the one the input
# carries, as the deployment configures the plan.
test_allow_app_cap_from_input_not_name if {
	allowed(chat({"principal": app, "person": me_member, "org": on_plan("free", "pro"), "tier": "pro"}))
	code(chat({"principal": app, "person": me_member, "org": on_plan("enterprise", "plus"), "tier": "pro"})) == "tier_not_permitted"
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
	startswith(d.message, "This key lacks")
}

# A connected app's scopes are what its person granted it, and its
# refusal says so.
test_scope_of_a_connected_app if {
	d := decide(chat({"principal": object.union(app, {"scopes": ["models:read"]}), "person": me_member}))
	d.code == "insufficient_scope"
	startswith(d.message, "This app was not granted the \"deliberate\" scope")
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
	# Outside the key's list, a mode reads as one that does not exist (GET
	# /v1/models/{id}): the same code and message as an unknown id. Using it
	# — a call, an estimate, a test run, a certification — is refused as
	# Authentication 3 says: mode_not_allowed.
	r := object.union_n([request("models.read"), {"mode": open_mode}, {"principal": {"modes": ["conclave-fast", "CNCL:FAST"]}}])
	decide(r).code == "model_not_found"
	decide(r).message == authz.hidden_mode_message
	d := decide(chat({"principal": {"modes": ["conclave-fast", "CNCL:FAST"]}}))
	d.code == "mode_not_allowed"
	contains(d.message, "limited to named modes")
	every action in ["estimate.create", "tests.create", "certify.create"] {
		code(object.union_n([request(action), {"mode": open_mode}, {"principal": {"modes": ["conclave-fast"]}}])) == "mode_not_allowed"
	}
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
# that key, a mode that does not exist to read, and one it may not use.
test_key_limited_hides_a_published_mode if {
	code(chat({"action": "models.read", "mode": published_mode, "principal": {"modes": ["conclave-fast"]}})) == "model_not_found"
	code(chat({"mode": published_mode, "principal": {"modes": ["conclave-fast"]}})) == "mode_not_allowed"
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
	code(chat({"principal": app, "person": me_member, "org": on_plan("free", "experience"), "tier": "plus"})) == "tier_not_permitted"
	code(chat({"principal": app, "person": me_member, "org": on_plan("free", "experience"), "tier": "pro"})) == "tier_not_permitted"
	code(chat({"principal": app, "person": me_member, "org": on_plan("plus", "plus"), "tier": "pro"})) == "tier_not_permitted"
	d := decide(chat({"principal": app, "person": me_member, "org": on_plan("standard", "plus"), "tier": "pro"}))
	d == {
		"allow": false, "code": "tier_not_permitted", "param": "tier",
		"message": "Your organisation's plan (standard) allows connected apps tiers up to plus; pro is above it.",
	}
}

# A plan the input does not describe — not configured, or with a tier that
# is not one — opens only the lowest tier.
test_tier_app_undescribed_plan_capped_at_lowest if {
	code(chat({"principal": app, "person": me_member, "org": {"plan": "mystery"}, "tier": "plus"})) == "tier_not_permitted"
	allowed(chat({"principal": app, "person": me_member, "org": {"plan": "mystery"}, "tier": "experience"}))
	code(chat({"principal": app, "person": me_member, "org": on_plan("odd", "ultra"), "tier": "plus"})) == "tier_not_permitted"
	code(chat({"principal": app, "person": me_member, "org": on_plan("odd", null), "tier": "plus"})) == "tier_not_permitted"
}

# A plan that lists its modes opens only those (by id or ticker) to
# connected apps, with tier_not_permitted naming the plan and the model;
# keys and sessions are not bound by it; a plan listing none opens all.
test_mode_app_outside_plan_modes if {
	pro_std := on_plan_modes("pro", "pro", ["conclave-standard"])
	d := decide(chat({"principal": app, "person": me_member, "org": pro_std, "mode": pro_mode, "tier": "experience"}))
	d == {
		"allow": false, "code": "tier_not_permitted", "param": "model",
		"message": "Mode \"conclave-max\" is not open to connected apps on your organisation's plan (pro).",
	}
	plus_std := on_plan_modes("plus", "plus", ["conclave-standard"])
	allowed(chat({"principal": app, "person": me_member, "org": plus_std, "tier": "plus"}))
	allowed(chat({"principal": app, "person": me_member, "org": on_plan_modes("plus", "plus", ["CNCL:STND"]), "tier": "plus"}))
	code(chat({"principal": app, "person": me_member, "org": plus_std, "mode": our_mode})) == "tier_not_permitted"
	allowed(chat({"principal": session, "person": me_member, "org": plus_std, "mode": our_mode}))
	allowed(chat({"org": plus_std, "mode": our_mode}))
	allowed(chat({"principal": app, "person": me_member, "org": on_plan_modes("plus", "plus", []), "mode": our_mode}))
}

# The plan's modes bind seeing and running a mode, not the organisation's
# authoring of its own modes nor its test runs of them.
test_plan_modes_bind_calls_only if {
	plus_std := on_plan_modes("plus", "plus", ["conclave-standard"])
	own := json.remove(chat({"principal": app, "person": me_member, "org": plus_std, "mode": our_mode}), ["tier"])
	code(object.union(own, {"action": "models.read"})) == "tier_not_permitted"
	code(object.union(own, {"action": "estimate.create"})) == "tier_not_permitted"
	allowed(object.union(own, {"action": "modes.read"}))
	allowed(object.union(own, {"action": "modes.write"}))
	allowed(object.union(own, {"action": "tests.create"}))
	allowed(object.union(own, {"action": "tests.read"}))
}

# The mode and the tier above the plan are both tier_not_permitted; no
# mode named, no mode refused.
test_mode_and_tier_over_plan if {
	plus_std := on_plan_modes("plus", "plus", ["conclave-standard"])
	code(chat({"principal": app, "person": me_member, "org": plus_std, "mode": our_mode, "tier": "pro"})) == "tier_not_permitted"
	allowed(json.remove(chat({"action": "models.read", "principal": app, "person": me_member, "org": plus_std}), ["mode", "tier"]))
}

test_tier_missing_kind_is_capped if {
	code(chat({"principal": {"kind": null}, "org": {"plan": "free"}, "tier": "pro"})) == "tier_not_permitted"
}

test_tier_seats_checked_before_plan_cap if {
	d := decide(chat({"principal": app, "person": me_member, "mode": our_mode, "org": {"plan": "free"}, "tier": "pro"}))
	d.code == "tier_not_permitted"
	contains(d.message, "no seats")
}

# ---------------------------------------------------------------------------
# Precedence: forbidden, mode_not_published or lab_not_available (another
# org's mode) > model_not_found or mode_not_allowed (mode-limited key) >
# insufficient_scope (endpoint) > forbidden (role) > test_key_not_allowed >
# mode_not_permitted > tier_not_permitted. One test per pair; the pairs
# with the role are with the role tests below.
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
		code(chat(object.union({"mode": m}, limited_key))) == "mode_not_allowed"
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
	code(chat(object.union_n([limited_key, no_scopes]))) == "mode_not_allowed"
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
	code(chat(object.union({"mode": pro_mode}, limited_key))) == "mode_not_allowed"
}

test_precedence_mode_not_permitted_over_tier if {
	code(chat(object.union({"mode": pro_mode}, bad_tier))) == "mode_not_permitted"
}

test_precedence_limited_key_over_tier if {
	code(chat(object.union(limited_key, bad_tier))) == "mode_not_allowed"
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
# Roles: the action × role table, for people and for the keys they created.
# ---------------------------------------------------------------------------

# defaults is the table the issue asks for, written out here rather than
# read from the policy, so that a change to the shipped table fails a test.
defaults := {
	"models.read": {"owner": "any", "member": "any"},
	"chat.create": {"owner": "any", "member": "any"},
	"estimate.create": {"owner": "any", "member": "any"},
	"receipts.read": {"owner": "any", "member": "any"},
	"journal.read": {"owner": "any", "member": "any"},
	"usage.read": {"owner": "any", "member": "own"},
	"tests.create": {"owner": "any", "member": "any"},
	"tests.read": {"owner": "any", "member": "any"},
	"tests.cancel": {"owner": "any", "member": "own"},
	"certify.create": {"owner": "any"},
	"certify.read": {"owner": "any", "member": "any"},
	"certify.cancel": {"owner": "any"},
	"modes.read": {"owner": "any", "member": "any"},
	"modes.write": {"owner": "any", "member": "any"},
	"modes.validate": {"owner": "any", "member": "any"},
	"modes.release": {"owner": "any"},
	"modes.list": {"owner": "any"},
	"keys.create": {"owner": "any", "member": "any"},
	"keys.revoke": {"owner": "any", "member": "own"},
	"keys.limits": {"owner": "any", "member": "own"},
	"people.read": {"owner": "any", "member": "any"},
	"people.manage": {"owner": "any"},
	"byok.write": {"owner": "any"},
	"audit.read": {"owner": "any"},
	"org.settings": {"owner": "any"},
	"apps.read": {"owner": "any", "member": "own"},
	"apps.revoke": {"owner": "any", "member": "own"},
}

roles := ["owner", "member"]

# The organisation's own actions: no scope names them.
org_actions := {a | some a, _ in defaults; not authz.required_scope[a]}

# acting(p, role, act, owner) is act done by the person me(role) as the
# principal p (a session, a connected app, or a key they created), on an
# object created by owner.
acting(p, role, act, owner) := object.union(request(act), {"principal": p, "person": me(role), "owner": owner})

by_role(role, act) := acting(session, role, act, "")

# cell_holds(p, role, act): the role's cell for act decides, for p, on the
# person's own object and on another's, as the table says.
cell_holds(p, role, act) if {
	object.get(defaults, [act, role], "") == "any"
	allowed(acting(p, role, act, "person_me"))
	allowed(acting(p, role, act, "person_other"))
	allowed(acting(p, role, act, ""))
}

cell_holds(p, role, act) if {
	object.get(defaults, [act, role], "") == "own"
	allowed(acting(p, role, act, "person_me"))
	d := decide(acting(p, role, act, "person_other"))
	d.code == "forbidden"
	contains(lower(d.message), sprintf("a %s of this organisation", [role]))
	contains(d.message, sprintf("can do %s only on what they created", [act]))
	code(acting(p, role, act, "")) == "forbidden"
}

cell_holds(p, role, act) if {
	object.get(defaults, [act, role], "") == ""
	every owner in ["person_me", "person_other"] {
		d := decide(acting(p, role, act, owner))
		d.code == "forbidden"
		contains(lower(d.message), sprintf("a %s of this organisation", [role]))
		contains(d.message, sprintf("cannot do %s.", [act]))
	}
}

# with_rows(rows) is the shipped table with rows replaced whole (object.union
# would merge a row with the shipped one, and could never remove a grant).
with_rows(rows) := object.union(object.remove(authz.role_grants, object.keys(rows)), rows)

test_shipped_table_is_the_default if {
	authz.role_grants == defaults
}

# Every action a key's scope grants has a row: a person is never refused
# one merely because the table forgot it.
test_table_has_every_scoped_action if {
	every act, _ in authz.required_scope {
		defaults[act]
	}
}

test_table_for_a_signed_in_person if {
	every act, _ in defaults {
		every role in roles {
			cell_holds(session, role, act)
		}
	}
}

test_table_for_a_connected_app if {
	every act, _ in defaults {
		every role in roles {
			cell_holds(app, role, act)
		}
	}
}

# A key a person created is held to their role at every use, besides its
# scopes (live_key carries every scope).
test_table_for_a_key_a_person_created if {
	every act, _ in authz.required_scope {
		every role in roles {
			cell_holds(live_key, role, act)
		}
	}
}

test_member_refusal_names_role_and_action if {
	d := decide(by_role("member", "certify.create"))
	d == {"allow": false, "code": "forbidden", "message": "A member of this organisation cannot do certify.create."}
	k := decide(acting(live_key, "member", "certify.create", ""))
	k.message == "This key was created by a member of this organisation, and a member cannot do certify.create."
}

test_refusal_article_follows_the_role if {
	tightened := with_rows({"audit.read": {}})
	d := decide(by_role("owner", "audit.read")) with authz.role_grants as tightened
	d.message == "An owner of this organisation cannot do audit.read."
}

# A cell that is neither "any" nor "own" grants nothing: a typo refuses.
test_unknown_grant_value_refuses if {
	typo := with_rows({"audit.read": {"owner": "yes"}})
	code(by_role("owner", "audit.read")) == "forbidden" with authz.role_grants as typo
}

# A role the table does not know (a policy author's, or a typo) gets nothing.
test_unknown_role_refused if {
	every act, _ in defaults {
		code(by_role("admin", act)) == "forbidden"
	}
	contains(decide(by_role("admin", "models.read")).message, "An admin")
}

# ---------------------------------------------------------------------------
# Who is acting.
# ---------------------------------------------------------------------------

# The organisation's own actions are a person's: refused to every key, also
# to a key an owner created.
test_org_actions_are_no_keys if {
	every act in org_actions {
		code(request(act)) == "insufficient_scope"
		every role in roles {
			d := decide(acting(live_key, role, act, "person_me"))
			d.code == "insufficient_scope"
			contains(d.message, "An API key cannot do")
		}
	}
}

# A key no person created is bounded by its scopes alone.
test_key_of_no_person_bounded_by_scopes_alone if {
	every act, scope in authz.required_scope {
		allowed(object.union(request(act), {"principal": {"scopes": [scope]}}))
	}
}

# Someone who left the organisation (role "") may do nothing: signed in,
# through an app, or through a key they created.
test_left_person_refused_everything if {
	every act, _ in defaults {
		every p in [session, app, live_key] {
			code(acting(p, "", act, "person_me")) in {"forbidden", "insufficient_scope"}
		}
		every p in [session, app] {
			decide(acting(p, "", act, "person_me")).message == "You are no longer a member of this organisation."
		}
	}
	every act, _ in authz.required_scope {
		d := decide(acting(live_key, "", act, "person_me"))
		d.code == "forbidden"
		contains(d.message, "created this key is no longer a member")
	}
}

# A person principal that names no person is refused, not taken for a key.
test_person_principal_without_person_refused if {
	every act, _ in defaults {
		every p in [session, app] {
			d := decide(object.union(request(act), {"principal": p}))
			d.code == "forbidden"
			contains(d.message, "no person")
			code(object.union(request(act), {"principal": p, "person": null})) == "forbidden"
		}
	}
}

test_malformed_person_refused if {
	code(object.union(by_role("owner", "models.read"), {"person": "person_me"})) == "forbidden"
	code(object.union(by_role("owner", "models.read"), {"person": {"id": "person_me", "role": 1}})) == "forbidden"
	code(object.union(request("models.read"), {"person": "person_me"})) == "forbidden"
}

# ---------------------------------------------------------------------------
# keys.create: the new key's scopes are bounded by the creator's role.
# ---------------------------------------------------------------------------

create_key(role, scopes) := object.union(by_role(role, "keys.create"), {"scopes": scopes})

test_keys_create_every_grantable_scope if {
	# As shipped, a member is granted an action of every scope.
	allowed(create_key("member", all_scopes))
	allowed(create_key("owner", all_scopes))
	allowed(create_key("member", []))
	every s in all_scopes {
		allowed(create_key("member", [s]))
	}
}

test_keys_create_unknown_scope if {
	every role in roles {
		d := decide(create_key(role, ["deliberate", "admin"]))
		d.code == "forbidden"
		contains(d.message, "\"admin\" scope")
	}
}

# With a table where members are granted nothing of certify, a member may
# not give a key the certify scope; the other scopes are unaffected.
test_keys_create_scope_needs_a_granted_action if {
	tightened := with_rows({"certify.read": {"owner": "any"}})
	d := decide(create_key("member", ["deliberate", "certify"])) with authz.role_grants as tightened
	d.code == "forbidden"
	d.message == concat("", [
		"A member of this organisation cannot give a key the \"certify\" scope: ",
		"the role is granted no action that needs it.",
	])
	allowed(create_key("member", ["deliberate", "tests"])) with authz.role_grants as tightened
	allowed(create_key("owner", ["certify"])) with authz.role_grants as tightened
}

# An "own" grant makes its scope grantable too: here a member may only
# cancel their own test runs, so a key of theirs with tests may do that.
test_keys_create_own_grant_is_grantable if {
	tightened := with_rows({"tests.create": {"owner": "any"}, "tests.read": {"owner": "any"}})
	code(by_role("member", "tests.create")) == "forbidden" with authz.role_grants as tightened
	allowed(create_key("member", ["tests"])) with authz.role_grants as tightened
}

# ---------------------------------------------------------------------------
# A key a member created: bounded by the member's role at every use.
# ---------------------------------------------------------------------------

members_key(act, patch) := object.union(acting(live_key, "member", act, "person_me"), patch)

test_members_key_bounded_at_use if {
	# The certify scope reads certifications but never launches one.
	allowed(members_key("certify.read", {}))
	code(members_key("certify.create", {})) == "forbidden"
	code(members_key("certify.cancel", {})) == "forbidden"
	code(members_key("modes.release", {})) == "forbidden"
	code(members_key("modes.list", {})) == "forbidden"

	# Their own runs only.
	allowed(members_key("tests.cancel", {}))
	code(members_key("tests.cancel", {"owner": "person_other"})) == "forbidden"
}

test_members_key_still_bounded_by_scopes if {
	d := decide(members_key("tests.create", {"principal": {"scopes": ["deliberate"]}}))
	d.code == "insufficient_scope"
	contains(d.message, "\"tests\"")
}

# The role is the creator's now: demoting them narrows their keys at once.
test_owners_key_narrows_when_demoted if {
	allowed(acting(live_key, "owner", "certify.create", ""))
	code(acting(live_key, "member", "certify.create", "")) == "forbidden"
}

# ---------------------------------------------------------------------------
# Tiers: a connected app is capped by the plan; a person signed in, or a
# key of theirs, is not.
# ---------------------------------------------------------------------------

test_app_capped_session_not if {
	every role in roles {
		free := on_plan("free", "experience")
		code(chat({"principal": app, "person": me(role), "org": free, "tier": "pro"})) == "tier_not_permitted"
		allowed(chat({"principal": app, "person": me(role), "org": free, "tier": "experience"}))
		allowed(chat({"principal": session, "person": me(role), "org": free, "tier": "pro"}))
		allowed(chat({"person": me(role), "org": free, "tier": "pro"}))
	}
}

# ---------------------------------------------------------------------------
# Precedence of the role's denial: after another organisation's mode, a
# mode-limited key and the scope; before test keys, plans and tiers.
# ---------------------------------------------------------------------------

test_precedence_other_org_over_role if {
	d := decide(chat({"action": "modes.release", "mode": their_mode, "principal": session, "person": me_member}))
	d.code == "forbidden"
	contains(d.message, "Only the organisation that owns a mode")
}

test_precedence_limited_key_over_role if {
	code(members_key("certify.create", object.union({"mode": open_mode}, limited_key))) == "mode_not_allowed"
}

test_precedence_scope_over_role if {
	d := decide(members_key("certify.create", {"principal": {"scopes": ["deliberate"]}}))
	d.code == "insufficient_scope"
	contains(d.message, "\"certify\"")
}

test_precedence_role_over_test_key if {
	d := decide(members_key("modes.release", as_test_key))
	d.code == "forbidden"
	contains(d.message, "cannot do modes.release")
}

test_precedence_role_over_mode_not_permitted if {
	code(members_key("certify.create", {"mode": pro_mode})) == "forbidden"
}

test_precedence_role_over_tier if {
	code(members_key("certify.create", object.union({"mode": open_mode}, bad_tier))) == "forbidden"
}

test_precedence_left_person_over_tier if {
	code(chat({"principal": app, "person": me(""), "org": {"plan": "free"}, "tier": "pro"})) == "forbidden"
}
