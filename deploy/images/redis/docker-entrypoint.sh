#!/bin/sh
# The official redis image's entry point, reduced to what this project relies on: arguments
# starting with `-` (or a .conf file) go to redis-server, which runs as the redis user with
# protected mode off, so clients on other containers' addresses are answered (Redis 7 binds every
# address by default when no config file names one).
set -eu

if [ "${1#-}" != "$1" ] || [ "${1%.conf}" != "$1" ]; then
    set -- redis-server "$@"
fi

if [ "$1" = redis-server ] && [ "$(id -u)" = 0 ]; then
    chown -R redis:redis .
    exec setpriv --reuid=redis --regid=redis --init-groups "$0" "$@"
fi

if [ "$1" = redis-server ]; then
    shift
    # Defaults first: the caller's own arguments come later and win.
    set -- redis-server --protected-mode no "$@"
fi

exec "$@"
