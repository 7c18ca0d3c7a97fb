// SPDX-License-Identifier: GPL-3.0-or-later
use super::*;

fn user() -> JobUser {
    JobUser {
        name: "partagpu-job".into(),
        uid: 998,
        gid: 997,
    }
}

fn runtime() -> Runtime {
    Runtime {
        name: "torch".into(),
        python: "/opt/venv/bin/python".into(),
        python_version: "3.11.2".into(),
        torch_version: None,
        cuda: None,
        binds: vec!["/opt/venv".into()],
    }
}

fn args_with(share_net: bool, runtime: Option<&Runtime>) -> Vec<String> {
    let argv = ["python3".to_owned(), "train.py".to_owned()];
    let env = BTreeMap::from([("B".to_owned(), "2".to_owned()), ("A".to_owned(), "1".to_owned())]);
    let user = user();
    let plan = SandboxPlan {
        argv: &argv,
        env: &env,
        workspace: Path::new("/var/lib/partagpu/jobs/j1/workspace"),
        etc_dir: Path::new("/var/lib/partagpu/jobs/j1/etc"),
        runtime,
        user: &user,
        share_net,
        tmp_bytes: 1 << 20,
        devices: &[PathBuf::from("/dev/nvidia0"), PathBuf::from("/dev/nvidiactl")],
        ro_binds: &[PathBuf::from("/run/partagpu/mps")],
        hostname: "pg-job",
    };
    bwrap_args(&plan)
        .into_iter()
        .map(|a| a.into_string().unwrap())
        .collect()
}

/// Whether `args` holds `window` as consecutive arguments.
fn has(args: &[String], window: &[&str]) -> bool {
    args.windows(window.len())
        .any(|w| w.iter().zip(window).all(|(a, b)| a == b))
}

#[test]
fn namespaces_and_identity() {
    let args = args_with(false, None);
    assert_eq!(args[0], "--unshare-all");
    assert!(has(&args, &["--unshare-user", "--disable-userns"]));
    assert!(has(&args, &["--uid", "998", "--gid", "997"]));
    assert!(has(&args, &["--hostname", "pg-job"]));
    assert!(has(&args, &["--die-with-parent", "--new-session", "--clearenv"]));
    assert!(has(&args, &["--cap-drop", "ALL"]));
    assert!(!args.contains(&"--share-net".to_owned()));
    assert!(has(&args_with(true, None), &["--unshare-all", "--share-net"]));
}

#[test]
fn environment_is_ours_then_the_jobs() {
    let args = args_with(false, None);
    let keys: Vec<&str> = args
        .iter()
        .enumerate()
        .filter(|(_, a)| *a == "--setenv")
        .map(|(i, _)| args[i + 1].as_str())
        .collect();
    assert_eq!(
        keys,
        ["PATH", "HOME", "TMPDIR", "LANG", "PYTHONUNBUFFERED", "A", "B"]
    );
    assert!(has(&args, &["--setenv", "PATH", "/usr/local/bin:/usr/bin:/bin"]));
    assert!(has(&args, &["--setenv", "HOME", "/workspace"]));
    let with_runtime = args_with(false, Some(&runtime()));
    assert!(has(
        &with_runtime,
        &["--setenv", "PATH", "/opt/venv/bin:/usr/local/bin:/usr/bin:/bin"]
    ));
    assert!(has(&with_runtime, &["--ro-bind", "/opt/venv", "/opt/venv"]));
}

