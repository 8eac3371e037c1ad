#!/usr/bin/env bash
# Builds the release binary linked statically against musl: dist/merchant-admin (+ .sha256).
#
# No shared libraries at all (no NEEDED entry, no interpreter), so the one file runs on any
# x86_64 Linux kernel >= 3.2 whatever its libc (Alpine, distroless, FROM scratch, an old
# CentOS). glibc's crt-static is not used: its getaddrinfo still dlopen()s the host's NSS
# modules, so name resolution would depend on the host's glibc after all. musl's resolver
# reads /etc/resolv.conf and /etc/hosts itself and speaks DNS directly.
#
# The C parts (rusqlite's bundled SQLite, ring, mimalloc) are compiled with musl-gcc, from
# Debian's musl-tools, installed here if missing (as .ci/run does for chromium).
#
# Usage: packaging/build-release.sh        (TARGET_DIR=... to use another cargo target dir)
set -euo pipefail
cd "$(dirname "$0")/.."

target=x86_64-unknown-linux-musl
sudo=""
if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi

if ! rustup target list --installed 2>/dev/null | grep -qx "$target"; then
  echo "== rustup target add $target"
  rustup target add "$target"
fi
if ! command -v musl-gcc >/dev/null 2>&1; then
  echo "== apt-get install musl-tools (musl-gcc for SQLite, ring and mimalloc)"
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get update -q
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -q musl-tools
fi

# The cc crate looks for x86_64-linux-musl-gcc by default; Debian names the wrapper musl-gcc.
# The Rust side links with its own self-contained musl CRT objects and libc.a.
export CC_x86_64_unknown_linux_musl=musl-gcc
export AR_x86_64_unknown_linux_musl=ar
export CARGO_TARGET_X86_64_UNKNOWN_LINUX_MUSL_RUSTFLAGS="-C target-feature=+crt-static"

echo "== cargo build --release --locked --target $target"
cargo build --release --locked --target "$target" --bin merchant-admin

target_dir="${CARGO_TARGET_DIR:-target}"
bin="$target_dir/$target/release/merchant-admin"

# The whole point: refuse to ship a binary that needs anything from the host's loader.
dynamic="$(readelf -d "$bin" 2>/dev/null || true)"
if grep -q '(NEEDED)' <<<"$dynamic"; then
  echo "error: $bin needs shared libraries:" >&2
  grep '(NEEDED)' <<<"$dynamic" >&2
  exit 1
fi
if readelf -l "$bin" | grep -q 'INTERP'; then
  echo "error: $bin asks for a program interpreter (dynamic loader):" >&2
  readelf -l "$bin" | grep -A1 INTERP >&2
  exit 1
fi

mkdir -p dist
cp "$bin" dist/merchant-admin
(cd dist && sha256sum merchant-admin >merchant-admin.sha256)
echo "== readelf -d dist/merchant-admin (no NEEDED entry)"
readelf -d dist/merchant-admin || true
file dist/merchant-admin 2>/dev/null || true
ls -l dist/merchant-admin
echo "built dist/merchant-admin ($(cut -d' ' -f1 dist/merchant-admin.sha256))"
