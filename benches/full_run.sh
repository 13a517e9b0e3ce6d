#!/usr/bin/env bash
# The full benchmark run behind docs/benchmarks.md: every suite, every raw figure kept.
# Usage: ./benches/full_run.sh [extra minigrad-bench options, e.g. --threads 1]
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p docs/bench
if command -v minigrad >/dev/null && [ -z "${PYTHONPATH:-}" ]; then run=(minigrad); else run=(python3 -m minigrad); fi
"${run[@]}" bench --json docs/bench/full.json --markdown docs/bench/full.md --plot docs/bench/full.png "$@"
