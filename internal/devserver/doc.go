// Package devserver runs an embedded Temporal server (go.temporal.io/server)
// on SQLite, file-backed or in memory, or on PostgreSQL (Config.Postgres),
// with the Temporal UI (github.com/temporalio/ui-server/v2), for `delegate
// dev`, the bench and the tests. It runs with the dynamic config for one
// host (OneHostDynamicConfig, overridden key by key by
// Config.DynamicConfig), optionally with TLS on its frontend (Config.TLS),
// and its clients connect without gRPC compression (LoopbackConnection).
//
// At start it creates the namespace (default "default") and registers the
// custom Keyword search attributes the caller names (Config.SearchAttributes:
// the CLI passes contracts.SearchAttributeNames), written into the store
// before the server starts, also on a database created by an earlier run;
// a database file (or a PostgreSQL database) is held by one server at a
// time. Everything listens on loopback (or Config.IP). The frontend serves
// its HTTP API too (Config.HTTPPort), which Nexus needs; Nexus itself is on
// in server 1.32 without any dynamic config (there is no enable key, and
// the callback URL of an endpoint with a worker target, "temporal://system",
// is always allowed). EnsureNamespace and EnsureNexusEndpoint add a namespace
// and an endpoint.
package devserver
