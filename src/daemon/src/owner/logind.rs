// SPDX-License-Identifier: GPL-3.0-or-later
//! Reading logind's sessions: is a local user session of this machine in use?

use std::collections::HashMap;

use zbus::zvariant::{OwnedObjectPath, OwnedValue};

const LOGIND: &str = "org.freedesktop.login1";
const SESSION: &str = "org.freedesktop.login1.Session";

/// Whether a local (not remote) user session on a seat is not idle.
///
/// # Errors
/// logind does not answer, or answers with the wrong types.
pub async fn someone_active(connection: &zbus::Connection) -> zbus::Result<bool> {
    let reply = connection
        .call_method(
            Some(LOGIND),
            "/org/freedesktop/login1",
            Some("org.freedesktop.login1.Manager"),
            "ListSessions",
            &(),
        )
        .await?;
    let sessions: Vec<(String, u32, String, String, OwnedObjectPath)> = reply.body().deserialize()?;
    for (_, _, _, seat, path) in sessions {
        if seat.is_empty() {
            continue; // ssh and other sessions with no seat are not someone at the machine
        }
        let reply = connection
            .call_method(
                Some(LOGIND),
                path.as_str(),
                Some("org.freedesktop.DBus.Properties"),
                "GetAll",
                &(SESSION,),
            )
            .await?;
        let properties: HashMap<String, OwnedValue> = reply.body().deserialize()?;
        if in_use(&properties) {
            return Ok(true);
        }
    }
    Ok(false)
}

/// A session that counts: class "user", not remote, and its idle hint off.
fn in_use(properties: &HashMap<String, OwnedValue>) -> bool {
    let flag = |name: &str| properties.get(name).and_then(|v| bool::try_from(v).ok());
    let class = properties
        .get("Class")
        .and_then(|v| <&str>::try_from(v).ok().map(str::to_owned));
    class.as_deref() == Some("user") && flag("Remote") == Some(false) && flag("IdleHint") == Some(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn session(class: &str, remote: bool, idle: bool) -> HashMap<String, OwnedValue> {
        HashMap::from([
            (
                "Class".to_owned(),
                OwnedValue::try_from(zbus::zvariant::Value::from(class)).unwrap(),
            ),
            ("Remote".to_owned(), OwnedValue::from(remote)),
            ("IdleHint".to_owned(), OwnedValue::from(idle)),
        ])
    }

    #[test]
    fn only_a_local_user_session_that_is_not_idle_counts() {
        assert!(in_use(&session("user", false, false)));
        assert!(!in_use(&session("user", false, true)));
        assert!(!in_use(&session("user", true, false)));
        assert!(!in_use(&session("greeter", false, false)));
        assert!(!in_use(&HashMap::new()));
    }
}
