# Conclave's authorization policy.
#
# For every /v1 request, and for every action a person takes on the pages or
# through the core services for people (keys, people, BYOK, the audit
# trail), Conclave evaluates data.conclave.authz.decision with the request's
# AuthzInput as `input`, and reads back
#
#     {"allow": true|false, "code": "…", "message": "…"}
#
# Policies decide (scopes, entitlements, tiers, key restrictions); Go counts
# (rates, concurrency, money). docs/policies.md describes the input document,
# the rules and how to change them; authz_test.rego tests every rule.
#
# How this file is built: each rule below adds a denial, with a rank, to the
# set `denials`; `decision` answers the denial with the lowest rank, or an
# allow when there is none. Rules never conflict, and adding one is adding a
# `denials contains …` block and a row in `precedence`.
package conclave.authz

# ---------------------------------------------------------------------------
# Data tables: edit these to change who may do what.
# ---------------------------------------------------------------------------

# required_scope names the one scope each action needs. An action missing
# from this table is refused.
required_scope := {
	"models.read": "models:read",
	"chat.create": "deliberate",
	"estimate.create": "estimate",
	"receipts.read": "receipts:read",
	"tests.create": "tests",
	"tests.read": "tests",
	"certify.create": "certify",
	"certify.read": "certify",
	"modes.write": "modes:write",
	"modes.read": "models:read",
	"modes.validate": "modes:write",
	"modes.release": "modes:write",
	"modes.list": "modes:write",
	"tests.cancel": "tests",
	"certify.cancel": "certify",
}

