# SPDX-License-Identifier: GPL-3.0-or-later
# Sourced by scripts/virtual-lab: names, cgroups, starting buses and daemons, the network.
# shellcheck shell=bash

say() { printf 'virtual-lab: %s\n' "$*"; }
warn() { printf 'virtual-lab: %s\n' "$*" >&2; }
die() { warn "$*"; exit 1; }
usage_error() { warn "$*"; warn "see '${0##*/} --help'"; exit 2; }

require_root() {
    [[ $EUID -eq 0 ]] || die "must run as root (network namespaces, cgroups)"
}

require_tools() {
    local tool
    for tool in "$@"; do
        command -v "$tool" >/dev/null 2>&1 || die "missing tool '$tool'"
    done
}

machine_dir() { printf '%s/m%s' "$LAB_DIR" "$1"; }
bus_socket() { printf '%s/bus/system_bus_socket' "$(machine_dir "$1")"; }
bus_address() { printf 'unix:path=%s' "$(bus_socket "$1")"; }

# Names of the namespaces this lab may have created (ours or a crashed run's).
lab_netns() {
    ip netns list 2>/dev/null | awk -v p="$PREFIX-" 'index($1, p) == 1 { print $1 }'
}

# --- lab.env ------------------------------------------------------------------------------------

LAB_N=""
LAB_BIN_DIR=""

write_lab_env() {
    printf 'N=%s\nBIN_DIR=%s\nLINK_RATE=%s\n' "$1" "$2" "$3" >"$LAB_DIR/lab.env"
}

# Reads lab.env into LAB_N and LAB_BIN_DIR; false when there is none.
read_lab_env() {
    local key value
    [[ -f $LAB_DIR/lab.env ]] || return 1
    while IFS='=' read -r key value; do
        case $key in
            N) LAB_N=$value ;;
            BIN_DIR) LAB_BIN_DIR=$value ;;
        esac
    done <"$LAB_DIR/lab.env"
    [[ $LAB_N =~ ^[1-9][0-9]*$ && -n $LAB_BIN_DIR ]]
}

# Sets LAB_N and LAB_BIN_DIR from a lab that is up and checks that machine $1 belongs to it.
require_machine() {
    local index=$1
    read_lab_env || { warn "no lab is up (start one with '${0##*/} up N')"; exit 2; }
    if ! [[ $index =~ ^[1-9][0-9]*$ ]] || ((index > LAB_N)); then
        warn "no machine '$index' in this lab (machines are 1..$LAB_N)"
        exit 2
    fi
    [[ -e /run/netns/$PREFIX-$index ]] || die "machine $index has no namespace $PREFIX-$index (run '${0##*/} down')"
}

# --- cgroups ------------------------------------------------------------------------------------

# The hierarchies where a machine gets a cgroup: the one cgroup2 tree on pure v2 hosts; else each
# of V1_CONTROLLERS that is mounted, and the unified cgroup2 mount.
machine_cgroup_roots() {
    local ctrl
    if [[ -e $CGROUP_FS/cgroup.controllers ]]; then
        echo "$CGROUP_FS"
        return
    fi
    for ctrl in "${V1_CONTROLLERS[@]}" unified; do
        [[ -e $CGROUP_FS/$ctrl/cgroup.procs ]] && echo "$CGROUP_FS/$ctrl"
    done
    return 0
}

# Every cgroup hierarchy mounted on this host (down looks for leftovers in all of them).
all_cgroup_roots() {
    awk '$3 == "cgroup" || $3 == "cgroup2" { print $2 }' /proc/self/mounts | sort -u
}

create_machine_cgroups() {
    local index=$1 root ctrl
    while read -r root; do
        mkdir -p "$root/$CGROUP_NAME/m$index" || die "cannot create cgroup $root/$CGROUP_NAME/m$index"
        if [[ $root == "$CGROUP_FS" ]]; then
            # Pure v2: hand the machine the controllers it would have as a system service.
            for ctrl in cpu memory pids io; do
                if grep -qw "$ctrl" "$root/$CGROUP_NAME/cgroup.controllers" 2>/dev/null; then
                    echo "+$ctrl" >"$root/$CGROUP_NAME/cgroup.subtree_control" 2>/dev/null || true
                fi
            done
        fi
    done < <(machine_cgroup_roots)
}

