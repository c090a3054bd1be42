#!/usr/bin/env bash
# Dawn, the WebGPU implementation under two bench peers (tinygrad's WEBGPU backend and ONNX
# Runtime's WebGPU provider) and under Node's `webgpu` package (js/run-node.mjs, which the
# portable-kernel tests run), needs Mesa >= 25 for the software Vulkan driver (lavapipe).
# Debian 12 ships Mesa 22.3.6 and bookworm-backports 25.x. Nothing of the system changes:
# on Debian 12 with an older Mesa, the backported driver and the libraries it needs newer are
# downloaded (apt-get with private sources, lists and cache) and unpacked into .cache/mesa25,
# which only those peers' worker processes (bench/peers.py: VK_ICD_FILENAMES there) and
# js/run-node.mjs use; poolgpu itself stays on the system's driver. Elsewhere those peers are
# reported unavailable, and run-node.mjs says what to install, when the driver is too old.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
MESA_DIR="$ROOT/.cache/mesa25"
mesa_major() {
  dpkg-query -W -f='${Version}' mesa-vulkan-drivers 2>/dev/null | sed -E 's/^[0-9]+://; s/\..*//' || true
}
write_icd() {
  printf '{"file_format_version": "1.0.0", "ICD": {"api_version": "1.3.0", "library_path": "%s"}}\n' "$1" \
    >"$MESA_DIR/lvp_icd.json"
}
private_mesa() {
  local apt=(-o "Dir::Etc::SourceList=$MESA_DIR/sources.list" -o Dir::Etc::SourceParts=/nonexistent
             -o "Dir::State::Lists=$MESA_DIR/lists" -o "Dir::Cache=$MESA_DIR/cache" -o Debug::NoLocking=1)
  local keyring=/usr/share/keyrings/debian-archive-keyring.gpg suite packages
  mkdir -p "$MESA_DIR/lists/partial" "$MESA_DIR/cache/archives/partial" "$MESA_DIR/debs"
  printf '*\n' >"$ROOT/.cache/.gitignore"  # nothing under .cache is committed
  for suite in bookworm bookworm-updates bookworm-backports; do
    echo "deb [signed-by=$keyring] http://deb.debian.org/debian $suite main"
  done >"$MESA_DIR/sources.list"
  echo "deb [signed-by=$keyring] http://deb.debian.org/debian-security bookworm-security main" >>"$MESA_DIR/sources.list"
  apt-get "${apt[@]}" -qq update || return 1
  # what installing it would add or upgrade, at the backports' versions: name=version
  packages="$(apt-get "${apt[@]}" -s install -t bookworm-backports mesa-vulkan-drivers |
              sed -nE 's/^Inst ([^ ]+) (\[[^]]*\] )?\(([^ ]+) .*/\1=\3/p')"
  [ -n "$packages" ] || return 1
  rm -rf "$MESA_DIR/debs"/*.deb "$MESA_DIR/root"
  # shellcheck disable=SC2086
  (cd "$MESA_DIR/debs" && apt-get "${apt[@]}" -qq download $packages 2>/dev/null) || return 1
  for deb in "$MESA_DIR/debs"/*.deb; do dpkg -x "$deb" "$MESA_DIR/root" || return 1; done
  local lvp; lvp="$(find "$MESA_DIR/root" -name libvulkan_lvp.so | head -n 1)"
  [ -n "$lvp" ] || return 1
  write_icd "$lvp"
  echo "$packages" | sed -nE 's/^mesa-vulkan-drivers=//p' >"$MESA_DIR/version"
}
codename="$( (. /etc/os-release 2>/dev/null && echo "${VERSION_CODENAME:-}") || true)"
major="$(command -v dpkg-query >/dev/null 2>&1 && mesa_major || true)"
# The ICD file names the driver by absolute path: a clone moved or copied elsewhere points
# it at the driver unpacked here.
unpacked_lvp="$(find "$MESA_DIR/root" -name libvulkan_lvp.so 2>/dev/null | head -n 1 || true)"
if [ -s "$MESA_DIR/lvp_icd.json" ] && [ -n "$unpacked_lvp" ] && ! grep -qF "\"$unpacked_lvp\"" "$MESA_DIR/lvp_icd.json"; then
  write_icd "$unpacked_lvp"
fi
if [ -s "$MESA_DIR/lvp_icd.json" ]; then
  echo "mesa25: Dawn (the bench's peers, js/run-node.mjs) uses Mesa $(cat "$MESA_DIR/version" 2>/dev/null) from .cache/mesa25"
elif [ "$codename" = bookworm ] && [ -n "$major" ] && [ "$major" -lt 25 ]; then
  if command -v apt-get >/dev/null 2>&1; then
    echo "mesa25: Dawn needs Mesa >= 25 (lavapipe, system: $major); unpacking the backported one into .cache/mesa25 (for Dawn alone)"
    if ! private_mesa; then
      rm -f "$MESA_DIR/lvp_icd.json"
      echo "mesa25: could not unpack Mesa from bookworm-backports; Dawn will find no software adapter" >&2
    fi
  else
    echo "mesa25: Mesa $major is older than 25 and there is no apt-get; Dawn will find no software adapter" >&2
  fi
fi

