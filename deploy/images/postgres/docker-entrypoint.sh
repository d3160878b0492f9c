#!/bin/sh
# The official postgres image's entry point, reduced to what this project relies on:
# - on an empty data directory, initdb with POSTGRES_USER (default postgres) and POSTGRES_PASSWORD,
#   password authentication (POSTGRES_HOST_AUTH_METHOD, default scram-sha-256) from any address,
#   and POSTGRES_DB (default the user's name) created;
# - the server then runs in the foreground as the postgres user, listening on every address.
# Like the official image, the temporary server used during initialisation logs to stdout and the
# final server to stderr: testcontainers waits for "ready to accept connections" on both.
set -eu

# `docker run image -c fsync=off` means `postgres -c fsync=off`.
if [ "${1#-}" != "$1" ]; then
    set -- postgres "$@"
fi

if [ "$1" = postgres ] && [ "$(id -u)" = 0 ]; then
    mkdir -p "$PGDATA" /var/run/postgresql
    chown -R postgres:postgres "$PGDATA" /var/run/postgresql
    chmod 700 "$PGDATA"
    exec setpriv --reuid=postgres --regid=postgres --init-groups "$0" "$@"
fi

if [ "$1" = postgres ] && [ ! -s "$PGDATA/PG_VERSION" ]; then
    user="${POSTGRES_USER:-postgres}"
    database="${POSTGRES_DB:-$user}"
    auth="${POSTGRES_HOST_AUTH_METHOD:-scram-sha-256}"
    if [ -z "${POSTGRES_PASSWORD:-}" ] && [ "$auth" != trust ]; then
        echo 'error: the database is uninitialized and POSTGRES_PASSWORD is not set' >&2
        echo '       (set it, or POSTGRES_HOST_AUTH_METHOD=trust to allow every connection)' >&2
        exit 1
    fi

    pwfile="$(mktemp)"
    printf '%s\n' "${POSTGRES_PASSWORD:-}" > "$pwfile"
    # shellcheck disable=SC2086 # POSTGRES_INITDB_ARGS is a list of arguments, as upstream.
    initdb --username="$user" --pwfile="$pwfile" ${POSTGRES_INITDB_ARGS:-}
    rm -f "$pwfile"
    printf "\nlisten_addresses = '*'\n" >> "$PGDATA/postgresql.conf"
    printf 'host all all all %s\n' "$auth" >> "$PGDATA/pg_hba.conf"

    # A temporary server on the socket only, to create the database.
    pg_ctl -D "$PGDATA" -o "-c listen_addresses=''" -w start 2>&1
    if [ "$database" != postgres ]; then
        # From stdin, not -c: psql interpolates :"db" (quoted as an identifier) only there.
        echo 'create database :"db"' \
            | psql -v ON_ERROR_STOP=1 --username "$user" --dbname postgres --set db="$database"
    fi
    pg_ctl -D "$PGDATA" -m fast -w stop 2>&1
    echo 'PostgreSQL init process complete; ready for start up.'
fi

exec "$@"
