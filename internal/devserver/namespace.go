package devserver

import (
	"context"
	"fmt"
	"slices"

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

// prepareNamespace writes the namespace with an alias for every custom
// search attribute into the store before the server starts (SQLite or
// PostgreSQL: go.temporal.io/server/schema/sqlite's CreateNamespaces works
// on any SQL plugin, and is a no-op when the namespace exists), so that
// the server's caches hold them from its first read. It returns the
// attributes the namespace already stored lacks (a database from before
// an attribute existed): those are registered through the API after the
// start, which the server's caches only see after their refresh, unless
// system.forceSearchAttributesCacheRefreshOnRead is on.
func prepareNamespace(sqlCfg *config.SQL, ns string, attrs []string) (missing []string, err error) {
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
		return nil, fmt.Errorf("devserver: reading namespace %q: %w", ns, err)
	}
	defer func() { _ = db.Close() }()
	rows, err := db.SelectFromNamespace(context.Background(), sqlplugin.NamespaceFilter{Name: &ns})
	if err != nil || len(rows) == 0 {
		return nil, fmt.Errorf("devserver: reading namespace %q: %v", ns, err)
	}
	detail, err := serialization.NewSerializer().NamespaceDetailFromBlob(persistence.NewDataBlob(rows[0].Data, rows[0].DataEncoding))
	if err != nil {
		return nil, fmt.Errorf("devserver: reading namespace %q: %w", ns, err)
	}
	have := detail.GetConfig().GetCustomSearchAttributeAliases()
	for _, n := range attrs {
		found := false
		for _, alias := range have {
			found = found || alias == n
		}
		if !found && !slices.Contains(missing, n) {
			missing = append(missing, n)
		}
	}
	return missing, nil
}
