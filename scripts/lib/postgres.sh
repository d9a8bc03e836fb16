# Shared by scripts/*: make sure PostgreSQL server binaries exist so the Go
# code can start a throwaway cluster when no server is reachable.
ensure_postgres_binaries() {
  if [ -n "${DATABASE_URL:-}" ]; then return 0; fi
  if command -v initdb >/dev/null 2>&1 || ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then return 0; fi
  if command -v pg_isready >/dev/null 2>&1 && pg_isready -q -h 127.0.0.1 -p 5432; then return 0; fi
  if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
    echo "==> PostgreSQL server binaries not found: installing the Debian postgresql package"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null
  else
    echo "PostgreSQL server binaries not found. Install them, e.g.: sudo apt-get install postgresql" >&2
    return 1
  fi
}
