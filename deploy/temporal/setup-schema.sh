#!/bin/sh
# Creates Temporal's two PostgreSQL databases (the default store and the
# visibility store) and sets up or updates their schema, as Temporal's own
# compose files do now that the auto-setup image is deprecated. It runs on
# the temporalio/admin-tools image (temporal-sql-tool) before the server
# starts, and is idempotent: `create` leaves an existing database alone,
# `setup-schema -v 0.0` leaves a versioned schema alone, and `update-schema`
# applies only the versions after the one recorded, so running it again
# after an upgrade of the image updates the schema.
#
# Environment: temporal-sql-tool's own, SQL_PLUGIN (postgres12), SQL_HOST,
# SQL_PORT, SQL_USER, SQL_PASSWORD; and the server's names of the two
# databases, DBNAME (default temporal) and VISIBILITY_DBNAME (default
# temporal_visibility).
set -eu

for store in "temporal:${DBNAME:-temporal}" "visibility:${VISIBILITY_DBNAME:-temporal_visibility}"; do
	schema="postgresql/v12/${store%%:*}"
	db="${store#*:}"
	temporal-sql-tool --db "$db" create
	temporal-sql-tool --db "$db" setup-schema -v 0.0
	temporal-sql-tool --db "$db" update-schema --schema-name "$schema"
	echo "database $db: schema $schema up to date"
done
