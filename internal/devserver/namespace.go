package devserver

import (
	"context"
	"fmt"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/server/common/config"
	"go.temporal.io/server/common/log"
	"go.temporal.io/server/common/metrics"
	"go.temporal.io/server/common/persistence"
	"go.temporal.io/server/common/persistence/serialization"
	"go.temporal.io/server/common/persistence/sql"
	"go.temporal.io/server/common/persistence/sql/sqlplugin"
	"go.temporal.io/server/common/resolver"
	sqliteschema "go.temporal.io/server/schema/sqlite"
)

// prepareStore readies the store (SQLite or PostgreSQL) before the server
// starts, while this process alone may run a server on it (the file's lock,
// lockPostgres, or a new in-memory database):
//   - the namespace, with an alias for every custom search attribute, is
//     written (go.temporal.io/server/schema/sqlite's CreateNamespaces works
//     on any SQL plugin, and is a no-op when the namespace exists), so the
//     server's caches hold them from its first read. It returns the
//     attributes an existing namespace lacks (a database from before an
//     attribute existed): those are registered through the API after the
//     start, which the server's caches only see after their refresh,
//     unless system.forceSearchAttributesCacheRefreshOnRead is on;
//   - the cluster members the last server recorded are removed: none of
//     them runs, and a server started on other ports waited for them to
//     expire (about a minute) before it ran a workflow.
func prepareStore(sqlCfg *config.SQL, ns string, attrs []string) (missing []string, err error) {
	sas := map[string]enumspb.IndexedValueType{}
	for _, n := range attrs {
		sas[n] = enumspb.INDEXED_VALUE_TYPE_KEYWORD
	}
	nsCfg, err := sqliteschema.NewNamespaceConfig("active", ns, false, sas)
	if err != nil {
		return nil, fmt.Errorf("devserver: namespace config: %w", err)
	}
	if err := sqliteschema.CreateNamespaces(sqlCfg, nsCfg); err != nil {
		return nil, fmt.Errorf("devserver: creating namespace %q: %w", ns, err)
	}
	db, err := sql.NewSQLDB(sqlplugin.DbKindMain, sqlCfg, resolver.NewNoopResolver(), log.NewNoopLogger(), metrics.NoopMetricsHandler)
	if err != nil {
		return nil, fmt.Errorf("devserver: opening %s: %w", sqlCfg.DatabaseName, err)
	}
	defer func() { _ = db.Close() }()
	ctx := context.Background()
	rows, err := db.SelectFromNamespace(ctx, sqlplugin.NamespaceFilter{Name: &ns})
	if err != nil || len(rows) == 0 {
		return nil, fmt.Errorf("devserver: reading namespace %q: %v", ns, err)
	}
	detail, err := serialization.NewSerializer().NamespaceDetailFromBlob(persistence.NewDataBlob(rows[0].Data, rows[0].DataEncoding))
	if err != nil {
		return nil, fmt.Errorf("devserver: reading namespace %q: %w", ns, err)
	}
	have := map[string]bool{}
	for _, alias := range detail.GetConfig().GetCustomSearchAttributeAliases() {
		have[alias] = true
	}
	for _, n := range attrs {
		if !have[n] {
			have[n] = true // listed once
			missing = append(missing, n)
		}
	}
	if _, err := db.PruneClusterMembership(ctx, &sqlplugin.PruneClusterMembershipFilter{PruneRecordsBefore: time.Now().AddDate(100, 0, 0)}); err != nil {
		// The first write of a start: a store that cannot be written
		// (a read-only or immutable file) shows here.
		return nil, fmt.Errorf("devserver: --db %s cannot be written (clearing the old cluster members): %w", sqlCfg.DatabaseName, err)
	}
	return missing, nil
}
