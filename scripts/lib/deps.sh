# SPDX-License-Identifier: GPL-3.0-or-later
# shellcheck shell=bash
# Sourced by scripts/test and scripts/demo: installs what a fresh Debian 12 machine lacks.
# Idempotent and quiet when everything is there; `apt-get update` runs only when needed.

# Debian packages the build, the tests and the virtual lab use.
PARTAGPU_APT_PACKAGES=(
    dbus                # dbus-daemon for private system buses
    python3-dbusmock    # polkitd mock template (brings python3-dbus)
    python3-gi          # GLib main loop for signal tests
    python3-pytest
    python3-venv        # the cached venv of the Python-side vector check
    iproute2            # ip netns, veth, bridge, tc (virtual lab)
    util-linux          # setpriv, nsenter, unshare
    procps              # ps, pgrep
    psmisc
    bubblewrap          # job sandbox
    nftables
    gcc                 # C toolchain for crates with build scripts
    pkg-config
    libgtk-4-dev        # the app (src/app): GTK 4.8 and libadwaita 1.2, relm4's gnome_43
    libadwaita-1-dev
    gettext             # xgettext, msgfmt: po/ checks and the app's French
    xvfb                # the app's UI test (tests/test_app_ui.py)
    xauth
    x11-utils           # xwininfo: whether the app's window is shown (tests/test_app_tray.py)
    at-spi2-core        # the accessibility bus the app's a11y test reads (tests/atspi_dump.py)
    gir1.2-atspi-2.0
    xdotool             # Tab presses for the keyboard-navigation test
    fonts-cantarell     # GNOME's font, so screenshots look like the desktop
    adwaita-icon-theme
    desktop-file-utils  # desktop-file-validate (data/)
    appstream           # appstreamcli validate (data/)
    libglib2.0-bin      # glib-compile-schemas (meson test, tests/test_app_window.py)
    meson               # the install (meson.build, docs/packaging.md) and meson test
    ninja-build
    libxml2-utils       # xmllint on every XML file (meson test)
    systemd             # systemd-analyze verify of the unit; systemd.pc for its install paths
    lintian             # the .deb's check (scripts/package)
    debootstrap         # the fresh Debian 12 chroot the .deb is installed into (tests/test_package.py)
    fakeroot
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

# The unprivileged account jobs run as (what the package's sysusers.d file creates on a lab
# machine); every virtual-lab machine shares this machine's /etc/passwd.
ensure_job_user() {
    if ! getent passwd partagpu-job >/dev/null; then
        log "creating the job user partagpu-job"
        useradd --system --no-create-home --shell /usr/sbin/nologin partagpu-job
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

# A virtual environment kept between runs (PyPI packages are installed once, then reused).
PARTAGPU_CACHE=${PARTAGPU_CACHE:-/var/cache/partagpu-dev}

# ensure_venv NAME REQUIREMENTS_FILE: prints the venv's python; reinstalls when the file changes.
ensure_venv() {
    local venv="$PARTAGPU_CACHE/$1" requirements=$2 stamp
    stamp=$(sha256sum "$requirements" | cut -d' ' -f1)
    if [ "$(cat "$venv/.requirements" 2>/dev/null)" != "$stamp" ]; then
        log "preparing the Python environment $venv"
        rm -rf "$venv"
        mkdir -p "$PARTAGPU_CACHE"
        /usr/bin/python3 -m venv "$venv" >&2
        "$venv/bin/pip" install --quiet --disable-pip-version-check -r "$requirements" >&2
        echo "$stamp" >"$venv/.requirements"
    fi
    # This checkout's python/ on the venv's path, so `import partagpu` works from anywhere
    # (rewritten every time: the venv outlives clones).
    local site
    site=$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
    echo "$(cd "$(dirname "${BASH_SOURCE[0]}")/../../python" && pwd)" >"$site/partagpu-checkout.pth"
    echo "$venv/bin/python"
}

# install_job_helper PYTHON: a copy of this checkout's partagpu package inside that venv. A job
# sees only its runtime's own directories in the sandbox, not this checkout (the .pth above),
# and a training that uses partagpu.ddp imports it there. Copied afresh every time.
install_job_helper() {
    local site
    site=$("$1" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
    rm -rf "$site/partagpu"
    cp -r "$(cd "$(dirname "${BASH_SOURCE[0]}")/../../python" && pwd)/partagpu" "$site/partagpu"
    find "$site/partagpu" -name __pycache__ -prune -exec rm -rf {} +
}
