#!/usr/bin/env bash
# A throwaway PostgreSQL cluster at its stock settings (autovacuum on, synchronous_commit on), for the
# bench's long runs: a server tuned for tests (this machine's main cluster runs with autovacuum off)
# measures a long run's pick latency and table growth without the vacuum every real server does.
#
#   bench/stock-postgres.sh start   # initdb (once) and start on 127.0.0.1:5433, trust, user postgres
#   bench/stock-postgres.sh stop    # stop it (the data directory stays until `clean`)
#   bench/stock-postgres.sh clean   # stop it and delete its data directory
#
# Then: --jdbc-url "jdbc:postgresql://127.0.0.1:5433/postgres?user=postgres"
# Settings: LAYOVER_STOCK_PG_DIR (default /tmp/layover-stock-pg), LAYOVER_STOCK_PG_PORT (5433),
# PG_BIN (the newest /usr/lib/postgresql/*/bin, else initdb on the PATH).
set -euo pipefail
dir=${LAYOVER_STOCK_PG_DIR:-/tmp/layover-stock-pg}
port=${LAYOVER_STOCK_PG_PORT:-5433}
bin=${PG_BIN:-$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)}
bin=${bin:-$(dirname "$(command -v initdb)")}

as_owner() { # initdb and postgres refuse to run as root
  if [ "$(id -u)" = 0 ]; then su postgres -s /bin/bash -c "$*"; else bash -c "$*"; fi
}

case "${1:-}" in
  start)
    mkdir -p "$dir"
    [ "$(id -u)" = 0 ] && chown postgres "$dir"
    if [ ! -f "$dir/data/PG_VERSION" ]; then
      as_owner "'$bin/initdb' -D '$dir/data' -U postgres --auth=trust -E UTF8 --locale=C > '$dir/initdb.log'"
    fi
    as_owner "'$bin/pg_ctl' -D '$dir/data' -o \"-p $port -k '$dir' -c listen_addresses=127.0.0.1\" -l '$dir/server.log' -w start"
    echo "stock PostgreSQL on 127.0.0.1:$port: jdbc:postgresql://127.0.0.1:$port/postgres?user=postgres"
    ;;
  stop)
    as_owner "'$bin/pg_ctl' -D '$dir/data' -m fast -w stop"
    ;;
  clean)
    as_owner "'$bin/pg_ctl' -D '$dir/data' -m fast -w stop" || true
    rm -rf "$dir"
    ;;
  *)
    echo "usage: $0 start|stop|clean" >&2
    exit 2
    ;;
esac
