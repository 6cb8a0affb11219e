// Package internal holds no code: the folder holds what the rest of the
// module uses but does not show its callers — storage (pgstore: every store
// interface, the River driver), the River workers (jobs), configuration,
// the local PostgreSQL manager (localpg), token counting, and test tooling
// (pgtest, deptest, loadtest, logtest, deliberatetest). Its test states
// the import rules of storage and of the folder.
package internal