# Moves the calling shell ($BASHPID) into every cgroup of machine $1; children inherit them.
join_machine_cgroups() {
    local index=$1 root dir
    while read -r root; do
        dir=$root/$CGROUP_NAME/m$index
        [[ -d $dir ]] || die "machine $index has no cgroup $dir"
        echo "$BASHPID" >"$dir/cgroup.procs" || die "cannot join cgroup $dir"
    done < <(machine_cgroup_roots)
}

# `ip netns exec` mounts a fresh /sys in a private mount namespace, which hides the cgroup
# mounts. This describes them ("mount TYPE OPTS PATH" / "link TARGET PATH" lines) so that the
# command can mount them again inside, where they do not leak to the host.
cgroup_mount_spec() {
    local link
    awk -v fs="$CGROUP_FS" '($2 == fs || index($2, fs "/") == 1) { print "mount", $3, $4, $2 }' /proc/self/mounts
    if [[ ! -e $CGROUP_FS/cgroup.controllers ]]; then
        for link in "$CGROUP_FS"/*; do
            [[ -L $link ]] && printf 'link %s %s\n' "$(readlink "$link")" "$link"
        done
    fi
    return 0
}

restore_cgroup_mounts() {
    local spec=$1 kind type opts path remount_ro=""
    while read -r kind type opts path; do
        [[ -n $kind ]] || continue
        if [[ $kind == link ]]; then
            ln -sfn "$type" "$opts" 2>/dev/null || warn "cannot recreate $opts in the machine's /sys"
            continue
        fi
        if [[ $type == tmpfs && $path == "$CGROUP_FS" && ,$opts, == *,ro,* ]]; then
            remount_ro=1
            opts=${opts/#ro,/rw,}
        fi
        mkdir -p "$path" 2>/dev/null || true
        mount -t "$type" -o "$opts" "$type" "$path" 2>/dev/null ||
            warn "cannot mount $type on $path inside the machine; cgroups there are hidden"
    done <<<"$spec"
    if [[ -n $remount_ro ]]; then
        mount -o remount,ro "$CGROUP_FS" 2>/dev/null || true
    fi
}

# --- running things on a machine ----------------------------------------------------------------

# _spawn I PIDFILE -- CMD...: joins machine I's cgroups from the host (where /sys/fs/cgroup is
# visible), then becomes CMD inside the machine's netns. PIDFILE ("-" for none) gets CMD's pid.
cmd_spawn() {
    local index=$1 pidfile=$2
    shift 2
    [[ ${1:-} == -- ]] && shift
    join_machine_cgroups "$index"
    exec ip netns exec "$PREFIX-$index" "$BASH" "$SELF" _inns "$pidfile" "$(cgroup_mount_spec)" -- "$@"
}

# _inns PIDFILE SPEC -- CMD...: the part that runs inside the netns.
cmd_inns() {
    local pidfile=$1 spec=$2
    shift 2
    [[ ${1:-} == -- ]] && shift
    restore_cgroup_mounts "$spec"
    if [[ $pidfile != - ]]; then
        echo "$$" >"$pidfile"
    fi
    exec "$@"
}

# Starts CMD... as a daemon of machine I: own session, stdin closed, output to LOG.
start_on_machine() {
    local index=$1 pidfile=$2 log=$3
    shift 3
    rm -f "$pidfile"
    setsid "$BASH" "$SELF" _spawn "$index" "$pidfile" -- "$@" </dev/null >>"$log" 2>&1 &
}

# The environment a system service gets, plus the machine's bus.
service_env() {
    local index=$1 var
    printf '%s\n' env -i "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" \
        "LANG=${LANG:-C.UTF-8}" "NO_COLOR=1" "DBUS_SYSTEM_BUS_ADDRESS=$(bus_address "$index")" \
        "PARTAGPU_LAB_MACHINE=$index"
    for var in RUST_LOG RUST_BACKTRACE; do
        [[ -n ${!var:-} ]] && printf '%s=%s\n' "$var" "${!var}"
    done
    return 0
}

# True when pid $1 exists and is not a zombie.
pid_alive() {
    local stat
    [[ $1 =~ ^[0-9]+$ ]] || return 1
    { read -r stat <"/proc/$1/stat"; } 2>/dev/null || return 1
    stat=${stat##*) }
    [[ ${stat%% *} != Z ]]
}

read_pid() {
    local pid=""
    [[ -r $1 ]] && read -r pid <"$1" 2>/dev/null
    printf '%s' "$pid"
}

wait_for_pidfile() {
    local pidfile=$1 tries=50
    while ((tries-- > 0)); do
        [[ -s $pidfile ]] && return 0
        sleep 0.1
    done
    return 1
}

start_bus() {
    local index=$1 m pid tries=100
    m=$(machine_dir "$index")
    rm -f "$(bus_socket "$index")"
    local -a envcmd
    mapfile -t envcmd < <(service_env "$index")
    start_on_machine "$index" "$m/dbus.pid" "$m/dbus.log" "${envcmd[@]}" \
        dbus-daemon --config-file="$m/system-bus.conf" --nofork --nosyslog
    wait_for_pidfile "$m/dbus.pid" || die "machine $index: dbus-daemon did not start; see $m/dbus.log"
    pid=$(read_pid "$m/dbus.pid")
    while ((tries-- > 0)); do
        [[ -S $(bus_socket "$index") ]] && return 0
        pid_alive "$pid" || break
        sleep 0.05
    done
    tail -n 20 "$m/dbus.log" >&2 || true
    die "machine $index: its system bus did not come up (log: $m/dbus.log)"
}

start_daemon() {
    local index=$1 m
    m=$(machine_dir "$index")
    local -a envcmd
    mapfile -t envcmd < <(service_env "$index")
    printf -- '--- virtual-lab: starting partagpud on machine %s at %s\n' "$index" "$(date -Is)" >>"$m/partagpud.log"
    local -a extra=()
    # The lab has no GPUs: a test may describe some in mI/gpus.json (partagpud --fake-gpus).
    [[ -f $m/gpus.json ]] && extra=(--fake-gpus "$m/gpus.json")
    start_on_machine "$index" "$m/partagpud.pid" "$m/partagpud.log" "${envcmd[@]}" \
        "$LAB_BIN_DIR/partagpud" --state-dir "$m/state" --runtime-dir "$m/run" \
        --config "$m/partagpu.toml" --peer-port "$PEER_PORT" --machine-id-file "$m/machine-id" "${extra[@]}"
    wait_for_pidfile "$m/partagpud.pid" || die "machine $index: partagpud did not start; see $m/partagpud.log"
}

# Asks machine I's partagpud for its status (from inside the machine). Extra args go to status.
machine_status() {
    local index=$1
    shift
    timeout 10 "$BASH" "$SELF" exec "$index" -- partagpuctl status "$@"
}

wait_daemon() {
    local index=$1 m pid deadline
    m=$(machine_dir "$index")
    pid=$(read_pid "$m/partagpud.pid")
    deadline=$((SECONDS + STATUS_TIMEOUT_S))
    while ((SECONDS < deadline)); do
        if machine_status "$index" >/dev/null 2>&1; then
            return 0
        fi
        pid_alive "$pid" || break
        sleep 0.2
    done
    if pid_alive "$pid"; then
        warn "machine $index: partagpud (pid $pid) did not answer 'partagpuctl status' within ${STATUS_TIMEOUT_S} s"
    else
        warn "machine $index: partagpud exited before answering 'partagpuctl status'"
    fi
    warn "last lines of $m/partagpud.log:"
    tail -n 20 "$m/partagpud.log" >&2 || true
    die "machine $index: partagpud failed to start"
}

# --- up -----------------------------------------------------------------------------------------

# The lab dir goes unescaped into a D-Bus address and the bus config; the repository path into
# the bus config (XML).
validate_paths() {
    [[ $LAB_DIR =~ ^/[A-Za-z0-9._/-]+$ ]] ||
        die "lab dir '$LAB_DIR' must be an absolute path of letters, digits and . _ / - only"
    [[ $REPO_ROOT != *[\<\>\&\"\']* ]] || die "repository path '$REPO_ROOT' must not contain < > & \" '"
}

setup_network() {
    local n=$1 rate=$2 i ns
    ip netns add "$SWITCH_NS"
    ip -n "$SWITCH_NS" link set lo up
    # No snooping: the bridge floods multicast (mDNS) to every port, like an unmanaged switch.
    ip -n "$SWITCH_NS" link add br0 type bridge mcast_snooping 0
    ip -n "$SWITCH_NS" link set br0 up
    for ((i = 1; i <= n; i++)); do
        ns=$PREFIX-$i
        ip netns add "$ns"
        # Both ends are created in place: nothing of the lab ever sits in the host namespace.
        ip link add name "pgl$i" netns "$SWITCH_NS" type veth peer name eth0 netns "$ns"
        ip -n "$SWITCH_NS" link set "pgl$i" master br0
        ip -n "$SWITCH_NS" link set "pgl$i" up
        ip -n "$ns" link set lo up
        ip -n "$ns" addr add "$SUBNET.$i/24" dev eth0
        ip -n "$ns" link set eth0 up
        # Multicast (mDNS 224.0.0.251) leaves through eth0; there is no route off the lab.
        ip -n "$ns" route add 224.0.0.0/4 dev eth0
        if [[ -n $rate ]]; then
            ip netns exec "$ns" tc qdisc replace dev eth0 root tbf rate "$rate" burst 256kb latency 20ms
            ip netns exec "$SWITCH_NS" tc qdisc replace dev "pgl$i" root tbf rate "$rate" burst 256kb latency 20ms
        fi
    done
}

setup_machine_files() {
    local index=$1 m conf
    m=$(machine_dir "$index")
    install -d -m 0755 "$m" "$m/state" "$m/run" "$m/bus"
    # Each machine has its own machine-id(5), as each PC of a lab does (the host's is shared).
    tr -d '-' </proc/sys/kernel/random/uuid >"$m/machine-id"
    # Machines share one kernel: each keeps its job cgroups in its own subtree.
    printf 'display_name = "lab-%s"\n\n[jobs]\ncgroup_root = "%s-m%s-jobs"\n' \
        "$index" "$CGROUP_NAME" "$index" >"$m/partagpu.toml"
    # A Python with torch for training jobs (scripts/test and scripts/demo pass their venv's).
    if [[ -n ${PARTAGPU_LAB_TORCH:-} ]]; then
        printf '\n[[jobs.runtimes]]\nname = "torch"\npython = "%s"\n' "$PARTAGPU_LAB_TORCH" >>"$m/partagpu.toml"
    fi
    # A test's own config for every machine (e.g. a [room] to join at boot), as an image has.
    if [[ -n ${PARTAGPU_LAB_EXTRA_CONFIG:-} ]]; then
        [[ -r $PARTAGPU_LAB_EXTRA_CONFIG ]] || die "PARTAGPU_LAB_EXTRA_CONFIG: cannot read '$PARTAGPU_LAB_EXTRA_CONFIG'"
        { printf '\n'; cat "$PARTAGPU_LAB_EXTRA_CONFIG"; } >>"$m/partagpu.toml"
    fi
    # Root's and 0600, as a real image must be when the file holds a room code.
    chmod 0600 "$m/partagpu.toml"
    conf=$(<"$BUS_TEMPLATE")
    conf=${conf//@SOCKET@/"$(bus_socket "$index")"}
    conf=${conf//@POLICY@/"$BUS_POLICY"}
    printf '%s\n' "$conf" >"$m/system-bus.conf"
    : >"$m/dbus.log"
    : >"$m/partagpud.log"
}

up_failed() {
    ((${1:-0} == 0)) || warn "up failed; run '${0##*/} down' to remove what it made"
}
