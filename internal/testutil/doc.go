// Package testutil holds helpers shared by the tests of several packages:
// a buffer safe for concurrent writers (LockedBuffer), an empty file for a
// test to name where a user's own file would be read (EmptyFile), a
// handler helper that trickles a reply (Trickle), the PostgreSQL server of
// `make test-postgres` (PostgresURL), and SkipGroup, which skips a test
// whose peers or server are missing and records it for the summary line
// `make test` ends with.
package testutil
