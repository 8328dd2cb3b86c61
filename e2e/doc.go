// Package e2e holds the end-to-end tests: an embedded Temporal server, the
// claims agent (or an independent a2a-js agent, an agent stub, a hostile
// proxy) and the worker in one test process, driven through package
// client as a backend drives them. The heavy binary links once; `make
// test` runs them, `make record-histories` records the histories the
// replay tests of package workflows read.
package e2e
