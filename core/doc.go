// Package core is Conclave's domain: organisations, API keys, money, engines and
// modes, the error codes of the wire contract, and the small interfaces the rest
// of the program implements for it (the store interfaces — Orgs, Ledger, Keys,
// Admission, Receipts, Outcomes, ProviderCredentials, gathered in Store — and
// Authorizer).
//
// core imports only the standard library and small libraries. It never imports
// api, mcp, adapters, plugins, cmd or the database driver; a test enforces that.
// Everything else imports core.
package core
