#!/usr/bin/env bash
# The scheduler core must stay pure: no I/O, socket, thread, clock, database or HTTP
# headers in src/core (DESIGN.md §6). This fails naming each offending include.
set -u
root=${GP_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
forbidden='stdio\.h|unistd\.h|fcntl\.h|time\.h|sys/|pthread\.h|threads\.h|signal\.h|dirent\.h|dlfcn\.h|netinet/|arpa/|netdb\.h|poll\.h|sqlite3\.h|libpq|microhttpd\.h|curl/|jansson\.h|yaml\.h|setjmp\.h'
bad=$(grep -rnE "^\s*#\s*include\s*[<\"]($forbidden)" "$root/src/core" || true)
# The core may only include itself and src/util.
bad2=$(grep -rnE '^\s*#\s*include\s*"' "$root/src/core" | grep -vE '"(core|util)/' || true)
if [ -n "$bad$bad2" ]; then
  echo "src/core must not include I/O, clock, thread, database or HTTP headers:"
  printf '%s\n%s\n' "$bad" "$bad2" | sed '/^$/d'
  exit 1
fi
n=$(find "$root/src/core" -name '*.[ch]' | wc -l)
echo "ok: $n core files include no I/O, clock, thread, database or HTTP headers"
