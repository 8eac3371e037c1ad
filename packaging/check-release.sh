#!/usr/bin/env bash
# Checks the static release binary the way a bare container would run it.
#
#   packaging/check-release.sh [BINARY]        (default dist/merchant-admin; run as root)
#
# 1. `readelf`: no NEEDED entry and no program interpreter (fails otherwise).
# 2. A fresh network namespace (`unshare --net`: only `lo`, nothing routed out) and a chroot
#    holding nothing but the binary, /etc/resolv.conf (nameserver 127.0.0.1), /etc/hosts,
#    an empty /tmp and /data, and a test CA in /etc/ssl/certs. The binary runs there under
#    `env -i LD_LIBRARY_PATH=` as user 65534 (nobody).
# 3. check-release.py serves a DNS stub on 127.0.0.1:53 that alone knows hook.test, an HTTP
#    webhook receiver and a TLS one (certificate for hook.test from the test CA), then drives
#    the binary: setup, serve, healthcheck, a webhook delivered over HTTP, a TLS handshake
#    refused for the unknown CA (the roots are compiled in), backup, SIGTERM.
#
# Needs: root (unshare, chroot, ip), python3, openssl, readelf.
set -euo pipefail
cd "$(dirname "$0")/.."
bin="${1:-dist/merchant-admin}"

if [ ! -x "$bin" ]; then
  echo "error: $bin not found; run packaging/build-release.sh first" >&2
  exit 1
fi
if [ "$(id -u)" -ne 0 ]; then
  echo "error: run as root (unshare --net and chroot need it)" >&2
  exit 1
fi
for tool in readelf unshare chroot ip openssl python3; do
  command -v "$tool" >/dev/null || { echo "error: $tool is missing" >&2; exit 1; }
done

echo "== readelf -d $bin"
dynamic="$(readelf -d "$bin" 2>&1 || true)"
echo "$dynamic"
if grep -q '(NEEDED)' <<<"$dynamic"; then
  echo "FAIL: $bin needs shared libraries" >&2
  exit 1
fi
if readelf -l "$bin" | grep -q INTERP; then
  echo "FAIL: $bin asks for a program interpreter" >&2
  exit 1
fi
echo "no NEEDED entry, no INTERP: nothing is loaded from the host"

work="$(mktemp -d /tmp/merchant-admin-check.XXXXXX)"
trap 'rm -rf "$work"' EXIT
root="$work/root"
mkdir -p "$root/etc/ssl/certs" "$root/data" "$root/tmp"
cp "$bin" "$root/merchant-admin"
echo "nameserver 127.0.0.1" >"$root/etc/resolv.conf"
printf '127.0.0.1\tlocalhost\n::1\tlocalhost\n' >"$root/etc/hosts"
chown 65534:65534 "$root/data"
chmod 1777 "$root/tmp"

# A test CA and a certificate for hook.test signed by it.
openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=merchant-admin check CA" \
  -keyout "$work/ca.key" -out "$work/ca.crt" 2>/dev/null
openssl req -newkey rsa:2048 -nodes -subj "/CN=hook.test" \
  -keyout "$work/hook.key" -out "$work/hook.csr" 2>/dev/null
printf 'subjectAltName=DNS:hook.test\nextendedKeyUsage=serverAuth\n' >"$work/ext"
openssl x509 -req -in "$work/hook.csr" -CA "$work/ca.crt" -CAkey "$work/ca.key" \
  -CAcreateserial -days 2 -extfile "$work/ext" -out "$work/hook.crt" 2>/dev/null
# Where a distribution's TLS stack would look; the binary does not (see README).
cp "$work/ca.crt" "$root/etc/ssl/certs/ca-certificates.crt"

echo "== chroot contents"
(cd "$root" && find . -mindepth 1 | sort)

# 100.128.0.10: an ordinary unicast address (outside every range the SSRF guard refuses),
# bound to the new namespace's own loopback, so the traffic never leaves it.
unshare --net --fork -- bash -c '
  set -e
  ip link set lo up
  ip addr add 100.128.0.10/32 dev lo
  exec python3 "$0" "$1" "$2"
' packaging/check-release.py "$root" "$work"
