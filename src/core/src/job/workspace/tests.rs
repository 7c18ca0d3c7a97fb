// SPDX-License-Identifier: GPL-3.0-or-later
//! Tests of the workspace archive: writer → plan round trips and hostile archives built by
//! hand, byte by byte, as an attacker would.

use super::parse::octal;
use super::*;

/// One raw header with a valid checksum (unless the caller breaks it afterwards).
fn header(name: &str, flag: u8, size: usize, mode: u32) -> Vec<u8> {
    let mut h = vec![0u8; 512];
    h[..name.len()].copy_from_slice(name.as_bytes());
    h[100..107].copy_from_slice(format!("{mode:07o}").as_bytes());
    h[124..135].copy_from_slice(format!("{size:011o}").as_bytes());
    h[156] = flag;
    h[257..263].copy_from_slice(b"ustar\0");
    h[263..265].copy_from_slice(b"00");
    seal(&mut h);
    h
}

fn seal(h: &mut [u8]) {
    h[148..156].fill(b' ');
    let sum: u32 = h.iter().map(|&b| u32::from(b)).sum();
    h[148..155].copy_from_slice(format!("{sum:06o}\0").as_bytes());
}

/// An entry: header then padded data.
fn raw(name: &str, flag: u8, data: &[u8]) -> Vec<u8> {
    let mut out = header(name, flag, data.len(), 0o644);
    out.extend_from_slice(data);
    out.resize(out.len().div_ceil(512) * 512, 0);
    out
}

fn archive(entries: &[Vec<u8>]) -> Vec<u8> {
    let mut out = entries.concat();
    out.extend_from_slice(&[0; 1024]);
    out
}

fn file_data<'a>(tar: &'a [u8], entry: &WorkspaceEntry) -> &'a [u8] {
    match &entry.kind {
        EntryKind::File { data, .. } => &tar[data.clone()],
        EntryKind::Directory => panic!("{} is a directory", entry.path),
    }
}

#[test]
fn a_written_workspace_plans_back_to_the_same_tree() {
    let mut w = TarWriter::new();
    w.add_dir("src").unwrap();
    w.add_file("src/train.py", b"print('hi')\n", false).unwrap();
    w.add_file("run.sh", b"#!/bin/sh\n", true).unwrap();
    w.add_file("empty", b"", false).unwrap();
    w.add_file("data/deep/x.bin", &[7u8; 1500], false).unwrap();
    let tar = w.finish();
    assert_eq!(tar.len() % 512, 0);
    let plan = plan_workspace(&tar).unwrap();
    let paths: Vec<&str> = plan.iter().map(|e| e.path.as_str()).collect();
    assert_eq!(
        paths,
        ["src", "src/train.py", "run.sh", "empty", "data/deep/x.bin"]
    );
    assert_eq!(plan[0].kind, EntryKind::Directory);
    assert_eq!(file_data(&tar, &plan[1]), b"print('hi')\n");
    assert!(matches!(plan[2].kind, EntryKind::File { executable: true, .. }));
    assert!(matches!(
        plan[1].kind,
        EntryKind::File {
            executable: false,
            ..
        }
    ));
    assert_eq!(file_data(&tar, &plan[3]), b"");
    assert_eq!(file_data(&tar, &plan[4]), &[7u8; 1500][..]);
}

#[test]
fn files_added_to_a_workspace_replace_those_of_the_same_path_and_keep_the_rest() {
    let mut w = TarWriter::new();
    w.add_dir("src").unwrap();
    w.add_file("run.sh", b"#!/bin/sh\n", true).unwrap();
    w.add_file("partagpu-checkpoint.pt", b"older", false).unwrap();
    let tar = w.finish();
    let index: &[u8] = br#"{"step": 4}"#;
    let added = with_files(
        &tar,
        &[
            ("partagpu-checkpoint.pt", b"newer"),
            ("partagpu-checkpoint.json", index),
        ],
    )
    .unwrap();
    let plan = plan_workspace(&added).unwrap();
    let paths: Vec<&str> = plan.iter().map(|e| e.path.as_str()).collect();
    assert_eq!(
        paths,
        [
            "src",
            "run.sh",
            "partagpu-checkpoint.pt",
            "partagpu-checkpoint.json"
        ]
    );
    assert!(matches!(plan[1].kind, EntryKind::File { executable: true, .. }));
    assert_eq!(file_data(&added, &plan[2]), b"newer");
    assert_eq!(file_data(&added, &plan[3]), index);

    let big = vec![0u8; MAX_WORKSPACE_BYTES as usize];
    let err = with_files(&tar, &[("partagpu-checkpoint.pt", &big)]).unwrap_err();
    assert!(err.to_string().contains("16 MiB"), "{err}");
    assert!(with_files(b"not a tar", &[]).is_err());
    assert!(with_files(&tar, &[("../out", b"x")]).is_err());
}