#[test]
fn file_system_is_minimal() {
    let args = args_with(false, None);
    assert!(has(&args, &["--ro-bind", "/usr", "/usr"]));
    for (i, arg) in args.iter().enumerate() {
        // Only these host paths are ever a bind source.
        if ["--bind", "--ro-bind", "--ro-bind-try", "--dev-bind"].contains(&arg.as_str()) {
            let source = &args[i + 1];
            assert!(
                [
                    "/usr",
                    "/etc/",
                    "/var/lib/partagpu/jobs/j1/",
                    "/dev/nvidia",
                    "/run/partagpu/mps",
                    "/bin",
                    "/lib",
                    "/sbin"
                ]
                .iter()
                .any(|p| source.starts_with(p)),
                "unexpected bind source {source}"
            );
            assert_ne!(source, "/etc", "all of /etc bound");
        }
    }
    for absent in [
        "/home",
        "/root",
        "/sys",
        "/var/run",
        "/run/dbus",
        "/tmp/.X11-unix",
        "/etc/shadow",
    ] {
        assert!(!args.iter().any(|a| a.starts_with(absent)), "{absent} appears");
    }
    assert!(has(
        &args,
        &["--ro-bind", "/var/lib/partagpu/jobs/j1/etc/passwd", "/etc/passwd"]
    ));
    assert!(has(
        &args,
        &["--ro-bind", "/var/lib/partagpu/jobs/j1/etc/group", "/etc/group"]
    ));
    assert!(has(&args, &["--tmpfs", "/run"]));
    assert!(has(&args, &["--proc", "/proc", "--dev", "/dev"]));
    assert!(has(&args, &["--dev-bind", "/dev/nvidia0", "/dev/nvidia0"]));
    assert!(has(
        &args,
        &["--ro-bind", "/run/partagpu/mps", "/run/partagpu/mps"]
    ));
    assert!(has(
        &args,
        &["--size", "1048576", "--perms", "1777", "--tmpfs", "/tmp"]
    ));
    assert!(has(
        &args,
        &["--bind", "/var/lib/partagpu/jobs/j1/workspace", "/workspace"]
    ));
    assert!(has(&args, &["--remount-ro", "/", "--chdir"]));
    assert!(args.ends_with(&["--chdir", "/workspace", "--", "python3", "train.py"].map(String::from)));
}

#[test]
fn merged_usr_becomes_symlinks() {
    let args = args_with(false, None);
    for link in USR_LINKS {
        match std::fs::read_link(link) {
            Ok(target) => assert!(has(&args, &["--symlink", target.to_str().unwrap(), link])),
            Err(_) => assert!(has(&args, &["--ro-bind-try", link, link])),
        }
    }
}

#[test]
fn generated_etc_has_only_root_and_the_job_user() {
    let tmp = tempfile::tempdir().unwrap();
    let etc = tmp.path().join("etc");
    write_etc(&etc, &user(), "pg-job", None).unwrap();
    let passwd = std::fs::read_to_string(etc.join("passwd")).unwrap();
    assert_eq!(passwd.lines().count(), 2);
    assert!(passwd.contains("partagpu-job:x:998:997::/workspace:/usr/sbin/nologin"));
    let group = std::fs::read_to_string(etc.join("group")).unwrap();
    assert_eq!(group, "root:x:0:\npartagpu-job:x:997:\n");
    assert!(std::fs::read_to_string(etc.join("hosts"))
        .unwrap()
        .contains("pg-job"));
    write_etc(
        &etc,
        &user(),
        "pg-job",
        Some(std::net::Ipv4Addr::new(10, 98, 0, 2)),
    )
    .unwrap();
    let hosts = std::fs::read_to_string(etc.join("hosts")).unwrap();
    assert!(
        hosts.contains("10.98.0.2\tpg-job\n"),
        "a LAN job resolves its name to its LAN address"
    );
    write_etc(&etc, &user(), "bad\nname", None).unwrap();
    assert!(!std::fs::read_to_string(etc.join("hosts"))
        .unwrap()
        .contains("bad"));
    let mode =
        std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(etc.join("group")).unwrap().permissions());
    assert_eq!(mode & 0o777, 0o644);
}

#[test]
fn bwrap_is_found_and_recent() {
    if !bwrap_path().exists() {
        eprintln!("skipped: no {}", bwrap_path().display());
        return;
    }
    let version = check_bwrap().unwrap();
    assert!(version.chars().next().unwrap().is_ascii_digit(), "{version}");
}
