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
	CodeProviderUnavailable:        {409, TypeAPI, RetryWait},
	CodeIdempotencyKeyReused:       {422, TypeInvalidRequest, RetryNo},
	CodeReconciliationRequired:     {409, TypeInvalidRequest, RetryNo},
	CodeTestLaunchLimitExceeded:    {429, TypeRateLimit, RetryYes},
	CodeCertifyLaunchLimitExceeded: {429, TypeRateLimit, RetryYes},

	// Authoring and tool-server codes that REST can also return.
	CodeTestKeyNotAllowed: {403, TypePermission, RetryNo},
	CodeModeNotAllowed:    {403, TypePermission, RetryNo},
	CodeForbidden:         {403, TypePermission, RetryNo},
	CodeModeNotFound:      {404, TypeInvalidRequest, RetryNo},
	CodeInvalidRequest:    {400, TypeInvalidRequest, RetryNo},
	CodeBatchTooLarge:     {413, TypeInvalidRequest, RetryNo},
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