#[test]
fn long_paths_use_the_ustar_prefix_or_a_pax_header() {
    let split = format!("{}/{}", "d".repeat(120), "f".repeat(90));
    let pax = format!("{}/{}", "p".repeat(50), "n".repeat(200));
    let deep_dir = vec!["dir"; 30].join("/") + &"x".repeat(60);
    let mut w = TarWriter::new();
    w.add_file(&split, b"split", false).unwrap();
    w.add_file(&pax, b"pax", false).unwrap();
    w.add_dir(&deep_dir).unwrap();
    let tar = w.finish();
    let plan = plan_workspace(&tar).unwrap();
    assert_eq!(plan.len(), 3);
    assert_eq!(plan[0].path, split);
    assert_eq!(file_data(&tar, &plan[0]), b"split");
    assert_eq!(plan[1].path, pax);
    assert_eq!(file_data(&tar, &plan[1]), b"pax");
    assert_eq!(plan[2].path, deep_dir);
}

#[test]
fn the_writer_is_deterministic_and_zeroes_metadata() {
    let build = || {
        let mut w = TarWriter::new();
        w.add_file("a", b"x", false).unwrap();
        w.finish()
    };
    let tar = build();
    assert_eq!(tar, build());
    assert_eq!(octal(&tar[136..148]), Some(0), "mtime");
    assert_eq!(octal(&tar[108..116]), Some(0), "uid");
    assert_eq!(octal(&tar[100..108]), Some(0o644), "mode");
}

#[test]
fn archives_from_tar_with_a_root_entry_and_dot_paths_are_accepted() {
    let tar = archive(&[
        raw("./", b'5', b""),
        raw("./a/", b'5', b""),
        raw("./a/./b", b'0', b"b"),
    ]);
    let plan = plan_workspace(&tar).unwrap();
    let paths: Vec<&str> = plan.iter().map(|e| e.path.as_str()).collect();
    assert_eq!(paths, ["a", "a/b"]);
    // Old-style '\0' type flag, and no end marker at all (end of buffer on a block).
    let tar = raw("old", 0, b"x");
    assert_eq!(plan_workspace(&tar).unwrap()[0].path, "old");
    assert_eq!(plan_workspace(&[]).unwrap(), vec![]);
}

#[test]
fn gnu_long_names_and_pax_paths_are_honoured_and_other_keys_ignored() {
    let long = "l".repeat(200);
    let pax_data = "20 mtime=1700000000\n12 path=pax\n";
    let tar = archive(&[
        raw("././@LongLink", b'L', format!("{long}\0").as_bytes()),
        raw("short", b'0', b"1"),
        raw("PaxHeaders/x", b'x', pax_data.as_bytes()),
        raw("ignored", b'0', b"2"),
    ]);
    let plan = plan_workspace(&tar).unwrap();
    assert_eq!(plan[0].path, long);
    assert_eq!(plan[1].path, "pax");
}

#[test]
fn links_devices_fifos_and_unknown_types_are_refused() {
    type Check = fn(&WorkspaceError) -> bool;
    let cases: &[(u8, Check)] = &[
        (b'1', |e| matches!(e, WorkspaceError::HardLink(p) if p == "x")),
        (b'2', |e| matches!(e, WorkspaceError::SymbolicLink(p) if p == "x")),
        (b'3', |e| matches!(e, WorkspaceError::Device(_))),
        (b'4', |e| matches!(e, WorkspaceError::Device(_))),
        (b'6', |e| matches!(e, WorkspaceError::Fifo(_))),
        (b'g', |e| matches!(e, WorkspaceError::GlobalHeader)),
        (b'7', |e| {
            matches!(e, WorkspaceError::UnknownType { flag: '7', .. })
        }),
        (b'K', |e| matches!(e, WorkspaceError::UnknownType { .. })),
    ];
    for (flag, check) in cases {
        let err = plan_workspace(&archive(&[raw("x", *flag, b"")])).unwrap_err();
        assert!(check(&err), "{}: {err}", char::from(*flag));
    }
    let err = plan_workspace(&archive(&[raw("x", b'2', b"")])).unwrap_err();
    assert!(err.to_string().contains("symbolic link"));
}

