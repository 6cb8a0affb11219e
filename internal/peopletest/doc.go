// Package peopletest tests the people service (core/people) on the real
// pieces: the PostgreSQL store, the embedded policies, the access service
// and the BYOK sealer. It holds tests only (core's own tests may not reach
// storage), and the sign-in timing benchmark.
package peopletest
