#!/bin/sh
# The temporal-setup job of docker-compose.yml, run in temporalio/admin-tools with the `temporal` CLI:
#   1. waits until the cluster reports SERVING;
#   2. creates the namespace, or updates it, with TEMPORAL_NAMESPACE_RETENTION (and archival when URIs are given);
#   3. registers the search attributes given as arguments (NAME=Type ...) that the namespace lacks, and fails when
#      one exists with another type;
#   4. waits until the frontend accepts a visibility query on all of them, so the worker never upserts an attribute
#      the namespace cache does not know yet.
# Safe to run again: nothing is created twice.
#
#   TEMPORAL_ADDRESS=temporal:7233 sh setup-namespace.sh ExpectationKind=Keyword ExpectationDueAt=Datetime ExpectationLate=Bool
set -eu

: "${TEMPORAL_ADDRESS:?TEMPORAL_ADDRESS is required, e.g. temporal:7233}"
export TEMPORAL_ADDRESS
NAMESPACE="${TEMPORAL_NAMESPACE:-default}"
RETENTION="${TEMPORAL_NAMESPACE_RETENTION:-720h}"
HISTORY_ARCHIVAL_URI="${TEMPORAL_HISTORY_ARCHIVAL_URI:-}"
VISIBILITY_ARCHIVAL_URI="${TEMPORAL_VISIBILITY_ARCHIVAL_URI:-}"
MAX_ATTEMPTS="${SETUP_MAX_ATTEMPTS:-60}"

usage() {
  [ -z "${1:-}" ] || echo "setup-namespace: bad argument: $1" >&2
  echo "usage: setup-namespace.sh NAME=Type [NAME=Type ...]" >&2
  exit 2
}
[ "$#" -gt 0 ] || usage
for pair in "$@"; do
  case "$pair" in
    *=*=* | =* | *=) usage "$pair" ;;
    *=*) ;;
    *) usage "$pair" ;;
  esac
done

log() { echo "setup-namespace: $*"; }

# Runs the command until it succeeds, MAX_ATTEMPTS times at most, two seconds apart.
retry() {
  attempt=1
  until "$@"; do
    if [ "$attempt" -ge "$MAX_ATTEMPTS" ]; then
      log "giving up after $attempt attempts: $*" >&2
      return 1
    fi
    log "not yet ($attempt/$MAX_ATTEMPTS): $*"
    attempt=$((attempt + 1))
    sleep 2
  done
}

serving() { temporal operator cluster health 2>/dev/null | grep -q SERVING; }
namespace_exists() { temporal operator namespace describe --namespace "$NAMESPACE" >/dev/null 2>&1; }

# Archival flags for create and update; a URI cannot be changed once archival was enabled with it.
archival_flags=""
if [ -n "$HISTORY_ARCHIVAL_URI" ]; then
  archival_flags="$archival_flags --history-archival-state enabled --history-uri $HISTORY_ARCHIVAL_URI"
fi
if [ -n "$VISIBILITY_ARCHIVAL_URI" ]; then
  archival_flags="$archival_flags --visibility-archival-state enabled --visibility-uri $VISIBILITY_ARCHIVAL_URI"
fi

create_namespace() {
  # shellcheck disable=SC2086 # archival_flags is a list of flags without spaces inside them
  temporal operator namespace create --namespace "$NAMESPACE" --retention "$RETENTION" \
    --description "Expectations watcher" $archival_flags || namespace_exists
}

update_namespace() {
  # shellcheck disable=SC2086
  temporal operator namespace update --namespace "$NAMESPACE" --retention "$RETENTION" $archival_flags
}

log "waiting for $TEMPORAL_ADDRESS to report SERVING"
retry serving

if namespace_exists; then
  log "namespace $NAMESPACE exists: retention $RETENTION"
  retry update_namespace
else
  log "creating namespace $NAMESPACE with retention $RETENTION"
  retry create_namespace
fi

# A namespace just created reaches the frontend's cache within seconds: list until it answers.
existing=""
list_attributes() { existing="$(temporal operator search-attribute list --namespace "$NAMESPACE")"; }
retry list_attributes

# Register what is missing, in one call.
create_flags=""
probe=""
for pair in "$@"; do
  name="${pair%%=*}"
  type="${pair#*=}"
  line="$(printf '%s\n' "$existing" | grep -w -- "$name" | head -n 1 || true)"
  if [ -z "$line" ]; then
    create_flags="$create_flags --name $name --type $type"
  elif printf '%s\n' "$line" | grep -qiE "(^|[[:space:]_])$type([[:space:]]|\$)"; then
    log "search attribute $name ($type) already registered"
  else
    echo "setup-namespace: search attribute $name exists with another type: $line" >&2
    exit 1
  fi
  case "$type" in
    Datetime) clause="$name >= '1970-01-01T00:00:00Z'" ;;
    Int | Double) clause="$name >= 0" ;;
    Bool) clause="$name = true" ;;
    *) clause="$name = 'setup-probe'" ;;
  esac
  probe="${probe:+$probe AND }$clause"
done

if [ -n "$create_flags" ]; then
  log "registering:$create_flags"
  # shellcheck disable=SC2086 # names and types are identifiers
  retry temporal operator search-attribute create --namespace "$NAMESPACE" $create_flags
fi

log "waiting until the frontend accepts: $probe"
retry temporal workflow count --namespace "$NAMESPACE" --query "$probe"

temporal operator namespace describe --namespace "$NAMESPACE"
log "done"
