// SPDX-License-Identifier: GPL-3.0-or-later
use super::*;

fn os(args: &[&str]) -> Vec<OsString> {
    args.iter().map(OsString::from).collect()
}

#[test]
fn command_line_round_trips() {
    let procs = [
        PathBuf::from("/sys/fs/cgroup/pids/j/cgroup.procs"),
        PathBuf::from("/x/cgroup.procs"),
    ];
    let args = os(&["--unshare-all", "--", "python3"]);
    let command = launcher_command(
        Path::new("/usr/libexec/partagpud"),
        998,
        997,
        &procs,
        Path::new("/usr/bin/bwrap"),
        &args,
    );
    assert_eq!(command.get_program(), "/usr/libexec/partagpud");
    let argv: Vec<OsString> = command.get_args().map(OsStr::to_owned).collect();
    assert_eq!(argv[0], LAUNCH_FLAG);
    let launch = parse(&argv[1..]).unwrap();
    assert_eq!(
        launch,
        Launch {
            uid: 998,
            gid: 997,
            procs_files: procs.iter().map(PathBuf::as_path).collect(),
            program: Path::new("/usr/bin/bwrap"),
            args: &args,
        }
    );
}

#[test]
fn no_procs_files_is_allowed() {
    let argv = os(&["5", "6", "--", "/bin/true"]);
    let launch = parse(&argv).unwrap();
    assert!(launch.procs_files.is_empty());
    assert!(launch.args.is_empty());
}

#[test]
fn refuses_root_and_bad_ids() {
    for argv in [
        os(&["0", "6", "--", "/bin/true"]),
        os(&["5", "0", "--", "/bin/true"]),
        os(&["4294967295", "6", "--", "/bin/true"]),
        os(&["-1", "6", "--", "/bin/true"]),
        os(&["+5", "6", "--", "/bin/true"]),
        os(&["", "6", "--", "/bin/true"]),
    ] {
        assert!(parse(&argv).is_err(), "{argv:?}");
    }
    assert!(parse(&os(&["0", "6", "--", "/bin/true"]))
        .unwrap_err()
        .contains("root"));
}

#[test]
fn refuses_malformed_command_lines() {
    for argv in [
        os(&[]),
        os(&["5"]),
        os(&["5", "6", "/bin/true"]),
        os(&["5", "6", "--"]),
        os(&["5", "6", "--", "true"]),
        os(&["5", "6", "relative/cgroup.procs", "--", "/bin/true"]),
    ] {
        assert!(parse(&argv).is_err(), "{argv:?}");
    }
}

#[test]
fn a_later_separator_belongs_to_the_program() {
    let argv = os(&[
        "5",
        "6",
        "--",
        "/usr/bin/bwrap",
        "--ro-bind",
        "/usr",
        "/usr",
        "--",
        "python3",
    ]);
    let launch = parse(&argv).unwrap();
    assert_eq!(launch.program, Path::new("/usr/bin/bwrap"));
    assert_eq!(launch.args.len(), 5);
}
