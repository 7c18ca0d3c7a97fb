# SPDX-License-Identifier: GPL-3.0-or-later
# Sourced by scripts/test and scripts/demo: installs what a fresh Debian 12 machine lacks.
# Idempotent and quiet when everything is there; `apt-get update` runs only when needed.

# Debian packages the build, the tests and the virtual lab use.
PARTAGPU_APT_PACKAGES=(
    dbus                # dbus-daemon for private system buses
    python3-dbusmock    # polkitd mock template (brings python3-dbus)
    python3-gi          # GLib main loop for signal tests
    python3-pytest
    iproute2            # ip netns, veth, bridge, tc (virtual lab)
    util-linux          # setpriv, nsenter, unshare
    procps              # ps, pgrep
    psmisc
    bubblewrap          # job sandbox (later phases; checked now so labs match)
    nftables
    gcc                 # C toolchain for crates with build scripts
    pkg-config
)

log() { printf '==> %s\n' "$*" >&2; }

ensure_root() {
    if [ "$(id -u)" -ne 0 ]; then
        echo "$0: must run as root (it installs packages and creates network namespaces)" >&2
        exit 1
    fi
}

ensure_apt_packages() {
    local missing=() pkg
    for pkg in "${PARTAGPU_APT_PACKAGES[@]}" "$@"; do
        dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
    done
    if [ "${#missing[@]}" -gt 0 ]; then
        log "installing ${missing[*]}"
        DEBIAN_FRONTEND=noninteractive apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
    fi
}

ensure_cargo() {
    # Debian 12's cargo (1.63) is too old for this workspace; the machines come with rustup's.
    if ! command -v cargo >/dev/null 2>&1; then
        for dir in "$HOME/.cargo/bin" /root/.cargo/bin /usr/local/cargo/bin; do
            [ -x "$dir/cargo" ] && PATH="$dir:$PATH" && break
        done
    fi
    if ! command -v cargo >/dev/null 2>&1; then
        echo "$0: cargo not found: install a Rust toolchain >= 1.89 (rustup) and run again" >&2
        exit 1
    fi
    export PATH
}
