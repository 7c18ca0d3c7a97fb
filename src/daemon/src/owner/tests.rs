// SPDX-License-Identifier: GPL-3.0-or-later
use super::*;

const AWAY: Duration = Duration::from_secs(60);

#[test]
fn the_owner_pauses_and_a_long_absence_resumes() {
    let start = Instant::now();
    let mut presence = Presence::new(AWAY, false);
    assert_eq!(presence.observe(false, false, start), None);
    assert_eq!(presence.observe(true, false, start), Some(Action::Pause));
    assert_eq!(presence.observe(true, true, start + Duration::from_secs(1)), None);
    // Idle, but not for long enough.
    let idle = start + Duration::from_secs(2);
    assert_eq!(presence.observe(false, true, idle), None);
    assert_eq!(presence.observe(false, true, idle + AWAY / 2), None);
    // Back before the end: the clock starts again.
    assert_eq!(presence.observe(true, true, idle + AWAY / 2), None);
    let again = idle + AWAY;
    assert_eq!(presence.observe(false, true, again), None);
    assert_eq!(presence.observe(false, true, again + AWAY), Some(Action::Resume));
    assert!(!presence.auto_paused());
}

#[test]
fn a_pause_by_hand_is_never_undone() {
    let start = Instant::now();
    let mut presence = Presence::new(AWAY, false);
    assert_eq!(presence.observe(true, true, start), None);
    assert_eq!(presence.observe(false, true, start), None);
    assert_eq!(presence.observe(false, true, start + 10 * AWAY), None);
}

#[test]
fn a_resume_by_hand_while_the_owner_is_there_holds_until_they_come_back() {
    let start = Instant::now();
    let mut presence = Presence::new(AWAY, false);
    assert_eq!(presence.observe(true, false, start), Some(Action::Pause));
    // The owner resumes from the tray: it is not paused again while they stay.
    assert_eq!(presence.observe(true, false, start), None);
    assert_eq!(presence.observe(true, false, start + AWAY), None);
    // They leave, then come back: paused again.
    assert_eq!(presence.observe(false, false, start + 2 * AWAY), None);
    assert_eq!(
        presence.observe(true, false, start + 2 * AWAY),
        Some(Action::Pause)
    );
}

#[test]
fn a_pause_of_ours_from_before_a_restart_is_still_resumed() {
    let start = Instant::now();
    let mut presence = Presence::new(AWAY, true);
    assert_eq!(presence.observe(false, true, start), None);
    assert_eq!(presence.observe(false, true, start + AWAY), Some(Action::Resume));
}

#[test]
fn the_default_absence_is_ten_minutes() {
    assert_eq!(OwnerConfig::default().resume_after(), Duration::from_secs(600));
    assert!(!OwnerConfig::default().auto_pause);
}
