// SPDX-License-Identifier: GPL-3.0-or-later
//! The MPS controls without a GPU: the fake, and the real one driving a stand-in script.

use super::*;
use std::os::unix::fs::PermissionsExt;

#[test]
fn fake_records_commands_in_daemon_syntax() {
    let mps = FakeMps::default();
    mps.ensure_running().unwrap();
    mps.ensure_running().unwrap();
    mps.set_active_thread_percentage(30).unwrap();
    mps.set_pinned_memory_limit(1, 3 << 30).unwrap();
    assert!(matches!(
        mps.set_active_thread_percentage(0),
        Err(GpuError::BadPercentage(0))
    ));
    assert!(mps.set_active_thread_percentage(101).is_err());
    assert_eq!(
        mps.commands(),
        [
            "-d",
            "set_default_active_thread_percentage 30",
            "set_default_device_pinned_mem_limit 1 3072M"
        ]
    );
    assert_eq!(mps.pipe_dir(), None);
}

#[test]
fn mps_for_chooses_by_flag() {
    let run = Path::new("/run/partagpu/mps");
    assert!(mps_for(true, run).describe().contains("fake"));
    let real = mps_for(false, run);
    assert_eq!(real.pipe_dir(), Some(run.join("pipe")));
}

/// A stand-in for nvidia-cuda-mps-control: logs its arguments, environment and stdin next to
/// the pipe directory, and refuses pinned-memory commands the way a too-old daemon might.
const STAND_IN: &str = r#"#!/bin/sh
log="$CUDA_MPS_PIPE_DIRECTORY/../calls"
if [ "${1:-}" = "-d" ]; then
    echo "start pipe=$CUDA_MPS_PIPE_DIRECTORY log=$CUDA_MPS_LOG_DIRECTORY env=$(env | wc -l)" >> "$log"
    exit 0
fi
read -r line
echo "cmd $line" >> "$log"
case "$line" in
    set_default_device_pinned_mem_limit*) echo "Invalid command"; exit 0 ;;
esac
"#;

#[test]
fn real_control_writes_commands_to_the_client() {
    let dir = tempfile::tempdir().unwrap();
    let program = dir.path().join("nvidia-cuda-mps-control");
    crate::test_support::write_executable(&program, STAND_IN);
    let run = dir.path().join("mps");
    let mps = NvidiaMps::with_program(&run, &program);

    mps.ensure_running().unwrap();
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&run.join("pipe")), 0o755);
    assert_eq!(mode(&run.join("log")), 0o700);
    mps.set_active_thread_percentage(30).unwrap();
    let e = mps.set_pinned_memory_limit(0, 512 << 20).unwrap_err();
    assert!(e.to_string().contains("Invalid command"), "{e}");

    let calls = std::fs::read_to_string(run.join("calls")).unwrap();
    let lines: Vec<&str> = calls.lines().collect();
    let pipe = run.join("pipe");
    // Only PATH and the two MPS variables (plus what sh itself exports) reach the daemon.
    assert!(lines[0].starts_with(&format!(
        "start pipe={} log={}",
        pipe.display(),
        run.join("log").display()
    )));
    assert_eq!(
        &lines[1..],
        [
            "cmd set_default_active_thread_percentage 30",
            "cmd set_default_device_pinned_mem_limit 0 512M"
        ]
    );
}

#[test]
fn missing_program_is_a_spawn_error() {
    let dir = tempfile::tempdir().unwrap();
    let mps = NvidiaMps::with_program(dir.path(), Path::new("/nonexistent/nvidia-cuda-mps-control"));
    let e = mps.ensure_running().unwrap_err();
    assert!(matches!(e, GpuError::Spawn { .. }), "{e}");
    assert!(e.to_string().ends_with('.'));
}
