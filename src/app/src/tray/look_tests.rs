// SPDX-License-Identifier: GPL-3.0-or-later

use partagpu_core::job::record::JobRole;
use partagpu_core::job::state::JobState;
use partagpu_core::Limits;

use super::*;
use crate::pages::jobs::model::tests::record;
use crate::pages::sharing::model::tests::status;

fn lent() -> Limits {
    Limits {
        cpu_percent: 50,
        ram_bytes: 1 << 30,
        gpu_percent: 50,
    }
}

fn model(enabled: bool, paused: bool, jobs: &[JobRecord]) -> TrayModel {
    let mut model = TrayModel::default();
    model.set_service_running(true);
    model.set_status(&status(enabled, paused, lent()));
    model.set_jobs(jobs);
    model
}

#[test]
fn each_state_has_its_icon_and_toggle() {
    let sharing = model(true, false, &[]).look();
    assert_eq!(
        (sharing.icon, sharing.toggle),
        (ICON_SHARING, Some(Toggle::Pause))
    );
    let paused = model(true, true, &[]).look();
    assert_eq!((paused.icon, paused.toggle), (ICON_PAUSED, Some(Toggle::Resume)));
    let off = model(false, false, &[]).look();
    assert_eq!((off.icon, off.toggle), (ICON_OFF, Some(Toggle::TurnOn)));
    assert_eq!(Toggle::Pause.target(), SharingState::Paused);
    assert_eq!(Toggle::TurnOn.target(), SharingState::Sharing);
}

#[test]
fn only_jobs_executing_here_make_it_busy() {
    let elsewhere = [
        record("a", JobRole::Submitted, JobState::Running),
        record("b", JobRole::Here, JobState::Succeeded),
    ];
    assert_eq!(model(true, false, &elsewhere).look().icon, ICON_SHARING);
    let here = [
        record("c", JobRole::Here, JobState::Running),
        record("d", JobRole::Both, JobState::Accepted),
    ];
    let busy = model(true, false, &here).look();
    assert_eq!(busy.icon, ICON_BUSY);
    assert!(busy.summary.contains('2'), "{}", busy.summary);
    // Paused wins over busy: the owner took the machine back, its jobs are frozen.
    let frozen = model(true, true, &here).look();
    assert_eq!(frozen.icon, ICON_PAUSED);
    assert!(frozen.summary.contains("frozen"), "{}", frozen.summary);
}

#[test]
fn without_the_service_there_is_nothing_to_toggle() {
    let mut model = model(true, false, &[record("c", JobRole::Here, JobState::Running)]);
    model.set_service_running(false);
    let look = model.look();
    assert_eq!((look.icon, look.toggle), (ICON_OFF, None));
    assert!(look.summary.contains("not running"));
    // Back on the bus, nothing is claimed until a status arrives.
    model.set_service_running(true);
    assert_eq!(model.look().toggle, None);
}
