#!/usr/bin/env bash
# Fast developer loop: build the extension with optimisations but no LTO, drop it next to the
# Python sources, and use it with `PYTHONPATH=python` (no pip install needed).
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --profile devopt -p minigrad-py "$@"
ext=$(python3 -c "import sysconfig; print(sysconfig.get_config_var('EXT_SUFFIX'))")
# copy then rename: a new inode, so running processes keep the file they mapped
cp -f target/devopt/lib_C.so "python/minigrad/_C${ext}.tmp"
mv -f "python/minigrad/_C${ext}.tmp" "python/minigrad/_C${ext}"
echo "built python/minigrad/_C${ext}; run: PYTHONPATH=python python3 -m pytest tests"
