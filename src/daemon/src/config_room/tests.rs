// SPDX-License-Identifier: GPL-3.0-or-later
use std::net::SocketAddr;

use super::*;

fn room(id: u8, epoch: u32, label: &str, host: u8) -> VisibleRoom {
    VisibleRoom {
        room_id: RoomId::from_hex(&format!("{id:02x}").repeat(16)).unwrap(),
        epoch,
        label: label.into(),
        members: vec![SocketAddr::from(([10, 98, 0, host], 7655))],
    }
}

fn id(n: u8) -> RoomId {
    room(n, 0, "", 0).room_id
}

#[test]
fn the_state_directory_wins_once_the_config_was_applied() {
    assert_eq!(decide(None, None, "B12"), Start::Apply);
    assert_eq!(decide(None, Some("B12"), "B12"), Start::LeftIt);
    // Another label in the file is another room: applied again while in no room.
    assert_eq!(decide(None, Some("B11"), "B12"), Start::Apply);
    assert_eq!(decide(Some(true), None, "B12"), Start::InConfigRoom);
    assert_eq!(decide(Some(false), None, "B12"), Start::InOwnersRoom);
    assert_eq!(decide(Some(false), Some("B11"), "B12"), Start::InOwnersRoom);
}

#[test]
fn the_lowest_room_with_the_label_is_chosen() {
    let rooms = [
        room(5, 0, "B12", 5),
        room(3, 1, "B12", 3),
        room(3, 0, "B12", 4),
        room(1, 0, "B13", 1),
    ];
    let (room_id, epoch, label, members) = lowest_room(&rooms, "B12", None, |_| false).unwrap();
    // Room 1 has another label; room 3's newest epoch is dialled.
    assert_eq!((room_id, epoch, label.as_str()), (id(3), 1, "B12"));
    assert_eq!(members, room(0, 0, "", 3).members);
    assert!(lowest_room(&rooms, "b12", None, |_| false).is_none());
    assert!(lowest_room(&rooms, "B13", Some(id(1)), |_| false).is_none());
}

#[test]
fn only_lower_rooms_that_are_not_skipped_are_merged_into() {
    let rooms = [room(5, 0, "B12", 5), room(3, 0, "B12", 3), room(7, 0, "B12", 7)];
    let below_five = lowest_room(&rooms, "B12", Some(id(5)), |_| false).unwrap();
    assert_eq!(below_five.0, id(3));
    // The lowest room never moves.
    assert!(lowest_room(&rooms, "B12", Some(id(3)), |_| false).is_none());
    // A room that refused the code (someone else's) is passed over for the next one.
    let next = lowest_room(&rooms, "B12", Some(id(7)), |r| *r == id(3)).unwrap();
    assert_eq!(next.0, id(5));
}

#[test]
fn an_unreachable_room_rests_longer_each_time_but_never_forever() {
    assert_eq!(rest_after(0), None);
    assert_eq!(rest_after(MAX_FAILURES - 1), None);
    assert_eq!(rest_after(MAX_FAILURES), Some(FIRST_REST));
    assert_eq!(rest_after(MAX_FAILURES + 1), Some(FIRST_REST * 2));
    assert_eq!(rest_after(MAX_FAILURES + 40), Some(LONGEST_REST));
    assert_eq!(rest_after(u32::MAX), Some(LONGEST_REST));
}
