// Package devserver runs an embedded Temporal server (go.temporal.io/server)
// on SQLite, file-backed or in memory, with the Temporal UI
// (github.com/temporalio/ui-server/v2), for `delegate dev` and the
// end-to-end tests.
//
// At start it creates the namespace (default "default") and registers the
// custom Keyword search attributes the caller names (Config.SearchAttributes:
// the CLI passes contracts.SearchAttributeNames), also on a database created
// by an earlier run. Everything listens on loopback. The frontend serves
// its HTTP API too (Config.HTTPPort), which Nexus needs; Nexus itself is on
// in server 1.32 without any dynamic config (there is no enable key, and
// the callback URL of an endpoint with a worker target, "temporal://system",
// is always allowed). EnsureNamespace and EnsureNexusEndpoint add a namespace
// and an endpoint.
package devserver
