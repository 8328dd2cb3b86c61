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
// time. Everything listens on loopback (or Config.IP).
package devserver
