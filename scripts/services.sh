#!/usr/bin/env bash
# Start the database servers the test suite uses, when they are installed but not running.
# Prints one loud line per server that cannot be had; the tests for it then skip.
set -u
up() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
wait_up() { for _ in $(seq 1 30); do up "$1" && return 0; sleep 0.5; done; return 1; }

if ! up 5432; then
  if command -v pg_ctlcluster >/dev/null 2>&1 && [ -d /etc/postgresql ]; then
    pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | head -1)" main start || true
  fi
  wait_up 5432 || echo "!!! PostgreSQL is not available on 127.0.0.1:5432: its tests will be SKIPPED"
fi
if ! up 3306; then
  if [ -x /usr/sbin/mariadbd ]; then
    start-stop-daemon --start --oknodo --background --exec /usr/sbin/mariadbd || true
  fi
  wait_up 3306 || echo "!!! MariaDB is not available on 127.0.0.1:3306: its tests will be SKIPPED"
fi
if ! up 6379; then
  if command -v redis-server >/dev/null 2>&1; then
    mkdir -p /var/lib/redis /var/log/redis
    redis-server --daemonize yes --bind 127.0.0.1 -::1 --port 6379 --save "" --appendonly no \
      --dir /var/lib/redis --logfile /var/log/redis/ci.log || true
  fi
  wait_up 6379 || echo "!!! Redis is not available on 127.0.0.1:6379: its tests will be SKIPPED"
fi
exit 0
