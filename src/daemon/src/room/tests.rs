// SPDX-License-Identifier: GPL-3.0-or-later
use super::*;

fn in_room(state: &RoomState) -> RoomCode {
    let (room, code) = fresh_room("Salle B12".into(), Language::French);
    state.install(room).unwrap();
    code
}

fn files_mentioning(dir: &Path, needle: &str) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|entry| {
            let entry = entry.unwrap();
            let text = String::from_utf8_lossy(&std::fs::read(entry.path()).ok()?).into_owned();
            text.contains(needle)
                .then(|| entry.file_name().to_string_lossy().into_owned())
        })
        .collect()
}

#[test]
fn the_identity_and_the_room_survive_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let state = RoomState::open(dir.path(), None).unwrap();
    let node = state.info().node_id;
    assert!(state.current().is_none());
    let code = in_room(&state);
    let room_id = state.current().unwrap().room_id;
    drop(state);
    let reopened = RoomState::open(dir.path(), None).unwrap();
    assert_eq!(reopened.info().node_id, node);
    assert_eq!(reopened.reveal().unwrap(), code);
    let (epoch, password) = reopened.lookup(&room_id).unwrap();
    assert_eq!(epoch, 0);
    assert_eq!(
        password.expose_secret(),
        RoomPassword::derive(&code, &room_id).expose_secret()
    );
    assert!(reopened.lookup(&RoomId::generate(&mut OsRng)).is_none());
}

#[test]
fn the_code_is_only_in_the_secrets_file() {
    let dir = tempfile::tempdir().unwrap();
    let state = RoomState::open(dir.path(), None).unwrap();
    let code = in_room(&state);
    std::fs::write(dir.path().join("other.json"), b"{}").unwrap();
    for word in code.expose_words() {
        assert_eq!(
            files_mentioning(dir.path(), word),
            vec![secrets::SECRETS_FILE.to_owned()]
        );
    }
    assert!(!format!("{:?}", state.info()).contains(code.expose_words()[0]));
}

#[test]
fn rotation_keeps_the_room_and_moves_the_epoch_and_the_generation() {
    let dir = tempfile::tempdir().unwrap();
    let state = RoomState::open(dir.path(), None).unwrap();
    let old_code = in_room(&state);
    let mut watcher = state.subscribe();
    watcher.borrow_and_update();
    let before = state.current().unwrap();
    let (next, new_code) = rotated(&before);
    state.install(next).unwrap();
    assert!(watcher.has_changed().unwrap());
    let after = state.current().unwrap();
    assert_eq!(
        (after.room_id, after.epoch, after.label.as_str()),
        (before.room_id, 1, "Salle B12")
    );
    assert_ne!(new_code, old_code);
    assert_eq!(state.reveal().unwrap(), new_code);
}

#[test]
fn pins_are_new_then_known_and_a_changed_key_at_a_dialled_address_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let state = RoomState::open(dir.path(), None).unwrap();
    in_room(&state);
    let first = NodeIdentity::generate(&mut OsRng).public_key();
    let second = NodeIdentity::generate(&mut OsRng).public_key();
    let at = "10.98.0.1:7655";
    assert_eq!(state.pin(&first, at, true, 1).unwrap(), PinOutcome::New);
    assert_eq!(state.pin(&first, at, true, 2).unwrap(), PinOutcome::Known);
    assert_eq!(state.pin(&second, at, true, 3).unwrap(), PinOutcome::Changed);
    assert_eq!(state.pinned().len(), 1, "a changed key is not pinned");
    // A client connecting from that address is another machine, not a changed one.
    assert_eq!(state.pin(&second, at, false, 4).unwrap(), PinOutcome::New);
    let reopened = RoomState::open(dir.path(), None).unwrap();
    assert_eq!(reopened.pinned().len(), 2);
    assert!(reopened.leave().unwrap());
    assert!(reopened.pinned().is_empty() && reopened.current().is_none());
    assert!(!reopened.leave().unwrap());
}

#[test]
fn labels_are_bounded_and_printable() {
    assert!(check_label("Salle B12").is_ok());
    assert!(check_label(&"é".repeat(31)).is_ok());
    assert!(check_label(&"é".repeat(32)).is_err());
    assert!(check_label("a\nb").is_err());
}

fn tag(last_digit: char) -> MachineTag {
    MachineTag::of_machine_id(&format!("0123456789abcdef0123456789abcde{last_digit}\n")).unwrap()
}

#[test]
fn a_state_directory_copied_onto_another_machine_gets_a_new_identity_and_keeps_its_room() {
    let dir = tempfile::tempdir().unwrap();
    let original = RoomState::open(dir.path(), Some(&tag('0'))).unwrap();
    assert_eq!(original.opened(), &Opened::New);
    let code = in_room(&original);
    let peer = NodeIdentity::generate(&mut OsRng).public_key();
    original.pin(&peer, "10.98.0.2:7655", true, 1).unwrap();
    let node = original.info().node_id;
    drop(original);

    // The same machine again: nothing changes.
    let again = RoomState::open(dir.path(), Some(&tag('0'))).unwrap();
    assert_eq!(
        (again.opened(), again.info().node_id),
        (&Opened::Kept, node.clone())
    );
    assert_eq!(again.pinned().len(), 1);
    drop(again);

    // The directory on a machine with another id (a disk image).
    let copy = RoomState::open(dir.path(), Some(&tag('1'))).unwrap();
    assert_eq!(
        copy.opened(),
        &Opened::Copied {
            previous_node: node.clone()
        }
    );
    assert_ne!(copy.info().node_id, node);
    assert!(copy.pinned().is_empty(), "the pins were the other machine's");
    assert_eq!(copy.reveal().unwrap(), code, "the room is kept");
    let renewed = copy.info().node_id;
    drop(copy);
    // Bound to this machine from now on.
    let reopened = RoomState::open(dir.path(), Some(&tag('1'))).unwrap();
    assert_eq!(
        (reopened.opened(), reopened.info().node_id),
        (&Opened::Kept, renewed)
    );
}

#[test]
fn a_state_directory_is_bound_to_the_first_machine_id_it_sees_and_kept_without_one() {
    let dir = tempfile::tempdir().unwrap();
    // Made where there was no machine id (or by an older version): not bound yet.
    let unbound = RoomState::open(dir.path(), None).unwrap();
    let node = unbound.info().node_id;
    drop(unbound);
    let bound = RoomState::open(dir.path(), Some(&tag('2'))).unwrap();
    assert_eq!(
        (bound.opened(), bound.info().node_id),
        (&Opened::Kept, node.clone())
    );
    drop(bound);
    // A machine id that cannot be read later does not unbind it or change the identity.
    let unreadable = RoomState::open(dir.path(), None).unwrap();
    assert_eq!(
        (unreadable.opened(), unreadable.info().node_id),
        (&Opened::Kept, node.clone())
    );
    drop(unreadable);
    let moved = RoomState::open(dir.path(), Some(&tag('3'))).unwrap();
    assert!(matches!(moved.opened(), Opened::Copied { previous_node } if *previous_node == node));
    // The secrets file holds the tag, never the machine id itself.
    let text = std::fs::read_to_string(dir.path().join(secrets::SECRETS_FILE)).unwrap();
    assert!(text.contains(tag('3').as_str()) && !text.contains("0123456789abcdef0123456789abcde3"));
}