#[test]
fn escaping_and_malformed_paths_are_refused() {
    for (name, want) in [
        ("../x", "'..'"),
        ("/etc/x", "absolute"),
        ("a/../../x", "'..'"),
        ("a//b", "empty component"),
        ("a\u{1b}b", "control character"),
        ("a\u{7f}", "control character"),
    ] {
        let err = plan_workspace(&archive(&[raw(name, b'0', b"x")])).unwrap_err();
        assert!(matches!(err, WorkspaceError::Path(_)), "{name:?}: {err}");
        assert!(err.to_string().contains(want), "{name:?}: {err}");
    }
    let mut bad_utf8 = header("", b'0', 0, 0o644);
    bad_utf8[..3].copy_from_slice(b"a\xffb");
    seal(&mut bad_utf8);
    let err = plan_workspace(&archive(&[bad_utf8])).unwrap_err();
    assert_eq!(err, WorkspaceError::Path(PathError::NotUtf8("a\u{fffd}b".into())));
    let err = plan_workspace(&archive(&[raw("./", b'0', b"")])).unwrap_err();
    assert_eq!(err, WorkspaceError::Path(PathError::Empty));
    let deep = vec!["d"; MAX_DEPTH + 1].join("/");
    let mut w = TarWriter::new();
    assert!(matches!(
        w.add_file(&deep, b"", false),
        Err(WorkspaceError::Path(PathError::TooDeep { .. }))
    ));
    let long = "a".repeat(MAX_PATH_BYTES + 1);
    assert!(matches!(
        w.add_dir(&long),
        Err(WorkspaceError::Path(PathError::TooLong { .. }))
    ));
}

#[test]
fn a_pax_path_goes_through_the_same_rules() {
    let tar = archive(&[raw("h", b'x', b"15 path=../etc\n"), raw("fine", b'0', b"")]);
    assert!(matches!(
        plan_workspace(&tar),
        Err(WorkspaceError::Path(PathError::Parent(_)))
    ));
    let tar = archive(&[raw("h", b'x', b"99 path=x\n"), raw("fine", b'0', b"")]);
    assert!(matches!(plan_workspace(&tar), Err(WorkspaceError::BadPax { .. })));
    let big = vec![b'a'; MAX_PAX_BYTES + 1];
    let tar = archive(&[raw("h", b'x', &big), raw("fine", b'0', b"")]);
    assert!(matches!(
        plan_workspace(&tar),
        Err(WorkspaceError::HeaderTooLarge { .. })
    ));
    let tar = archive(&[raw("h", b'L', &vec![b'a'; MAX_PATH_BYTES + 2])]);
    assert!(matches!(
        plan_workspace(&tar),
        Err(WorkspaceError::HeaderTooLarge { .. })
    ));
    let tar = archive(&[raw("h", b'L', b"name\0")]);
    assert_eq!(plan_workspace(&tar), Err(WorkspaceError::DanglingHeader));
}

#[test]
fn damaged_archives_are_refused() {
    let mut entry = raw("a", b'0', b"data");
    entry[0] = b'b';
    assert!(matches!(
        plan_workspace(&archive(&[entry])),
        Err(WorkspaceError::BadChecksum { offset: 0 })
    ));
    // Header says 4000 bytes, only one block follows.
    let mut truncated = header("a", b'0', 4000, 0o644);
    truncated.extend_from_slice(&[0; 512]);
    assert!(matches!(
        plan_workspace(&truncated),
        Err(WorkspaceError::Truncated { .. })
    ));
    let half = &raw("a", b'0', b"x")[..300];
    assert!(matches!(
        plan_workspace(half),
        Err(WorkspaceError::Truncated { offset: 0 })
    ));
    let mut trailing = archive(&[raw("a", b'0', b"x")]);
    trailing.extend_from_slice(&[0, 0, 1]);
    assert!(matches!(
        plan_workspace(&trailing),
        Err(WorkspaceError::TrailingData { .. })
    ));
    let mut bad_size = header("a", b'0', 0, 0o644);
    bad_size[124..135].copy_from_slice(b"0000000009x");
    seal(&mut bad_size);
    let err = plan_workspace(&archive(&[bad_size])).unwrap_err();
    assert_eq!(
        err,
        WorkspaceError::BadField {
            offset: 0,
            field: "size"
        }
    );
}

