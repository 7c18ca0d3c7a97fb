# SPDX-License-Identifier: GPL-3.0-or-later
# Sourced by scripts/virtual-lab: `down`, which removes everything a lab may have left.
# shellcheck shell=bash

# Every cgroup dir of the lab, children before parents.
lab_cgroup_dirs() {
    local root
    while read -r root; do
        [[ -d $root/$CGROUP_NAME ]] && find "$root/$CGROUP_NAME" -depth -type d
        # The machines' job subtrees (partagpu.toml [jobs] cgroup_root), should a service
        # have died without removing them.
        find "$root" -maxdepth 1 -type d -name "$CGROUP_NAME-m*-jobs" -print0 2>/dev/null |
            xargs -0 -r -I{} find {} -depth -type d
    done < <(all_cgroup_roots)
    return 0
}

# Pids in the lab's cgroups or namespaces, except this script.
lab_pids() {
    local dir ns
    {
        while read -r dir; do
            cat "$dir/cgroup.procs" 2>/dev/null || true
        done < <(lab_cgroup_dirs)
        while read -r ns; do
            ip netns pids "$ns" 2>/dev/null || true
        done < <(lab_netns)
    } | awk -v self="$$" '$1 ~ /^[0-9]+$/ && $1 != self' | sort -un
}

# Frozen tasks cannot die: thaw every lab cgroup (v1 freezer, v2 cgroup.freeze).
thaw_lab_cgroups() {
    local dir
    while read -r dir; do
        [[ -e $dir/freezer.state ]] && echo THAWED >"$dir/freezer.state" 2>/dev/null
        [[ -e $dir/cgroup.freeze ]] && echo 0 >"$dir/cgroup.freeze" 2>/dev/null
    done < <(lab_cgroup_dirs)
    return 0
}

live_lab_pids() {
    local pid
    while read -r pid; do
        pid_alive "$pid" && echo "$pid"
    done < <(lab_pids)
    return 0
}

# SIGTERM first (partagpud cleans up after its jobs); after 2 s SIGKILL whatever is left, again
# and again (a process may fork while dying), for at most 6 s more.
kill_lab_processes() {
    local round dir
    local -a pids
    for ((round = 0; round < 80; round++)); do
        mapfile -t pids < <(live_lab_pids)
        ((${#pids[@]})) || return 0
        if ((round == 0)); then
            thaw_lab_cgroups
            kill -TERM "${pids[@]}" 2>/dev/null || true
        elif ((round >= 20)); then
            thaw_lab_cgroups
            kill -KILL "${pids[@]}" 2>/dev/null || true
            while read -r dir; do
                [[ -e $dir/cgroup.kill ]] && echo 1 >"$dir/cgroup.kill" 2>/dev/null
            done < <(lab_cgroup_dirs)
        fi
        sleep 0.1
    done
    mapfile -t pids < <(live_lab_pids)
    ((${#pids[@]} == 0)) || { warn "could not kill pid(s): ${pids[*]}"; return 1; }
}

cmd_down() {
    require_root
    local failed=0 ns link dir
    kill_lab_processes || failed=1
    while read -r ns; do
        ip netns del "$ns" 2>/dev/null || true
    done < <(lab_netns)
    # Veth ends left in the host namespace by a crashed run (up itself never puts them there).
    while read -r link; do
        ip link del "$link" 2>/dev/null || true
    done < <(ip -o link show type veth 2>/dev/null | awk -F': ' '{ sub(/@.*/, "", $2); if ($2 ~ /^pgl/) print $2 }')
    # Dying tasks can keep a cgroup busy for a moment.
    local tries
    for ((tries = 0; tries < 50; tries++)); do
        while read -r dir; do
            rmdir "$dir" 2>/dev/null || true
        done < <(lab_cgroup_dirs)
        [[ -z $(lab_cgroup_dirs) ]] && break
        sleep 0.1
    done
    if [[ -d $LAB_DIR ]]; then
        if [[ -e $LAB_DIR/.partagpu-lab || -z $(ls -A "$LAB_DIR") ]]; then
            rm -rf --one-file-system -- "$LAB_DIR"
        else
            warn "$LAB_DIR is not a lab dir; left in place"
        fi
    fi

    if [[ -n $(lab_netns) ]]; then
        warn "namespaces left: $(lab_netns | tr '\n' ' ')"
        failed=1
    fi
    if [[ -n $(lab_cgroup_dirs) ]]; then
        warn "cgroups left: $(lab_cgroup_dirs | tr '\n' ' ')"
        failed=1
    fi
    if ((failed)); then
        die "down did not remove everything (see above)"
    fi
    say "lab down"
}
