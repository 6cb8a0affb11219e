package core

// Code is a stable error code of the wire contract. Callers branch on it; the
// human message beside it may be reworded at any time.
//
// The HTTP status, error type and retry advice of each code live in one table,
// InfoFor (codetable.go); every carrier renders from it.
type Code string

// Core codes (the spec's "Core codes" table).
const (
	CodeInvalidAPIKey            Code = "invalid_api_key"
	CodeRevokedAPIKey            Code = "revoked_api_key"
	CodeInvalidOAuthToken        Code = "invalid_oauth_token"
	CodeOrgSuspended             Code = "org_suspended"
	CodeBrowserOriginNotAllowed  Code = "browser_origin_not_allowed"
	CodeInsufficientScope        Code = "insufficient_scope"
	CodeInvalidModel             Code = "invalid_model"
	CodeInvalidMessages          Code = "invalid_messages"
	CodeInvalidTier              Code = "invalid_tier"
	CodeInvalidMaxCostUSD        Code = "invalid_max_cost_usd"
	CodeStreamNotSupported       Code = "stream_not_supported"
	CodeContextLengthExceeded    Code = "context_length_exceeded"
	CodeModelNotFound            Code = "model_not_found"
	CodeTierNotPermitted         Code = "tier_not_permitted"
	CodeModeNotPermitted         Code = "mode_not_permitted"
	CodeModeNotPublished         Code = "mode_not_published"
	CodeLabNotAvailable          Code = "lab_not_available"
	CodeRequestInProgress        Code = "request_in_progress"
	CodeMissingRequestID         Code = "missing_request_id"
	CodeReceiptNotFound          Code = "receipt_not_found"
	CodeMethodNotAllowed         Code = "method_not_allowed"
	CodeVerificationRequired     Code = "verification_required"
	CodeInsufficientBalance      Code = "insufficient_balance"
	CodeQuotaExceeded            Code = "quota_exceeded"
	CodeNoBillingConfigured      Code = "no_billing_configured"
	CodePlanLimitReached         Code = "plan_limit_reached"
	CodeRateLimitExceeded        Code = "rate_limit_exceeded"
	CodeConcurrencyLimitExceeded Code = "concurrency_limit_exceeded"
	CodeTooManyConcurrent        Code = "too_many_concurrent_requests"
	CodeClassificationFailed     Code = "classification_failed"
	CodeServiceUnavailable       Code = "service_unavailable"
	CodeModeUnavailable          Code = "mode_unavailable"
	CodeUpstreamProviderError    Code = "upstream_provider_error"
	CodeModeResolutionMismatch   Code = "mode_resolution_mismatch"
	CodeCostUnreadable           Code = "cost_unreadable"
	CodeInternalError            Code = "internal_error"
)

// Codes Conclave adds to the spec's tables for situations the spec names but
// gives no code for. Each is documented in docs/errors.md.
const (
	// CodeUnknownURL answers a path no route serves (HTTP 404).
	CodeUnknownURL Code = "unknown_url"
	// CodeInvalidJSON answers a body that is not a JSON object (HTTP 400).
	CodeInvalidJSON Code = "invalid_json"
	// CodeRequestTooLarge answers a body over the server's size cap (HTTP 413).
	// The spec lists it as another name for an oversized request.
	CodeRequestTooLarge Code = "request_too_large"
	// CodeUnsupportedMediaType answers a body sent with a Content-Type other
	// than application/json (HTTP 415).
	CodeUnsupportedMediaType Code = "unsupported_media_type"
)

