package devserver

import (
	"database/sql"
	"errors"
	"fmt"
	"maps"
	"os"

	"go.temporal.io/server/common/config"
	sqliteschema "go.temporal.io/server/schema/sqlite"
)

// prepareSQLiteFile makes path a complete Temporal database before the
// server starts, under the file's lock (one server per file):
//   - a missing or empty file gets the schema (go.temporal.io/server's
//     schema/sqlite.SetupSchema) in path+".new", renamed to path when
//     complete, so a start killed half-way leaves no file that every later
//     start refuses;
//   - an existing file must hold the whole schema; otherwise the error
//     names the file and what to do (it is not removed: it may be another
//     program's database).
func prepareSQLiteFile(sqlCfg *config.SQL, path string) error {
	st, err := os.Stat(path)
	switch {
	case errors.Is(err, os.ErrNotExist) || err == nil && st.Size() == 0:
		return createSQLiteFile(sqlCfg, path)
	case err != nil:
		return fmt.Errorf("devserver: --db %s: %w", path, err)
	default:
		return checkSQLiteSchema(path)
	}
}

func createSQLiteFile(sqlCfg *config.SQL, path string) error {
	tmp := path + ".new"
	for _, f := range []string{tmp, tmp + "-journal", tmp + "-wal", tmp + "-shm"} {
		if err := os.Remove(f); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("devserver: --db %s: %w", path, err)
		}
	}
	// A rollback journal while it is built: nothing is left beside the
	// file when it is closed, and the start after turns it to WAL.
	c := *sqlCfg
	c.DatabaseName = tmp
	c.ConnectAttributes = maps.Clone(sqlCfg.ConnectAttributes)
	delete(c.ConnectAttributes, "journal_mode")
	if err := sqliteschema.SetupSchema(&c); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("devserver: setting up the SQLite schema in %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("devserver: --db %s: %w", path, err)
	}
	return nil
}

// checkSQLiteSchema: the last object the schema creates (a trigger of
// executions_visibility) and the first table (namespaces) are there.
func checkSQLiteSchema(path string) error {
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	if err == nil {
		defer func() { _ = db.Close() }()
		var n int
		err = db.QueryRow(`SELECT count(*) FROM sqlite_master WHERE (type = 'table' AND name = 'namespaces') OR (type = 'trigger' AND name = 'executions_visibility_au')`).Scan(&n)
		if err == nil && n == 2 {
			return nil
		}
	}
	reason := "it lacks part of the schema"
	if err != nil {
		reason = err.Error()
	}
	return fmt.Errorf("devserver: --db %s is not a complete Temporal database (%s): an earlier first start was interrupted, or it is another program's file; remove it or give another --db", path, reason)
}
