// SPDX-License-Identifier: GPL-3.0-or-later
//! Polkit authorisation of the **caller** of a method.
//!
//! The subject is the caller's unique bus name taken from the message header
//! (`system-bus-name`), never this daemon's own process: polkit then resolves the caller's
//! process, user and session itself. Callers running as uid 0 are let through without asking
//! polkit, as system services commonly do (root can rewrite the state files anyway). When
//! polkit cannot be reached, every non-root caller is refused: the check fails closed.

use std::collections::HashMap;

use partagpu_core::ids::actions;
use zbus::fdo::DBusProxy;
use zbus::message::Header;
use zbus::proxy::CacheProperties;
use zbus::Connection;
use zbus_polkit::policykit1::{AuthorityProxy, CheckAuthorizationFlags, Subject};

use crate::error::BusError;

/// What each action lets a caller do, for refusal messages.
fn describe(action: &str) -> &'static str {
    match action {
        actions::PAUSE => "pause or resume sharing",
        actions::SET_SHARING => "turn sharing on or off",
        actions::SET_LIMITS => "change the CPU, RAM and GPU limits",
        actions::SET_NAME => "rename this machine",
        actions::MANAGE_ROOM => "create, join or leave a room, or change its code",
        actions::REVEAL_CODE => "see the room code",
        actions::SUBMIT_JOB => "run a job on the machines of the room",
        actions::MANAGE_JOBS => "stop a job you did not submit",
        _ => "do this",
    }
}

/// The uid of the process that sent `header`, as the bus daemon knows it.
///
/// # Errors
/// [`BusError::NotAuthorized`] when the bus cannot say.
pub async fn caller_uid(connection: &Connection, header: &Header<'_>) -> Result<u32, BusError> {
    let unknown = |why: String| BusError::NotAuthorized(format!("the caller's user is unknown ({why})"));
    let sender = header.sender().ok_or_else(|| unknown("no sender".into()))?;
    let bus = DBusProxy::builder(connection)
        .cache_properties(CacheProperties::No)
        .build()
        .await?;
    bus.get_connection_unix_user(sender.clone().into())
        .await
        .map_err(|error| unknown(error.to_string()))
}

/// Succeeds when the sender of `header` may perform `action`.
///
/// # Errors
/// [`BusError::NotAuthorized`] when polkit refuses, or cannot be asked.
pub async fn authorize(connection: &Connection, header: &Header<'_>, action: &str) -> Result<(), BusError> {
    let refused =
        |why: &str| BusError::NotAuthorized(format!("not authorized to {}: {why}", describe(action)));
    let sender = header
        .sender()
        .ok_or_else(|| refused("the request has no sender"))?;
    let bus = DBusProxy::builder(connection)
        .cache_properties(CacheProperties::No)
        .build()
        .await?;
    let uid = bus
        .get_connection_unix_user(sender.clone().into())
        .await
        .map_err(|error| refused(&format!("the caller's user is unknown ({error})")))?;
    if uid == 0 {
        tracing::debug!(action, %sender, "root caller allowed without polkit");
        return Ok(());
    }
    let subject = Subject::new_for_message_header(header).map_err(|_| refused("no sender"))?;
    let unavailable = |error: zbus::Error| {
        tracing::warn!(action, %error, "polkit unreachable; refusing");
        refused("the authorization service (polkit) is not available")
    };
    let authority = AuthorityProxy::builder(connection)
        .cache_properties(CacheProperties::No)
        .build()
        .await
        .map_err(unavailable)?;
    let result = authority
        .check_authorization(
            &subject,
            action,
            &HashMap::new(),
            CheckAuthorizationFlags::AllowUserInteraction.into(),
            "",
        )
        .await
        .map_err(unavailable)?;
    tracing::info!(action, uid, allowed = result.is_authorized, "polkit decision");
    if result.is_authorized {
        Ok(())
    } else {
        Err(refused("polkit denied it"))
    }
}
