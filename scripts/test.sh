#!/usr/bin/env bash
# The whole test suite, as the README gives it and CI runs it: installs minigrad from this
# checkout with its test dependencies (torch pinned), then runs the Rust core's tests and the
# Python differential tests against torch. Exits non-zero on any failure.
set -euo pipefail
cd "$(dirname "$0")/.."

python3 -m pip install --quiet --disable-pip-version-check -e ".[test]"

echo "== cargo test (rust/base, rust/kernels, rust/core) =="
cargo test -p minigrad-base -p minigrad-kernels -p minigrad-core --quiet

echo "== pytest (differential tests against torch) =="
python3 -m pytest tests -p no:cacheprovider "$@"
