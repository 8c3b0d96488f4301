#!/bin/sh
# The temporal-schema job of docker-compose.yml, run in temporalio/admin-tools: creates the Temporal database
# and its visibility database on PostgreSQL when missing, and migrates both to the schema version this admin-tools
# release ships. Every step is idempotent (`create` accepts an existing database, `setup-schema -v 0.0` keeps a
# newer version), so the job runs on every `docker compose up` and migrates after an upgrade of the image tags.
#
# temporal-sql-tool takes its connection from SQL_PLUGIN, SQL_HOST, SQL_PORT, SQL_USER and SQL_PASSWORD.
set -eu

: "${SQL_PLUGIN:?SQL_PLUGIN is required (postgres12)}"
: "${SQL_HOST:?SQL_HOST is required}"
: "${SQL_USER:?SQL_USER is required}"
DBNAME="${DBNAME:-temporal}"
VISIBILITY_DBNAME="${VISIBILITY_DBNAME:-temporal_visibility}"
SCHEMA_ROOT="${SCHEMA_ROOT:-/etc/temporal/schema/postgresql/v12}"
MAX_ATTEMPTS="${SETUP_MAX_ATTEMPTS:-30}"

# Runs the command until it succeeds, MAX_ATTEMPTS times at most, two seconds apart.
retry() {
  attempt=1
  until "$@"; do
    if [ "$attempt" -ge "$MAX_ATTEMPTS" ]; then
      echo "setup-schema: giving up after $attempt attempts: $*" >&2
      return 1
    fi
    echo "setup-schema: not yet ($attempt/$MAX_ATTEMPTS): $*"
    attempt=$((attempt + 1))
    sleep 2
  done
}

# migrate DATABASE SCHEMA_DIR
migrate() {
  echo "setup-schema: database $1 from $2"
  retry temporal-sql-tool --db "$1" create
  temporal-sql-tool --db "$1" setup-schema -v 0.0
  temporal-sql-tool --db "$1" update-schema -d "$2"
}

migrate "$DBNAME" "$SCHEMA_ROOT/temporal/versioned"
migrate "$VISIBILITY_DBNAME" "$SCHEMA_ROOT/visibility/versioned"
echo "setup-schema: $DBNAME and $VISIBILITY_DBNAME are at the schema of this release"
