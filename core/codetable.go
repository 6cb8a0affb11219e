package core

// ErrorType is the error.type of the wire envelope: the class of a failure.
type ErrorType string

// The error types of the wire contract.
const (
	TypeInvalidRequest ErrorType = "invalid_request_error"
	TypeAuthentication ErrorType = "authentication_error"
	TypePermission     ErrorType = "permission_error"
	TypeRateLimit      ErrorType = "rate_limit_error"
	TypeAPI            ErrorType = "api_error"
)

// Retry is the spec's retry advice for a code (its Retry column).
type Retry string

// Retry advice.
const (
	RetryNo    Retry = "no"
	RetryYes   Retry = "yes"
	RetryWait  Retry = "wait"
	RetryMaybe Retry = "maybe"
)

// CodeInfo is what a wire code means to every carrier: the HTTP status REST
// answers (and MCP results carry as http_status), the envelope's error type
// and the retry advice.
type CodeInfo struct {
	Status int
	Type   ErrorType
	Retry  Retry
}

// codeTable is the one place a wire code becomes an HTTP status, an error
// type and retry advice. Every code core names is here; a test checks that.
var codeTable = map[Code]CodeInfo{
	// Core codes.
	CodeInvalidAPIKey:            {401, TypeAuthentication, RetryNo},
	CodeRevokedAPIKey:            {401, TypeAuthentication, RetryNo},
	CodeInvalidOAuthToken:        {401, TypeAuthentication, RetryNo},
	CodeOrgSuspended:             {403, TypePermission, RetryNo},
	CodeBrowserOriginNotAllowed:  {403, TypePermission, RetryNo},
	CodeInsufficientScope:        {403, TypePermission, RetryNo},
	CodeInvalidModel:             {400, TypeInvalidRequest, RetryNo},
	CodeInvalidMessages:          {400, TypeInvalidRequest, RetryNo},
	CodeInvalidTier:              {400, TypeInvalidRequest, RetryNo},
	CodeInvalidMaxCostUSD:        {400, TypeInvalidRequest, RetryNo},
	CodeStreamNotSupported:       {400, TypeInvalidRequest, RetryNo},
	CodeContextLengthExceeded:    {413, TypeInvalidRequest, RetryNo},
	CodeModelNotFound:            {404, TypeInvalidRequest, RetryNo},
	CodeTierNotPermitted:         {403, TypePermission, RetryNo},
	CodeModeNotPermitted:         {403, TypePermission, RetryNo},
	CodeModeNotPublished:         {403, TypePermission, RetryNo},
	CodeLabNotAvailable:          {403, TypePermission, RetryNo},
	CodeRequestInProgress:        {409, TypeInvalidRequest, RetryWait},
	CodeMissingRequestID:         {400, TypeInvalidRequest, RetryNo},
	CodeReceiptNotFound:          {404, TypeInvalidRequest, RetryNo},
	CodeMethodNotAllowed:         {405, TypeInvalidRequest, RetryNo},
	CodeVerificationRequired:     {402, TypeInvalidRequest, RetryNo},
	CodeInsufficientBalance:      {402, TypeInvalidRequest, RetryNo},
	CodeQuotaExceeded:            {402, TypeInvalidRequest, RetryNo},
	CodeNoBillingConfigured:      {402, TypeInvalidRequest, RetryNo},
	CodePlanLimitReached:         {402, TypeInvalidRequest, RetryNo},
	CodeRateLimitExceeded:        {429, TypeRateLimit, RetryYes},
	CodeConcurrencyLimitExceeded: {429, TypeRateLimit, RetryYes},
	CodeTooManyConcurrent:        {429, TypeRateLimit, RetryYes},
	CodeClassificationFailed:     {502, TypeAPI, RetryYes},
	CodeServiceUnavailable:       {503, TypeAPI, RetryYes},
	CodeModeUnavailable:          {503, TypeAPI, RetryYes},
	CodeUpstreamProviderError:    {502, TypeAPI, RetryYes},
	CodeModeResolutionMismatch:   {502, TypeAPI, RetryYes},
	CodeCostUnreadable:           {502, TypeAPI, RetryYes},
	CodeInternalError:            {500, TypeAPI, RetryYes},

	// Conclave's additions.
	CodeUnknownURL:           {404, TypeInvalidRequest, RetryNo},
	CodeInvalidJSON:          {400, TypeInvalidRequest, RetryNo},
	CodeRequestTooLarge:      {413, TypeInvalidRequest, RetryNo},
	CodeUnsupportedMediaType: {415, TypeInvalidRequest, RetryNo},

	// Test and certification launch codes.
	CodeInvalidBuckets:             {400, TypeInvalidRequest, RetryNo},
	CodeInvalidBucket:              {400, TypeInvalidRequest, RetryNo},
	CodeInvalidBucketCount:         {400, TypeInvalidRequest, RetryNo},
	CodeTooManyQuestions:           {400, TypeInvalidRequest, RetryNo},
	CodeInvalidJudges:              {400, TypeInvalidRequest, RetryNo},
	CodeInvalidQuestions:           {400, TypeInvalidRequest, RetryNo},
	CodeInvalidDifficulty:          {400, TypeInvalidRequest, RetryNo},
	CodeInvalidQuestionCount:       {400, TypeInvalidRequest, RetryNo},
	CodeInvalidTiers:               {400, TypeInvalidRequest, RetryNo},
	CodeInvalidPunchUp:             {400, TypeInvalidRequest, RetryNo},
	CodePriceUnavailable:           {400, TypeInvalidRequest, RetryNo},
	CodeModeNotOwned:               {403, TypePermission, RetryNo},
	CodeLaunchRefused:              {400, TypeInvalidRequest, RetryNo},
	CodeListingRequired:            {400, TypeInvalidRequest, RetryNo},
	CodeMissingBatchID:             {400, TypeInvalidRequest, RetryNo},
	CodeBatchNotFound:              {404, TypeInvalidRequest, RetryNo},
	CodeBatchFinished:              {409, TypeInvalidRequest, RetryNo},
	CodeProviderUnavailable:        {409, TypeAPI, RetryWait},
	CodeIdempotencyKeyReused:       {422, TypeInvalidRequest, RetryNo},
	CodeReconciliationRequired:     {409, TypeInvalidRequest, RetryNo},
	CodeTestLaunchLimitExceeded:    {429, TypeRateLimit, RetryYes},
	CodeCertifyLaunchLimitExceeded: {429, TypeRateLimit, RetryYes},

	// Authoring and tool-server codes that REST can also return.
	CodeTestKeyNotAllowed: {403, TypePermission, RetryNo},
	CodeModeNotAllowed:    {403, TypePermission, RetryNo},
	CodeForbidden:         {403, TypePermission, RetryNo},
	CodeLastOwner:         {409, TypeInvalidRequest, RetryNo},
	CodeModeNotFound:      {404, TypeInvalidRequest, RetryNo},
	CodeInvalidRequest:    {400, TypeInvalidRequest, RetryNo},
	CodeBatchTooLarge:     {413, TypeInvalidRequest, RetryNo},
	CodeOAuthUnavailable:  {503, TypeAPI, RetryYes},

	// Mode authoring (docs/modes.md).
	CodeModeInvalid:               {422, TypeInvalidRequest, RetryNo},
	CodeTickerTaken:               {409, TypeInvalidRequest, RetryNo},
	CodeNameTaken:                 {409, TypeInvalidRequest, RetryNo},
	CodePriceBelowFloor:           {400, TypeInvalidRequest, RetryNo},
	CodeOrgRequired:               {400, TypeInvalidRequest, RetryNo},
	CodeNameTooShort:              {400, TypeInvalidRequest, RetryNo},
	CodeNameTooLong:               {400, TypeInvalidRequest, RetryNo},
	CodeNameBadChars:              {400, TypeInvalidRequest, RetryNo},
	CodeNameEdgePunctuation:       {400, TypeInvalidRequest, RetryNo},
	CodeNameReserved:              {400, TypeInvalidRequest, RetryNo},
	CodeDescriptionBadChars:       {400, TypeInvalidRequest, RetryNo},
	CodeDescriptionTooLong:        {400, TypeInvalidRequest, RetryNo},
	CodeUseWhenInvalid:            {400, TypeInvalidRequest, RetryNo},
	CodeUseWhenTooLong:            {400, TypeInvalidRequest, RetryNo},
	CodePriceRequired:             {400, TypeInvalidRequest, RetryNo},
	CodePriceOverrideNotAllowed:   {400, TypeInvalidRequest, RetryNo},
	CodeTickerRequired:            {400, TypeInvalidRequest, RetryNo},
	CodeTickerInvalid:             {400, TypeInvalidRequest, RetryNo},
	CodeSixSeatsRequired:          {400, TypeInvalidRequest, RetryNo},
	CodeDuplicateSeatEngine:       {400, TypeInvalidRequest, RetryNo},
	CodeSeatEngineNotFound:        {400, TypeInvalidRequest, RetryNo},
	CodeSeatEngineAboveTier:       {400, TypeInvalidRequest, RetryNo},
	CodeSingleFamilyRow:           {400, TypeInvalidRequest, RetryNo},
	CodeSeatSelectionRequired:     {400, TypeInvalidRequest, RetryNo},
	CodeSeatsAmbiguous:            {400, TypeInvalidRequest, RetryNo},
	CodeEngineUnavailable:         {400, TypeInvalidRequest, RetryNo},
	CodeSeatsByTierInvalid:        {400, TypeInvalidRequest, RetryNo},
	CodeSeatTierUnknown:           {400, TypeInvalidRequest, RetryNo},
	CodeSeatTiersNotContiguous:    {400, TypeInvalidRequest, RetryNo},
	CodeSeatsByTierNeedsFixed:     {400, TypeInvalidRequest, RetryNo},
	CodeSeatTiersMinTierMismatch:  {400, TypeInvalidRequest, RetryNo},
	CodeSeatTiersBelowStaff:       {400, TypeInvalidRequest, RetryNo},
	CodeTierRequired:              {400, TypeInvalidRequest, RetryNo},
	CodeStaffRoleUnknown:          {400, TypeInvalidRequest, RetryNo},
	CodeStaffAutoNotAllowed:       {400, TypeInvalidRequest, RetryNo},
	CodeStaffTiersShape:           {400, TypeInvalidRequest, RetryNo},
	CodeStaffTierUnknown:          {400, TypeInvalidRequest, RetryNo},
	CodeStaffTierIsLowest:         {400, TypeInvalidRequest, RetryNo},
	CodeStaffBackupWithoutPrimary: {400, TypeInvalidRequest, RetryNo},
	CodeStaffBackupSameAsPrimary:  {400, TypeInvalidRequest, RetryNo},
	CodeStaffEngineAboveTier:      {400, TypeInvalidRequest, RetryNo},
	CodeSystemModeSeats:           {400, TypeInvalidRequest, RetryNo},
	CodeSystemModeSeatsUntiered:   {400, TypeInvalidRequest, RetryNo},
	CodeSystemModeTierDropped:     {400, TypeInvalidRequest, RetryNo},
	CodeAutoNeedsFixedPool:        {400, TypeInvalidRequest, RetryNo},
	CodeAutoSeatsMixed:            {400, TypeInvalidRequest, RetryNo},
	CodeAutoRowsDifferByTier:      {400, TypeInvalidRequest, RetryNo},
	CodeAutoSeatBackup:            {400, TypeInvalidRequest, RetryNo},
	CodeAutoPickedNeedsBackup:     {400, TypeInvalidRequest, RetryNo},
	CodeFamilyDiversityInvalid:    {400, TypeInvalidRequest, RetryNo},
	CodeFamilyDiversityNeedsAuto:  {400, TypeInvalidRequest, RetryNo},
	CodeFidelityRetired:           {400, TypeInvalidRequest, RetryNo},
	CodeFidelityInert:             {400, TypeInvalidRequest, RetryNo},
	CodeInvalidValue:              {400, TypeInvalidRequest, RetryNo},
	// The mode lifecycle (docs/modes.md, "Lifecycle").
	CodeDraftRequired:               {400, TypeInvalidRequest, RetryNo},
	CodeDraftPending:                {409, TypeInvalidRequest, RetryNo},
	CodeDraftChanged:                {409, TypeInvalidRequest, RetryYes},
	CodeNoDraft:                     {409, TypeInvalidRequest, RetryNo},
	CodeDraftUnvalidated:            {409, TypeInvalidRequest, RetryNo},
	CodeModeNotReleased:             {409, TypeInvalidRequest, RetryNo},
	CodeListingRejected:             {409, TypeInvalidRequest, RetryNo},
	CodeListingDelisted:             {409, TypeInvalidRequest, RetryNo},
	CodeListingChanged:              {409, TypeInvalidRequest, RetryYes},
	CodePublishedVersionUncertified: {409, TypeInvalidRequest, RetryNo},
	CodeOrgOwnerMissing:             {409, TypeInvalidRequest, RetryNo},
	CodeConflict:                    {409, TypeInvalidRequest, RetryNo},

	CodeSuffixNotSupported:    {400, TypeInvalidRequest, RetryNo},
	CodeSaveUnavailable:       {503, TypeAPI, RetryYes},
	CodeValidationUnavailable: {503, TypeAPI, RetryYes},
	CodeListingReadFailed:     {503, TypeAPI, RetryYes},

	// The mode assistant (docs/genie.md).
	CodeGenieUnavailable:    {502, TypeAPI, RetryYes},
	CodeTooFewEngines:       {422, TypeInvalidRequest, RetryNo},
	CodeNoProposal:          {502, TypeAPI, RetryYes},
	CodeEnginesUnavailable:  {503, TypeAPI, RetryYes},
	CodeChatHistoryRequired: {503, TypeAPI, RetryNo},
	CodeInvalidBatchID:      {400, TypeInvalidRequest, RetryNo},
	CodeStatusUnavailable:   {503, TypeAPI, RetryYes},
	CodeInvalidQuoteID:      {400, TypeInvalidRequest, RetryNo},
	CodeQuoteNotFound:       {404, TypeInvalidRequest, RetryNo},
	CodeQuoteAlreadyUsed:    {409, TypeInvalidRequest, RetryNo},
	CodeQuoteExpired:        {410, TypeInvalidRequest, RetryNo},
	CodePayerMismatch:       {403, TypePermission, RetryNo},
	CodeApprovalNotRecorded: {503, TypeAPI, RetryYes},
	CodeQuoteReadFailed:     {503, TypeAPI, RetryYes},
	CodeLaunchFailed:        {502, TypeAPI, RetryYes},
	CodeRequoted:            {409, TypeInvalidRequest, RetryNo},
}

