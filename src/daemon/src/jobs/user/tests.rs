// SPDX-License-Identifier: GPL-3.0-or-later
use std::io::Write;

use super::*;

const PASSWD: &str = "\
root:x:0:0:root:/root:/bin/bash
# a comment line
nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin
partagpu-job:x:998:997::/nonexistent:/usr/sbin/nologin
rootgroup:x:1000:0::/home/rootgroup:/bin/sh
broken:x:abc:997::/:/bin/sh
short:x:1001
minus:x:4294967295:997::/:/bin/sh
partagpu-job:x:5:5::/:/bin/sh
";

fn fixture() -> tempfile::NamedTempFile {
    let mut file = tempfile::NamedTempFile::new().unwrap();
    file.write_all(PASSWD.as_bytes()).unwrap();
    file
}

#[test]
fn finds_the_first_matching_line() {
    let file = fixture();
    let user = resolve_in(file.path(), "partagpu-job").unwrap();
    assert_eq!(
        user,
        JobUser {
            name: "partagpu-job".into(),
            uid: 998,
            gid: 997
        }
    );
    assert_eq!(resolve_in(file.path(), "nobody").unwrap().uid, 65534);
}

#[test]
fn refuses_root_and_group_root() {
    let file = fixture();
    assert!(matches!(
        resolve_in(file.path(), "root"),
        Err(UserError::Privileged { uid: 0, .. })
    ));
    assert!(matches!(
        resolve_in(file.path(), "rootgroup"),
        Err(UserError::Privileged { gid: 0, .. })
    ));
}

#[test]
fn missing_user_tells_the_admin_how_to_create_it() {
    let file = fixture();
    let err = resolve_in(file.path(), "absent").unwrap_err();
    assert!(matches!(err, UserError::Missing { .. }));
    let message = err.to_string();
    assert!(message.contains("useradd --system --no-create-home --shell /usr/sbin/nologin absent"));
    // Names that could match a comment or span fields never match.
    assert!(matches!(
        resolve_in(file.path(), ""),
        Err(UserError::Missing { .. })
    ));
    assert!(matches!(
        resolve_in(file.path(), "nobody:x"),
        Err(UserError::Missing { .. })
    ));
    assert!(matches!(
        resolve_in(file.path(), "short"),
        Err(UserError::Missing { .. })
    ));
}

#[test]
fn refuses_malformed_ids() {
    let file = fixture();
    assert!(matches!(
        resolve_in(file.path(), "broken"),
        Err(UserError::Malformed { .. })
    ));
    assert!(matches!(
        resolve_in(file.path(), "minus"),
        Err(UserError::Malformed { .. })
    ));
}

#[test]
fn unreadable_file_is_reported() {
    let err = resolve_in(Path::new("/nonexistent/passwd"), "nobody").unwrap_err();
    assert!(matches!(err, UserError::Read { .. }));
    assert!(err.to_string().ends_with('.'));
}
