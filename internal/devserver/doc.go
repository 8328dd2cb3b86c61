// Package devserver runs an embedded Temporal server (go.temporal.io/server)
// on SQLite, file-backed or in memory, with the Temporal UI
// (github.com/temporalio/ui-server/v2), for `delegate dev` and the
// end-to-end tests.
//
// At start it creates the namespace (default "default") and registers the
// custom Keyword search attributes the caller names (Config.SearchAttributes:
// the CLI passes contracts.SearchAttributeNames), also on a database created
// by an earlier run. Everything listens on loopback.
package devserver