// Test and certification launch codes.
const (
	CodeInvalidBuckets             Code = "invalid_buckets"
	CodeInvalidBucket              Code = "invalid_bucket"
	CodeInvalidBucketCount         Code = "invalid_bucket_count"
	CodeTooManyQuestions           Code = "too_many_questions"
	CodeInvalidJudges              Code = "invalid_judges"
	CodeInvalidQuestions           Code = "invalid_questions"
	CodeInvalidDifficulty          Code = "invalid_difficulty"
	CodeInvalidQuestionCount       Code = "invalid_question_count"
	CodeInvalidTiers               Code = "invalid_tiers"
	CodeInvalidPunchUp             Code = "invalid_punch_up"
	CodePriceUnavailable           Code = "price_unavailable"
	CodeModeNotOwned               Code = "mode_not_owned"
	CodeLaunchRefused              Code = "launch_refused"
	CodeListingRequired            Code = "listing_required"
	CodeMissingBatchID             Code = "missing_batch_id"
	CodeBatchNotFound              Code = "batch_not_found"
	CodeBatchFinished              Code = "batch_finished"
	CodeProviderUnavailable        Code = "provider_unavailable"
	CodeIdempotencyKeyReused       Code = "idempotency_key_reused"
	CodeReconciliationRequired     Code = "reconciliation_required"
	CodeTestLaunchLimitExceeded    Code = "test_launch_limit_exceeded"
	CodeCertifyLaunchLimitExceeded Code = "certify_launch_limit_exceeded"
)

// Codes used by the tool server and by mode authoring.
const (
	CodeTestKeyNotAllowed Code = "test_key_not_allowed"
	CodeModeNotAllowed    Code = "mode_not_allowed"
	CodeForbidden         Code = "forbidden"
	CodeModeNotFound      Code = "mode_not_found"
	CodeInvalidRequest    Code = "invalid_request"
	// CodeBatchTooLarge answers a call to a self-answered tool past the
	// limit of such calls in one batch; the call did not run.
	CodeBatchTooLarge Code = "batch_too_large"
	// CodeOAuthUnavailable answers a connected app's request when its token
	// could not be checked (the signing keys or the grant unreadable): the
	// request is refused, never let through.
	CodeOAuthUnavailable Code = "oauth_unavailable"
	// CodeLastOwner refuses demoting or removing an organisation's last
	// owner: an organisation always keeps one. (The spec's
	// org_owner_missing is another thing: a new mode in an organisation
	// without an owner.)
	CodeLastOwner Code = "last_owner"
)

// Mode authoring: the refusals of mode validation (docs/modes.md names the
// rule behind each) and mode_invalid, the answer that carries them.
const (
	CodeModeInvalid               Code = "mode_invalid"
	CodeNameTaken                 Code = "name_taken"
	CodeTickerTaken               Code = "ticker_taken"
	CodePriceBelowFloor           Code = "price_below_floor"
	CodeOrgRequired               Code = "org_required"
	CodeNameTooShort              Code = "name_too_short"
	CodeNameTooLong               Code = "name_too_long"
	CodeNameBadChars              Code = "name_bad_chars"
	CodeNameEdgePunctuation       Code = "name_edge_punctuation"
	CodeNameReserved              Code = "name_reserved"
	CodeDescriptionBadChars       Code = "description_bad_chars"
	CodeDescriptionTooLong        Code = "description_too_long"
	CodeUseWhenInvalid            Code = "use_when_invalid"
	CodeUseWhenTooLong            Code = "use_when_too_long"
	CodePriceRequired             Code = "price_required"
	CodePriceOverrideNotAllowed   Code = "price_override_not_allowed"
	CodeTickerRequired            Code = "ticker_required"
	CodeTickerInvalid             Code = "ticker_invalid"
	CodeSixSeatsRequired          Code = "six_seats_required"
	CodeDuplicateSeatEngine       Code = "duplicate_seat_engine"
	CodeSeatEngineNotFound        Code = "seat_engine_not_found"
	CodeSeatEngineAboveTier       Code = "seat_engine_above_tier"
	CodeSingleFamilyRow           Code = "single_family_row"
	CodeSeatSelectionRequired     Code = "seat_selection_required"
	CodeSeatsAmbiguous            Code = "seats_ambiguous"
	CodeEngineUnavailable         Code = "engine_unavailable"
	CodeSeatsByTierInvalid        Code = "seats_by_tier_invalid"
	CodeSeatTierUnknown           Code = "seat_tier_unknown"
	CodeSeatTiersNotContiguous    Code = "seat_tiers_not_contiguous"
	CodeSeatsByTierNeedsFixed     Code = "seats_by_tier_needs_fixed"
	CodeSeatTiersMinTierMismatch  Code = "seat_tiers_min_tier_mismatch"
	CodeSeatTiersBelowStaff       Code = "seat_tiers_below_staff"
	CodeTierRequired              Code = "tier_required"
	CodeStaffRoleUnknown          Code = "staff_role_unknown"
	CodeStaffAutoNotAllowed       Code = "staff_auto_not_allowed"
	CodeStaffTiersShape           Code = "staff_tiers_shape"
	CodeStaffTierUnknown          Code = "staff_tier_unknown"
	CodeStaffTierIsLowest         Code = "staff_tier_is_lowest"
	CodeStaffBackupWithoutPrimary Code = "staff_backup_without_primary"
	CodeStaffBackupSameAsPrimary  Code = "staff_backup_same_as_primary"
	CodeStaffEngineAboveTier      Code = "staff_engine_above_tier"
	CodeSystemModeSeats           Code = "system_mode_seats"
	CodeSystemModeSeatsUntiered   Code = "system_mode_seats_untiered"
	CodeSystemModeTierDropped     Code = "system_mode_tier_dropped"
	CodeAutoNeedsFixedPool        Code = "auto_needs_fixed_pool"
	CodeAutoSeatsMixed            Code = "auto_seats_mixed"
	CodeAutoRowsDifferByTier      Code = "auto_rows_differ_by_tier"
	CodeAutoSeatBackup            Code = "auto_seat_backup"
	CodeAutoPickedNeedsBackup     Code = "auto_picked_needs_backup"
	CodeFamilyDiversityInvalid    Code = "family_diversity_invalid"
	CodeFamilyDiversityNeedsAuto  Code = "family_diversity_needs_auto"
	CodeFidelityRetired           Code = "fidelity_retired"
	CodeFidelityInert             Code = "fidelity_inert"
	CodeInvalidValue              Code = "invalid_value"
)

