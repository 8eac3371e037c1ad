#!/usr/bin/env bash
# Builds the statically linked release binary: target/x86_64-unknown-linux-gnu/release/merchant-admin
# glibc with crt-static: no shared libraries needed at run time, so the file can be copied to
# any x86_64 Linux host (`ldd` says "not a dynamic executable").
set -euo pipefail
cd "$(dirname "$0")/.."
target="${TARGET:-x86_64-unknown-linux-gnu}"
RUSTFLAGS="${RUSTFLAGS:-} -C target-feature=+crt-static" \
  cargo build --release --locked --target "$target"
bin="target/$target/release/merchant-admin"
file "$bin" 2>/dev/null || true
echo "built $bin"
