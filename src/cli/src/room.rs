// SPDX-License-Identifier: GPL-3.0-or-later
//! `partagpuctl room …`. The code is printed only by `new`, `rotate` and `reveal`; it is read
//! from the command line or, when not given there, from the terminal.

use std::io::{BufRead, IsTerminal, Write};

use anyhow::{bail, Context, Result};
use partagpu_client::{Client, JoinOptions, RoomInfo, VisibleRoom};

use crate::args::RoomCommand;

pub async fn run(client: &Client, command: RoomCommand) -> Result<()> {
    match command {
        RoomCommand::New { label, language } => {
            let code = client.create_room(&label, &language).await?;
            let named = if label.is_empty() {
                String::new()
            } else {
                format!(" \"{label}\"")
            };
            println!("Room{named} created. Its code, shown once:");
            println!();
            println!("    {code}");
            println!();
            println!("Other machines join with: partagpuctl room join <the four words>");
            println!("An administrator can show it again with: partagpuctl room reveal");
            Ok(())
        }
        RoomCommand::Join {
            words,
            room,
            peer,
            epoch,
        } => {
            let code = if words.is_empty() {
                ask_code()?
            } else {
                words.join(" ")
            };
            let options = JoinOptions { room, peer, epoch };
            let (room_id, label) = client.join_room(&code, &options).await?;
            let named = if label.is_empty() {
                room_id
            } else {
                format!("\"{label}\" ({room_id})")
            };
            println!("Joined the room {named}.");
            Ok(())
        }
        RoomCommand::Show { json } => print_info(&client.room().await?, json),
        RoomCommand::List { json } => print_visible(&client.visible_rooms().await?, json),
        RoomCommand::Leave => {
            if client.leave_room().await? {
                println!("Left the room: this machine forgot its code and the machines it knew.");
            } else {
                println!("This machine is not in a room.");
            }
            Ok(())
        }
        RoomCommand::Rotate => {
            let code = client.rotate_code().await?;
            println!("The room's code changed. Old sessions are closed; members join again with:");
            println!();
            println!("    {code}");
            Ok(())
        }
        RoomCommand::Reveal => {
            println!("{}", client.reveal_code().await?);
            Ok(())
        }
    }
}

fn ask_code() -> Result<String> {
    let stdin = std::io::stdin();
    if stdin.is_terminal() {
        eprint!("Room code (four words): ");
        std::io::stderr().flush().ok();
    }
    let mut line = String::new();
    stdin
        .lock()
        .read_line(&mut line)
        .context("cannot read the room code")?;
    let line = line.trim().to_owned();
    if line.is_empty() {
        bail!("no room code given");
    }
    Ok(line)
}

fn print_info(info: &RoomInfo, json: bool) -> Result<()> {
    if json {
        println!("{}", serde_json::to_string_pretty(info)?);
        return Ok(());
    }
    if info.joined {
        let label = if info.label.is_empty() {
            "(no label)"
        } else {
            info.label.as_str()
        };
        println!("Room:        {label}");
        println!("Room id:     {}", info.room_id);
        println!("Epoch:       {}", info.epoch);
    } else {
        println!("This machine is not in a room. Create one with `partagpuctl room new` or join one.");
    }
    println!("Node id:     {}", info.node_id);
    println!("Fingerprint: {}", info.fingerprint);
    Ok(())
}

fn print_visible(rooms: &[VisibleRoom], json: bool) -> Result<()> {
    if json {
        println!("{}", serde_json::to_string_pretty(rooms)?);
        return Ok(());
    }
    if rooms.is_empty() {
        println!("No room is announced on this network.");
    }
    for room in rooms {
        let label = if room.label.is_empty() {
            "(no label)"
        } else {
            room.label.as_str()
        };
        println!(
            "{label}  id {}  epoch {}  {} machine(s): {}",
            room.room_id,
            room.epoch,
            room.members.len(),
            room.members.join(", ")
        );
    }
    Ok(())
}