// The mode lifecycle: the refusals of saving, releasing, listing, certifying
// and publishing an organisation's mode. docs/modes.md ("Lifecycle") names
// the transition behind each; core.ModeState.Apply returns them.
const (
	CodeDraftRequired               Code = "draft_required"
	CodeDraftPending                Code = "draft_pending"
	CodeDraftChanged                Code = "draft_changed"
	CodeNoDraft                     Code = "no_draft"
	CodeDraftUnvalidated            Code = "draft_unvalidated"
	CodeModeNotReleased             Code = "mode_not_released"
	CodeListingRejected             Code = "listing_rejected"
	CodeListingDelisted             Code = "listing_delisted"
	CodeListingChanged              Code = "listing_changed"
	CodePublishedVersionUncertified Code = "published_version_uncertified"
	CodeOrgOwnerMissing             Code = "org_owner_missing"
	CodeConflict                    Code = "conflict"
)

// Mode authoring's other answers: a suffix where a mode is read as it
// stands, and the store or policy failing under a save, a release or a
// listing change.
const (
	CodeSuffixNotSupported    Code = "suffix_not_supported"
	CodeSaveUnavailable       Code = "save_unavailable"
	CodeValidationUnavailable Code = "validation_unavailable"
	CodeListingReadFailed     Code = "listing_read_failed"
)

// The mode assistant's codes (ask_genie, approve_quote,
// genie_propose_mode; docs/genie.md).
const (
	CodeGenieUnavailable    Code = "genie_unavailable"
	CodeTooFewEngines       Code = "too_few_engines"
	CodeNoProposal          Code = "no_proposal"
	CodeEnginesUnavailable  Code = "engines_unavailable"
	CodeChatHistoryRequired Code = "chat_history_required"
	CodeInvalidBatchID      Code = "invalid_batch_id"
	CodeStatusUnavailable   Code = "status_unavailable"
	CodeInvalidQuoteID      Code = "invalid_quote_id"
	CodeQuoteNotFound       Code = "quote_not_found"
	CodeQuoteAlreadyUsed    Code = "quote_already_used"
	CodeQuoteExpired        Code = "quote_expired"
	CodePayerMismatch       Code = "payer_mismatch"
	CodeApprovalNotRecorded Code = "approval_not_recorded"
	CodeQuoteReadFailed     Code = "quote_read_failed"
	CodeLaunchFailed        Code = "launch_failed"
	CodeRequoted            Code = "requoted"
)