// InfoFor returns what code means on the wire. An unknown code is an
// internal error (500), so that a missing row can never leak as a success.
func InfoFor(code Code) CodeInfo {
	if info, ok := codeTable[code]; ok {
		return info
	}
	return codeTable[CodeInternalError]
}

// KnownCode reports whether code has a row in the table.
func KnownCode(code Code) bool {
	_, ok := codeTable[code]
	return ok
}

// clientAdvice is what a client should do on each code, for the reference in
// docs/api.md (generated from it); a test checks every code has a line.
var clientAdvice = map[Code]string{
	CodeInvalidAPIKey:            "Send `Authorization: Bearer <key>` with a live key of your organisation; do not retry with the same key.",
	CodeRevokedAPIKey:            "The key was revoked or expired: create a new key and use it.",
	CodeInvalidOAuthToken:        "Sign in again to get a fresh token.",
	CodeOrgSuspended:             "Contact the operator; nothing can be called until the organisation is reinstated.",
	CodeBrowserOriginNotAllowed:  "Call from a server, never a browser: a request with an `Origin` header is refused whatever the key.",
	CodeInsufficientScope:        "Use a key with the endpoint's scope (`error.message` names it), or create one.",
	CodeInvalidModel:             "Send `model`: a mode id or ticker from `GET /v1/models`.",
	CodeInvalidMessages:          "Fix the field `error.param` names: `messages` is a non-empty array of `{role, content}` with at least one user message; on chat completions a missing `model` is also this code.",
	CodeInvalidTier:              "Send `tier` as `experience`, `plus` or `pro`, or leave it out.",
	CodeInvalidMaxCostUSD:        "Send `panel.max_cost_usd` as a positive number of dollars at or above the ceiling the message names, or leave it out.",
	CodeStreamNotSupported:       "Send `stream: false` (or leave it out) and allow up to 300 seconds for the answer.",
	CodeContextLengthExceeded:    "Shorten the prompt below the key's input limit (the message gives both counts), or use a key with a higher limit.",
	CodeModelNotFound:            "Pick a mode from `GET /v1/models`: the one named does not exist for this key.",
	CodeTierNotPermitted:         "Ask for a tier the mode has seats for and your plan reaches, or leave `tier` out.",
	CodeModeNotPermitted:         "The organisation's plan does not include this mode: pick another from `GET /v1/models` or change the plan.",
	CodeModeNotPublished:         "The mode is not published: use a published version or ask its owner.",
	CodeLabNotAvailable:          "This version is open only to its author, team and invited users.",
	CodeRequestInProgress:        "Wait `Retry-After` seconds and repeat with the same `Idempotency-Key`: you get the answer once the first call finishes, billed once.",
	CodeMissingRequestID:         "Put the receipt's request id (`req_…`) in the path.",
	CodeReceiptNotFound:          "Check the request id; a receipt is readable only by the organisation that made the call.",
	CodeMethodNotAllowed:         "Use the method the `Allow` header lists.",
	CodeVerificationRequired:     "Verify the organisation; its activation allowance is used up.",
	CodeInsufficientBalance:      "Add funds, or lower `panel.max_cost_usd` so that the ceiling fits the balance.",
	CodeQuotaExceeded:            "Wait for the next month or raise the organisation's monthly quota.",
	CodeNoBillingConfigured:      "Add prepaid funds: the trial credit has ended.",
	CodePlanLimitReached:         "Upgrade the plan or wait for its limit to reset.",
	CodeRateLimitExceeded:        "Wait `Retry-After` seconds, then retry with exponential back-off.",
	CodeConcurrencyLimitExceeded: "Wait `Retry-After` seconds for one of the organisation's calls in flight to finish, then retry.",
	CodeTooManyConcurrent:        "Wait `Retry-After` seconds, then retry.",
	CodeClassificationFailed:     "Retry shortly; nothing was billed.",
	CodeServiceUnavailable:       "Retry with back-off; nothing was run or billed (a check failed closed).",
	CodeModeUnavailable:          "Retry later or pick another mode: too few of the mode's engines are answering.",
	CodeUpstreamProviderError:    "Retry with the same `Idempotency-Key`; nothing is billed twice.",
	CodeModeResolutionMismatch:   "Retry; the mode changed while the call was being set up.",
	CodeCostUnreadable:           "Retry with the same `Idempotency-Key`; the call was not billed.",
	CodeInternalError:            "Retry with the same `Idempotency-Key`; quote `conclave.request_id` if it persists.",

	CodeUnknownURL:           "Check the path against the API reference; every path starts with `/v1`.",
	CodeInvalidJSON:          "Send one JSON object with `Content-Type: application/json`; `error.param` names a field of the wrong type.",
	CodeRequestTooLarge:      "Send a smaller body (1 MiB by default).",
	CodeUnsupportedMediaType: "Send the body as `application/json`.",

	CodeInvalidBuckets:             "Send `buckets` with `light`, `medium` and `hard` counts.",
	CodeInvalidBucket:              "Name only the buckets `light`, `medium` and `hard`.",
	CodeInvalidBucketCount:         "Give each bucket 1 to 100 questions.",
	CodeTooManyQuestions:           "Ask for at most 300 questions in all.",
	CodeInvalidJudges:              "Name judges from `nova_pro`, `mistral_large`, `llama4_maverick`, or leave `judges` out.",
	CodeInvalidQuestions:           "Send `questions` with `easy`, `medium` and `hard` counts.",
	CodeInvalidDifficulty:          "Name only the difficulties `easy`, `medium` and `hard`.",
	CodeInvalidQuestionCount:       "Give each difficulty a count within the limits.",
	CodeInvalidTiers:               "Name tiers from `free`, `plus` and `pro`.",
	CodeInvalidPunchUp:             "Send `punch_up` as a boolean.",
	CodePriceUnavailable:           "The mode has no API price for a band: set one before testing.",
	CodeModeNotOwned:               "Test or certify a mode your organisation owns or can edit.",
	CodeLaunchRefused:              "Read `error.message`; fix what it names and launch again.",
	CodeListingRequired:            "List the mode before certifying it.",
	CodeMissingBatchID:             "Send `batch_id` in the query.",
	CodeBatchNotFound:              "Check the batch id; a batch is visible only to the organisation that launched it.",
	CodeBatchFinished:              "The batch is complete, failed, being scored, or has only answered questions left (they finish and stay paid): there is nothing left to cancel. Poll it for its result.",
	CodeProviderUnavailable:        "Wait and launch again: an engine the run needs has no working primary or backup.",
	CodeIdempotencyKeyReused:       "Use a new `Idempotency-Key` for a different request (or another API key's call); reuse a key only to repeat the same request.",
	CodeReconciliationRequired:     "An earlier attempt with this key stopped before it was confirmed (nothing was charged); the key is retired: launch with a new `Idempotency-Key`.",
	CodeTestLaunchLimitExceeded:    "Wait `Retry-After` seconds (the daily launch limit resets).",
	CodeCertifyLaunchLimitExceeded: "Wait `Retry-After` seconds (the daily certification limit resets).",

	CodeTestKeyNotAllowed: "Use a live key: test keys cannot change modes.",
	CodeModeNotAllowed:    "This key is limited to other modes: use a key allowed this mode.",
	CodeForbidden:         "Use a key or sign-in allowed to change this mode.",
	CodeLastOwner:         "Make another person an owner first: an organisation always keeps at least one owner.",
	CodeModeNotFound:      "Check the mode id; only modes your organisation can see are found.",
	CodeInvalidRequest:    "Fix the request as `error.message` says.",
	CodeBatchTooLarge:     "Send at most 8 calls to self-answered tools in one JSON-RPC batch; resend the refused ids in another batch.",
	CodeOAuthUnavailable:  "Retry with back-off: sign-in could not be checked, and nothing was run.",

	CodeModeInvalid:                 "Fix every entry of `conclave.refusals` (each names its code and the spec path) and send the spec again; nothing was saved.",
	CodeTickerTaken:                 "Pick another ticker; the refusal's `suggested_ticker` is free.",
	CodeNameTaken:                   "Pick another name: your organisation already has a mode with this one.",
	CodePriceBelowFloor:             "Raise the price named by the refusal's path to at least `floor_usd` (`recommended_usd` is the suggested price).",
	CodeOrgRequired:                 "Create or join an organisation first: modes belong to organisations.",
	CodeNameTooShort:                "Give the mode a name of at least 3 characters.",
	CodeNameTooLong:                 "Shorten the name to at most 60 characters.",
	CodeNameBadChars:                "Use only letters, digits, spaces and `- ' & . ,` in the name.",
	CodeNameEdgePunctuation:         "Start and end the name with a letter or digit.",
	CodeNameReserved:                "Choose a name that does not use a reserved word (such as the service's own name).",
	CodeDescriptionBadChars:         "Remove `<`, `>` and control characters from the description.",
	CodeDescriptionTooLong:          "Shorten the description to at most 280 characters.",
	CodeUseWhenInvalid:              "Write `use_when` as a non-empty sentence without `<`, `>` or control characters.",
	CodeUseWhenTooLong:              "Shorten `use_when` to at most 500 characters.",
	CodePriceRequired:               "Set `api_commercial.q_surcharge_by_depth` or `api_commercial.q_surcharge_usd`.",
	CodePriceOverrideNotAllowed:     "Drop `api_commercial.price_override_acknowledged`: any price at or above the floor is accepted without it.",
	CodeTickerRequired:              "Give the mode a four-letter ticker (A to Z).",
	CodeTickerInvalid:               "Write the ticker as exactly four capital letters A to Z, without the organisation part.",
	CodeSixSeatsRequired:            "Give each seat row two to six seats.",
	CodeDuplicateSeatEngine:         "Seat each engine at most once per row (as a primary).",
	CodeSeatEngineNotFound:          "Name engines from `list_engines`; the refusal's path shows the unknown one.",
	CodeSeatEngineAboveTier:         "Use an engine whose highest tier reaches the row's tier.",
	CodeSingleFamilyRow:             "Seat engines from at least two provider families in each row.",
	CodeSeatSelectionRequired:       "Give `seats` (with `min_tier`) or `seats_by_tier`.",
	CodeSeatsAmbiguous:              "Give either `seats` or `seats_by_tier`, not both.",
	CodeEngineUnavailable:           "Pick an engine `list_engines` shows as available.",
	CodeSeatsByTierInvalid:          "Write `seats_by_tier` as an object from tier to a list of seats.",
	CodeSeatTierUnknown:             "Key `seats_by_tier` only by `experience`, `plus` and `pro`.",
	CodeSeatTiersNotContiguous:      "Give seat rows for consecutive tiers, with no tier skipped.",
	CodeSeatsByTierNeedsFixed:       "Fix engines in at least one row of `seats_by_tier`, or write one `seats` row of auto seats.",
	CodeSeatTiersMinTierMismatch:    "Set `min_tier` to the lowest tier of `seats_by_tier`, or leave it out.",
	CodeSeatTiersBelowStaff:         "Hold staff to a tier the mode has seats for, or add seats at that tier.",
	CodeTierRequired:                "Set `min_tier` beside a single `seats` row.",
	CodeStaffRoleUnknown:            "Name staff roles only `judge`, `synthesis`, `grounding` or `classifier`.",
	CodeStaffAutoNotAllowed:         "Name a fixed engine for each staff role; `auto` is for seats only.",
	CodeStaffTiersShape:             "Write a staff role's `tier` as one tier name.",
	CodeStaffTierUnknown:            "Set a staff role's `tier` to `plus` or `pro`.",
	CodeStaffTierIsLowest:           "Drop a staff `tier` of `experience`: every engine reaches it.",
	CodeStaffBackupWithoutPrimary:   "Name the staff role's `engine` before its `backup`.",
	CodeStaffBackupSameAsPrimary:    "Give the staff role a backup different from its engine.",
	CodeStaffEngineAboveTier:        "Use staff engines whose highest tier reaches the role's `tier`.",
	CodeSystemModeSeats:             "Seat fixed engines in a system mode; auto seats are for organisations' modes.",
	CodeSystemModeSeatsUntiered:     "Write a system mode's seats as `seats_by_tier`.",
	CodeSystemModeTierDropped:       "Keep a seat row for every tier in a system mode.",
	CodeAutoNeedsFixedPool:          "List the engines auto seats draw from in `pool`.",
	CodeAutoSeatsMixed:              "Make a row all auto seats or all fixed engines.",
	CodeAutoRowsDifferByTier:        "Give every auto row of `seats_by_tier` the same number of seats.",
	CodeAutoSeatBackup:              "Drop the backup of an auto seat: it is picked from the pool.",
	CodeAutoPickedNeedsBackup:       "Add pool engines: each tier needs one more eligible engine than it has auto seats.",
	CodeFamilyDiversityInvalid:      "Set `family_diversity` to a whole number from 1 to the auto seats of a row and the families of the pool.",
	CodeFamilyDiversityNeedsAuto:    "Drop `family_diversity`, or use auto seats.",
	CodeFidelityRetired:             "Drop `fidelity`; set `critique` and `max_rounds` instead.",
	CodeFidelityInert:               "Drop `fidelity`: it has no effect.",
	CodeInvalidValue:                "Fix the field the refusal's path names (its type or range).",
	CodeDraftRequired:               "Save the spec as a draft first, then release the draft by its mode id and revision.",
	CodeDraftPending:                "The mode has an unreleased draft: release it, or replace it by naming its revision.",
	CodeDraftChanged:                "The draft changed since you read it: read the mode again and retry with its current revision.",
	CodeNoDraft:                     "Nothing to release: the draft is already released. Save a new draft first.",
	CodeDraftUnvalidated:            "The draft did not pass validation: fix it and save it again before releasing.",
	CodeModeNotReleased:             "Release the mode before listing it.",
	CodeListingRejected:             "The listing was rejected in review; contact the operator.",
	CodeListingDelisted:             "The listing was taken down; contact the operator.",
	CodeListingChanged:              "The listing changed since you read it: read the mode again and retry.",
	CodePublishedVersionUncertified: "Certify the version first: only the certified version can be published.",
	CodeOrgOwnerMissing:             "The organisation has no owner to hold a new mode; contact the operator.",
	CodeConflict:                    "The request conflicts with the stored mode: read it again and send a change it allows.",
	CodeSuffixNotSupported:          "Name the mode as it stands (its id or ticker), without an @lab or @vN suffix.",
	CodeSaveUnavailable:             "Nothing was saved. Retry shortly with the same request.",
	CodeValidationUnavailable:       "The draft could not be checked against the engine list; nothing was released. Retry shortly.",
	CodeListingReadFailed:           "The listing could not be read; nothing changed. Retry shortly.",

	CodeGenieUnavailable:    "Retry shortly: the assistant could not answer, and nothing was billed.",
	CodeTooFewEngines:       "Describe a mode the available engines can seat (see `list_engines`), or ask at a higher tier.",
	CodeNoProposal:          "Ask again, perhaps describing the mode more plainly: the assistant answered without a usable spec.",
	CodeEnginesUnavailable:  "Retry shortly: the engine list could not be read (422: no engine is available to build a proposal).",
	CodeChatHistoryRequired: "Launch the run with `run_test` or `certify_mode`: quotes need the assistant's chat history, which this deployment keeps off.",
	CodeInvalidBatchID:      "Send the `batch_id` a launch answered (a UUID).",
	CodeStatusUnavailable:   "Retry shortly: the run's status could not be read.",
	CodeInvalidQuoteID:      "Send the `quote_id` the assistant gave (`qt_…`).",
	CodeQuoteNotFound:       "Check the quote id: a quote is found only by the key or person it was made for.",
	CodeQuoteAlreadyUsed:    "Ask the assistant for a new quote: this one was approved and its launch refused.",
	CodeQuoteExpired:        "Ask the assistant for a new quote: this one expired.",
	CodePayerMismatch:       "Approve the quote with the key or sign-in it was made for, or ask for a quote of your own.",
	CodeApprovalNotRecorded: "Retry shortly: the approval was not saved, and nothing was launched or charged.",
	CodeQuoteReadFailed:     "Retry shortly: the quote could not be read.",
	CodeLaunchFailed:        "Approve the same quote again: it answers the run if it started, and never launches twice.",
	CodeRequoted:            "Approve the new quote in the extra block, if you accept its price: nothing was launched at the old one.",
}

// Advice is what a client should do on code ("" for a code without a row).
func Advice(code Code) string { return clientAdvice[code] }