# role_grants is the action × role table: what each role of a person may
# do. For each action, a role gets "any" (allowed), "own" (allowed on what
# the person created: input.owner is their id), or is absent (refused with
# forbidden). It applies whenever a person acts — signed in (session),
# through a connected app (oauth_app), or through an API key they created
# (the key's scopes bound it too) — with their role in the organisation
# now. docs/people.md prints this table; a test keeps the two equal.
role_grants := {
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

# tier_rank orders the tiers, lowest first. A tier missing from it is refused.
tier_rank := {"experience": 1, "plus": 2, "pro": 3}

# plan_mode_actions are the actions a plan's list of modes (input
# org.plan_modes) binds connected apps in: seeing a mode and running it.
# Authoring the organisation's own modes, and its test runs and
# certifications, are not plan usage.
plan_mode_actions := {"models.read", "chat.create", "estimate.create"}

# plan_limited_modes opens system modes, by id, only to the plans listed,
# whatever plans the configuration gives them: for example
# {"conclave-max": {"pro"}}. Modes owned by an organisation are not affected.
plan_limited_modes := {}

# precedence orders the denials: when several apply, the lowest number wins.
precedence := {
	"mode_of_another_org": 1, # forbidden, mode_not_published, lab_not_available
	"key_limited": 2, # model_not_found to read a mode (models.read); mode_not_allowed to use or change one
	"missing_scope": 3, # insufficient_scope
	"role": 4, # forbidden: the person's role does not grant the action (or a scope, for keys.create)
	"test_key": 5, # test_key_not_allowed
	"plan_excluded": 6, # mode_not_permitted
	"tier": 7, # tier_not_permitted: a tier not seated, unknown, or above the plan; a mode the plan does not open
}

# ---------------------------------------------------------------------------
# The decision.
# ---------------------------------------------------------------------------

# decision is the first denial by precedence, or an allow when none applies.
# A denial that concerns one parameter of the request names it ("param":
# "model"); the decision carries it on.
decision := object.union({"allow": false, "code": d.code, "message": d.message}, param_of(d)) if {
	d := first_denial
} else := {"allow": true, "code": "", "message": ""}

param_of(d) := {"param": d.param} if {
	is_string(d.param)
	d.param != ""
} else := {}

# first_denial is the denial of lowest rank. Should two share a rank, the
# smaller one (by code, then message) is chosen, so the answer never depends
# on evaluation order.
first_denial := min({d | some d in denials; d.rank == lowest}) if {
	count(denials) > 0
	lowest := min({d.rank | some d in denials})
}

# ---------------------------------------------------------------------------
# The input, read defensively: a missing or null field reads as empty, so a
# malformed input is refused rather than let through.
# ---------------------------------------------------------------------------

action := input.action if {
	is_string(input.action)
} else := ""

principal := input.principal if {
	is_object(input.principal)
} else := {}

org := input.org if {
	is_object(input.org)
} else := {}

# mode is the mode the request names; undefined when it names none.
mode := input.mode if is_object(input.mode)

has_mode if is_object(input.mode)

# tier is the tier the request asks for; undefined when it asks for none.
tier := input.tier if {
	input.tier != null
	input.tier != ""
}

principal_kind := principal.kind if {
	is_string(principal.kind)
} else := ""

# A person acts without a key: signed in, or through a connected app.
person_principal if principal_kind in {"session", "oauth_app"}

# person is who acts (a person principal, or the creator of an API key);
# empty when no person does. A person that is present but not an object
# reads as one with no role, and is refused everything.
person := input.person if {
	is_object(input.person)
} else := {}

has_person if input.person != null

person_id := person.id if {
	is_string(person.id)
} else := ""

# person_role is "" when the person is no longer in the organisation.
person_role := person.role if {
	is_string(person.role)
} else := ""

owner_id := input.owner if {
	is_string(input.owner)
} else := ""

# org_action: an action about the organisation itself, which no scope
# grants: only a person may be granted it, by the role table.
org_action if {
	role_grants[action]
	not required_scope[action]
}

is_test_key if principal.test == true

key_scopes := {s | some s in principal.scopes; is_string(s)}

# key_modes is empty when the key may use every mode the org is entitled to.
key_modes := {m | some m in principal.modes; is_string(m); m != ""}

org_id := org.id if {
	is_string(org.id)
} else := ""

org_plan := org.plan if {
	is_string(org.plan)
} else := ""

# plan_cap is the highest tier the organisation's plan opens to connected
# apps, as the deployment configures the plan (docs/plans.md); a plan the
# input does not describe (not configured, or a malformed tier) opens only
# the lowest tier.
plan_cap := org.plan_max_tier if {
	is_string(org.plan_max_tier)
	tier_rank[org.plan_max_tier]
} else := "experience"

# plan_modes are the modes (by id or ticker) the organisation's plan opens
# to connected apps; empty opens every mode.
plan_modes := {m | some m in org.plan_modes; is_string(m); m != ""}

mode_id := mode.id if {
	is_string(mode.id)
} else := ""

mode_ticker := mode.ticker if {
	is_string(mode.ticker)
} else := ""

# mode_owner is "" for a system mode (owner_org empty or absent).
mode_owner := mode.owner_org if {
	is_string(mode.owner_org)
} else := ""

# mode_plans are the plans a system mode is open to; empty means every plan.
mode_plans := plan_limited_modes[mode_id] if {
	has_mode
} else := {p | some p in mode.plans; is_string(p); p != ""}

mode_tiers := {t | some t in mode.tiers; is_string(t)}

# ---------------------------------------------------------------------------
# Rule 1 — scope. Each action needs the one scope required_scope names.
# ---------------------------------------------------------------------------

denials contains {
	"rank": precedence.missing_scope,
	"code": "insufficient_scope",
	"message": sprintf("%s the %q scope that %s requires.", [lacks_phrase, scope, action]),
} if {
	scope := required_scope[action]
	not scope in key_scopes
}

# lacks_phrase names what lacks a scope: a connected app's scopes are
# those its person granted it; anything else's, its key's.
lacks_phrase := "This app was not granted" if {
	principal_kind == "oauth_app"
} else := "This key lacks"

# An action the table does not know is refused the same way.
denials contains {
	"rank": precedence.missing_scope,
	"code": "insufficient_scope",
	"message": sprintf("No scope grants the action %q.", [action]),
} if {
	not required_scope[action]
	not org_action
}

# An action about the organisation itself (keys, people, BYOK, the audit
# trail) is a person's, never a key's.
denials contains {
	"rank": precedence.missing_scope,
	"code": "insufficient_scope",
	"message": sprintf("An API key cannot do %s; a signed-in person whose role allows it can.", [action]),
} if {
	org_action
	not person_principal
}

# ---------------------------------------------------------------------------
# Rule 1b — roles. Whenever a person acts (or a key they created does), the
# role table must grant the action to their role now: "any", or "own" on
# what they created. A person no longer in the organisation may do nothing.
# ---------------------------------------------------------------------------

# role_grant is what the table gives the person's role for the action: "any",
# "own", or "" (nothing). Any other value grants nothing, so a typo in the
# table refuses rather than allows.
role_grant := object.get(role_grants, [action, person_role], "")

role_allows if role_grant == "any"

role_allows if {
	role_grant == "own"
	person_id != ""
	owner_id == person_id
}

# role_phrase names the role with its article: "a member", "an owner".
role_phrase := sprintf("an %s", [person_role]) if {
	regex.match(`^[aeiouAEIOU]`, person_role)
} else := sprintf("a %s", [person_role])

# role_subject says whose role decided: the person acting, or — for a key
# they created — its creator, so that the key's holder learns why a key
# with the right scope is refused.
role_subject := sprintf(
	"This key was created by %s of this organisation, and %s",
	[role_phrase, role_phrase],
) if {
	principal_kind == "api_key"
} else := sprintf("%s of this organisation", [capitalized(role_phrase)])

capitalized(s) := concat("", [upper(substring(s, 0, 1)), substring(s, 1, -1)])

# A person principal (signed in, or a connected app) always names its
# person; one that does not is refused rather than treated as a key.
denials contains {
	"rank": precedence.role,
	"code": "forbidden",
	"message": "This request acts for no person of the organisation; sign in again.",
} if {
	person_principal
	not has_person
}

denials contains {
	"rank": precedence.role,
	"code": "forbidden",
	"message": left_message,
} if {
	has_person
	person_role == ""
}

left_message := "The person who created this key is no longer a member of this organisation, so it can do nothing." if {
	principal_kind == "api_key"
} else := "You are no longer a member of this organisation."

denials contains {
	"rank": precedence.role,
	"code": "forbidden",
	"message": sprintf("%s cannot do %s.", [role_subject, action]),
} if {
	has_person
	person_role != ""
	role_grant != "own"
	not role_allows
}

denials contains {
	"rank": precedence.role,
	"code": "forbidden",
	"message": sprintf("%s can do %s only on what they created.", [role_subject, action]),
} if {
	has_person
	person_role != ""
	role_grant == "own"
	not role_allows
}

# keys.create: each scope a new key asks for must be grantable by the
# creator's role: the role is granted at least one action that needs it.
# "At least one" and not "every" because a key a person created is held to
# the role table again at every use: a member's key with the certify scope
# may read certifications (granted) but never launch one (not granted).
grantable_scope(role, scope) if {
	some a, s in required_scope
	s == scope
	role_grants[a][role] in {"any", "own"}
}

denials contains {
	"rank": precedence.role,
	"code": "forbidden",
	"message": sprintf(
		"%s of this organisation cannot give a key the %q scope: the role is granted no action that needs it.",
		[capitalized(role_phrase), scope],
	),
} if {
	action == "keys.create"
	has_person
	person_role != ""
	some scope in input.scopes
	not grantable_scope(person_role, scope)
}

# ---------------------------------------------------------------------------
# Rule 2 — test keys cannot create or change modes.
# ---------------------------------------------------------------------------

denials contains {
	"rank": precedence.test_key,
	"code": "test_key_not_allowed",
	"message": "Test keys cannot create or change modes; use a live key.",
} if {
	action in {"modes.write", "modes.release", "modes.list"}
	is_test_key
}

# ---------------------------------------------------------------------------
# Rule 3 — mode entitlement (only when the request names a mode). The org is
# entitled to a mode it owns, and to a system mode whose plan list is empty
# or includes the org's plan.
# ---------------------------------------------------------------------------

system_mode if {
	has_mode
	mode_owner == ""
}

entitled if {
	mode_owner != ""
	mode_owner == org_id
}

entitled if {
	system_mode
	count(mode_plans) == 0
}

entitled if {
	system_mode
	org_plan in mode_plans
}

# hidden_mode_message answers for a mode the caller may not know of; it names
# nothing, so it reveals nothing.
hidden_mode_message := "The requested model does not exist or is not available to your organisation. GET /v1/models lists the modes you can call."

# Another organisation's mode. Its owner alone may read its drafts and
# versions or change it (forbidden). Any organisation may run the version its
# approved listing publishes; every other version is a lab version, open to
# the organisations its owner invited and named with a suffix (@lab, @v3).
# Anything else is refused with the reason: nothing is published
# (mode_not_published) or the lab is closed to the caller
# (lab_not_available).

other_org_mode if {
	mode_owner != ""
	mode_owner != org_id
}

change_actions := {"modes.write", "modes.read", "modes.release", "modes.list"}

entitled if {
	other_org_mode
	not action in change_actions
	mode.published == true
}

entitled if {
	other_org_mode
	not action in change_actions
	lab_named
	mode.invited == true
}

# lab_named: the caller named a version other than the served one.
lab_named if {
	is_string(mode.suffix)
	mode.suffix != ""
}

denials contains {
	"rank": precedence.mode_of_another_org,
	"code": "forbidden",
	"message": "Only the organisation that owns a mode can read its drafts or change it.",
} if {
	other_org_mode
	action in change_actions
}

denials contains {
	"rank": precedence.mode_of_another_org,
	"code": "lab_not_available",
	"message": sprintf("Version %v of %q is a lab version, open only to its author's organisation and the organisations it invited.", [mode.version, mode_id]),
} if {
	other_org_mode
	not action in change_actions
	not entitled
	lab_named
}

denials contains {
	"rank": precedence.mode_of_another_org,
	"code": "mode_not_published",
	"message": sprintf("Mode %q is not published in the marketplace.", [mode_id]),
} if {
	other_org_mode
	not action in change_actions
	not entitled
	not lab_named
}

# A system mode whose plans leave out the organisation's plan.
denials contains {
	"rank": precedence.plan_excluded,
	"code": "mode_not_permitted",
	"message": sprintf("Mode %q is not included in your organisation's plan (%s).", [mode_id, org_plan]),
} if {
	system_mode
	not entitled
}

# ---------------------------------------------------------------------------
# Rule 4 — a key limited to named modes may use only those, named by id or
# by ticker (Authentication 3: "a key can be limited to named modes
# (mode_not_allowed)"). To read, a mode outside the list is a mode that
# does not exist: GET /v1/models leaves it out and GET /v1/models/{id}
# answers the same model_not_found (and the same message) as an unknown
# id. To use it — a call, an estimate, a test run or a certification — or
# to read its drafts or change it, the key is refused with
# mode_not_allowed (403).
# ---------------------------------------------------------------------------

key_allows_mode if mode_id in key_modes

key_allows_mode if mode_ticker in key_modes

key_hides_mode if {
	has_mode
	count(key_modes) > 0
	not key_allows_mode
}

# read_actions read a mode as GET /v1/models does: a mode the key may not
# use is, to them, not there.
read_actions := {"models.read"}

denials contains {
	"rank": precedence.key_limited,
	"code": "model_not_found",
	"message": hidden_mode_message,
} if {
	key_hides_mode
	action in read_actions
}

denials contains {
	"rank": precedence.key_limited,
	"code": "mode_not_allowed",
	"message": sprintf("This key is limited to named modes, and %q is not one of them.", [mode_id]),
} if {
	key_hides_mode
	not action in read_actions
}

# ---------------------------------------------------------------------------
# Rule 5 — tier (only when the request asks for one) and plan. The tier must
# be one of the three and one the mode has a seat row for. An API key and a
# signed-in person accept any of the three and every mode; a connected app
# (oauth_app) — and any principal of another or no kind, failing closed — is
# held to the organisation's plan: tiers up to plan_cap, and — to see and
# run (plan_mode_actions) — only the modes in plan_modes when it lists any.
# ---------------------------------------------------------------------------

plan_bound if not principal_kind in {"api_key", "session"}

plan_opens_mode if mode_id in plan_modes

plan_opens_mode if mode_ticker in plan_modes

mode_over_plan if {
	has_mode
	action in plan_mode_actions
	plan_bound
	count(plan_modes) > 0
	not plan_opens_mode
}

tier_unknown if {
	t := tier
	not tier_rank[t]
}

tier_without_seats if {
	t := tier
	tier_rank[t]
	has_mode
	not t in mode_tiers
}

tier_over_plan if {
	t := tier
	plan_bound
	tier_rank[t] > tier_rank[plan_cap]
}

denials contains {
	"rank": precedence.tier,
	"code": "tier_not_permitted",
	"message": sprintf("The tier %v is not one of experience, plus or pro.", [tier]),
} if {
	tier_unknown
}

denials contains {
	"rank": precedence.tier,
	"code": "tier_not_permitted",
	"message": sprintf("Mode %q has no seats at the %s tier.", [mode_id, tier]),
} if {
	tier_without_seats
}

denials contains {
	"rank": precedence.tier,
	"code": "tier_not_permitted",
	"message": sprintf("Your organisation's plan (%s) allows connected apps tiers up to %s; %s is above it.", [org_plan, plan_cap, tier]),
	"param": "tier",
} if {
	tier_over_plan
	not tier_without_seats
}

denials contains {
	"rank": precedence.tier,
	"code": "tier_not_permitted",
	"message": sprintf("Mode %q is not open to connected apps on your organisation's plan (%s).", [mode_id, org_plan]),
	"param": "model",
} if {
	mode_over_plan
}
