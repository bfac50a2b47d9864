#!/usr/bin/env bash
# Runs the client test suites: Python (system interpreter, stdlib only) and Node (node:test,
# no dependencies, so no npm install). Exits non-zero if either fails; both always run.
set -uo pipefail
cd "$(dirname "$0")"

status=0
printf '\n==> Python client tests\n' >&2
(cd python && /usr/bin/python3 -m unittest discover -s tests -v) || status=1
printf '\n==> Node client tests\n' >&2
npm test --silent --prefix node || status=1

if [ "$status" -eq 0 ]; then
  printf '\n==> client tests passed\n' >&2
else
  printf '\n==> client tests FAILED\n' >&2
fi
exit "$status"