#[test]
fn duplicates_and_entries_under_files_are_refused() {
    let dup = archive(&[raw("a", b'0', b""), raw("./a", b'0', b"")]);
    assert_eq!(plan_workspace(&dup), Err(WorkspaceError::Duplicate("a".into())));
    let dup_dir = archive(&[raw("d/", b'5', b""), raw("d", b'5', b"")]);
    assert_eq!(
        plan_workspace(&dup_dir),
        Err(WorkspaceError::Duplicate("d".into()))
    );
    let under = archive(&[raw("f", b'0', b""), raw("f/child", b'0', b"")]);
    assert_eq!(
        plan_workspace(&under),
        Err(WorkspaceError::UnderFile {
            path: "f/child".into(),
            file: "f".into()
        })
    );
    let over = archive(&[raw("d/child", b'0', b""), raw("d", b'0', b"")]);
    assert_eq!(
        plan_workspace(&over),
        Err(WorkspaceError::FileOverDirectory("d".into()))
    );
    // A directory named after its implied creation is fine.
    let implied = archive(&[raw("d/child", b'0', b""), raw("d/", b'5', b"")]);
    assert_eq!(plan_workspace(&implied).unwrap().len(), 2);
    let mut w = TarWriter::new();
    w.add_file("f", b"", false).unwrap();
    assert!(matches!(w.add_dir("f/g"), Err(WorkspaceError::UnderFile { .. })));
    assert!(matches!(
        w.add_file("f", b"", false),
        Err(WorkspaceError::Duplicate(_))
    ));
}

#[test]
fn too_many_files_are_refused_by_writer_and_planner() {
    let entries: Vec<Vec<u8>> = (0..=MAX_WORKSPACE_FILES)
        .map(|i| raw(&format!("f{i}"), b'0', b""))
        .collect();
    assert_eq!(
        plan_workspace(&archive(&entries)),
        Err(WorkspaceError::TooManyFiles)
    );
    let mut w = TarWriter::new();
    for i in 0..MAX_WORKSPACE_FILES {
        w.add_file(&format!("f{i}"), b"", false).unwrap();
    }
    assert_eq!(
        w.add_file("one-more", b"", false),
        Err(WorkspaceError::TooManyFiles)
    );
    assert!(w.finish().len() < MAX_WORKSPACE_BYTES as usize);
}

#[test]
fn oversize_archives_and_contents_are_refused() {
    let huge = vec![0u8; MAX_WORKSPACE_BYTES as usize + 512];
    let err = plan_workspace(&huge).unwrap_err();
    assert!(matches!(err, WorkspaceError::TooLarge { .. }));
    assert!(err.to_string().contains("16 MiB"));
    let mut w = TarWriter::new();
    let big = vec![1u8; (MAX_WORKSPACE_BYTES as usize) - 4096];
    w.add_file("big", &big, false).unwrap();
    assert!(matches!(
        w.add_file("more", &[0; 8192], false),
        Err(WorkspaceError::TooLarge { .. })
    ));
    let tar = w.finish();
    assert!(tar.len() as u64 <= MAX_WORKSPACE_BYTES);
    assert_eq!(plan_workspace(&tar).unwrap().len(), 1);
    // A size field claiming more than the cap is refused before any data is trusted.
    let lie = header("a", b'0', (MAX_WORKSPACE_BYTES + 1) as usize, 0o644);
    assert!(matches!(
        plan_workspace(&lie),
        Err(WorkspaceError::Truncated { .. })
    ));
}

#[test]
fn error_messages_do_not_echo_huge_or_hostile_names() {
    let name = format!("{}\n{}", "x".repeat(50), "y".repeat(40));
    let err = plan_workspace(&archive(&[raw(&name, b'2', b"")])).unwrap_err();
    let message = err.to_string();
    assert!(!message.contains('\n') && message.len() < 200, "{message}");
}
