# SPDX-License-Identifier: GPL-3.0-or-later
"""Synthetic Fleet1 and Room1 properties with the exact D-Bus types of
``dbus/org.partagpu.PartaGPU.Daemon.xml``: three machines (this one with a GPU, an online
member that adds a key from the future, an offline member that reports only a few keys)."""

from __future__ import annotations

from typing import Any

from fake_partagpud import FLEET, ROOM

GIB = 1024**3
NOW_MS = 1_767_225_600_123  # 2026-01-01T00:00:00.123Z
ROOM_ID = "b0b1b2b3b4b5b6b7b8b9babbbcbdbebf"
LOCAL_ID = "a1" * 16
ONLINE_ID = "b2" * 16
OFFLINE_ID = "c3" * 16
GPU_UUID = "GPU-8d2e4c1a-0b6f-4e1d-9a7c-3f5b2e1d0c9a"


def local_member(now_ms: int = NOW_MS) -> dict[str, tuple[str, Any]]:
    return {
        "node_id": ("s", LOCAL_ID), "fingerprint": ("s", "abandon ability able about above absent"),
        "name": ("s", "pc-01"), "local": ("b", True), "verified": ("b", True),
        "online": ("b", True), "address": ("s", ""), "last_seen": ("t", now_ms),
        "version": ("s", "0.1.0"), "state": ("s", "sharing"),
        "cpu_limit": ("u", 50), "ram_limit": ("t", 4 * GIB), "gpu_limit": ("u", 75),
        "cpu_model": ("s", "AMD Ryzen 7 5800X"), "cpu_cores": ("u", 16), "cpu_usage": ("d", 12.5),
        "memory_total": ("t", 32 * GIB), "memory_available": ("t", 24 * GIB),
        "load_average": ("(ddd)", (0.5, 0.25, 0.125)),
        "gpus": ("a(ussttu)", [(0, "NVIDIA GeForce RTX 3060", GPU_UUID, 12 * GIB, 3 * GIB, 40)]),
        "gpu_status": ("s", "available"), "updated": ("t", now_ms - 1500),
        "jobs_running": ("u", 1),
        "runtimes": ("a(ssss)", [("torch", "3.12.3", "2.5.1+cu121", "12.1"),
                                 ("system", "3.12.3", "", "")]),
    }


def online_member(now_ms: int = NOW_MS) -> dict[str, tuple[str, Any]]:
    return {
        "node_id": ("s", ONLINE_ID), "fingerprint": ("s", "zoo zone youth year wrist write"),
        "name": ("s", "pc-02"), "local": ("b", False), "verified": ("b", True),
        "online": ("b", True), "address": ("s", "10.0.0.5:7655"), "last_seen": ("t", now_ms),
        "version": ("s", "0.2.0"), "state": ("s", "paused"),
        "cpu_limit": ("u", 25), "ram_limit": ("t", GIB // 2), "gpu_limit": ("u", 0),
        "cpu_model": ("s", "Intel(R) Core(TM) i5-8500"), "cpu_cores": ("u", 2),
        "cpu_usage": ("d", 87.25), "memory_total": ("t", 8 * GIB),
        "memory_available": ("t", 2 * GIB), "load_average": ("(ddd)", (1.5, 1.0, 0.75)),
        "gpus": ("a(ussttu)", []), "gpu_status": ("s", "unavailable: no NVML on this machine"),
        "updated": ("t", now_ms - 2000),
        "jobs_running": ("u", 3), "runtimes": ("a(ssss)", [("cpu", "3.11.9", "2.5.1+cpu", "")]),
        # Keys a later partagpud may add: the client must skip them, whatever their type.
        "tags": ("as", ["lab-b", "night"]),
        "accelerators": ("a{sv}", {"npu": ("b", True)}),
    }


def offline_member(now_ms: int = NOW_MS) -> dict[str, tuple[str, Any]]:
    # What an older service might say of a member whose state never arrived.
    return {"node_id": ("s", OFFLINE_ID), "name": ("s", "pc-03"), "verified": ("b", True),
            "online": ("b", False), "last_seen": ("t", now_ms - 300_000)}


def fleet_properties(now_ms: int = NOW_MS, joined: bool = True) -> dict[str, dict[str, tuple[str, Any]]]:
    """Fleet1 and Room1 as GetAll would return them (plus Room1 properties not read)."""
    members = [local_member(now_ms), online_member(now_ms), offline_member(now_ms)]
    return {
        FLEET: {
            "Members": ("aa{sv}", members if joined else members[:1]),
            "Unverified": ("a(ss)", [("10.0.0.9:7655", "the room code did not match")]),
            "OtherRooms": ("a(su)", [("salle 13", 4), ("", 1)]),
            "Interfaces": ("a(ss)", [("eth0", "10.0.0.4/24"), ("wlan0", "192.168.1.20/24")]),
        },
        ROOM: {
            "Joined": ("b", joined), "RoomId": ("s", ROOM_ID if joined else ""),
            "Epoch": ("u", 2), "Label": ("s", "salle 12" if joined else ""),
            "NodeId": ("s", LOCAL_ID),
            "Fingerprint": ("s", "abandon ability able about above absent"),
        },
    }
