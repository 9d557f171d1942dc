#!/usr/bin/env bash
# Builds the viewer page: www/ + www/pkg/ (the wasm module and its glue) is
# then a static site. One command: examples/viewer/build.sh
#
# wasm-bindgen-cli must be exactly the version of the `wasm-bindgen` crate in
# Cargo.lock; it is installed (cargo install, several minutes) when missing.
set -euo pipefail
cd "$(dirname "$0")"
ver=$(grep -A1 '^name = "wasm-bindgen"$' Cargo.lock | sed -n 's/^version = "\(.*\)"$/\1/p')
if ! wasm-bindgen --version 2>/dev/null | grep -qx "wasm-bindgen $ver"; then
  # `--locked` first; its lockfile pins webpki-roots 1.0.11, which the
  # registry no longer serves (seen 2026-12-01), hence the fallback.
  cargo install wasm-bindgen-cli --version "$ver" --locked --quiet ||
    cargo install wasm-bindgen-cli --version "$ver" --quiet
fi
cargo build --release --locked --target wasm32-unknown-unknown --lib
wasm-bindgen --target web --no-typescript --out-dir www/pkg \
  target/wasm32-unknown-unknown/release/hurray_viewer.wasm
echo "built: $(pwd)/www (serve it as static files, e.g. python3 -m http.server -d www)"
