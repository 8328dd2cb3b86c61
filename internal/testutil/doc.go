// Package testutil holds helpers shared by the tests of several packages:
// a buffer safe for concurrent writers, and the PostgreSQL server of
// `make test-postgres`.
package testutil
