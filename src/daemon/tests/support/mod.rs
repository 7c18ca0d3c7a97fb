// SPDX-License-Identifier: GPL-3.0-or-later
//! Machines for peer-port tests: each has its own state directory, room, journal and peer
//! context, and a real TCP listener on 127.0.0.1.
#![allow(dead_code)] // Each test binary uses its own part.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use partagpu_core::fleet::NodeState;
use partagpu_core::protocol::hello::SERVER_FLIGHT_LEN;
use partagpu_core::protocol::record::{ciphertext_len, HEADER_LEN};
use partagpu_core::protocol::{ClientHandshake, NodeIdentity, Record, Session};
use partagpu_core::room::{Language, RoomCode};
use partagpu_core::{CpuInfo, GpuProbeStatus, LoadAverage, MemoryInfo, SharingState};
use partagpu_daemon::fleet::Fleet;
use partagpu_daemon::journal::SecurityJournal;
use partagpu_daemon::membership::Membership;
use partagpu_daemon::peer::events::Reporter;
use partagpu_daemon::peer::slots::SlotLimits;
use partagpu_daemon::peer::throttle::Limits;
use partagpu_daemon::peer::{server, PeerContext, Timing};
use partagpu_daemon::room::{fresh_room, ActiveRoom, RoomState};
use rand_core::OsRng;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// Short deadlines so slow-loris tests finish quickly, and a watched member's silence
/// shows in a second.
pub fn test_timing() -> Timing {
    Timing {
        client_hello: Duration::from_millis(400),
        handshake: Duration::from_secs(3),
        watched_ping_after: Duration::from_millis(200),
        watched_dead_after: Duration::from_secs(1),
        ..Timing::default()
    }
}

/// A small machine's state named `name`.
pub fn node_state(name: &str) -> NodeState {
    NodeState {
        name: name.into(),
        version: "0.1.0".into(),
        sharing: SharingState::Sharing,
        limits: partagpu_core::Limits::default_for(4 << 30),
        cpu: CpuInfo {
            model: "Test CPU".into(),
            cores: 2,
            usage_percent: 3.0,
        },
        memory: MemoryInfo {
            total_bytes: 4 << 30,
            available_bytes: 3 << 30,
        },
        load: LoadAverage::default(),
        gpus: Vec::new(),
        gpu_probe: GpuProbeStatus::Unavailable("no NVML in tests".into()),
        jobs_running: 0,
        runtimes: Vec::new(),
    }
}

/// One machine.
pub struct Machine {
    pub dir: tempfile::TempDir,
    pub room: Arc<RoomState>,
    pub journal: Arc<Mutex<SecurityJournal>>,
    pub context: Arc<PeerContext>,
}

impl Machine {
    pub fn new() -> Self {
        Self::with_limits(SlotLimits::default())
    }

    pub fn with_limits(slots: SlotLimits) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let room = Arc::new(RoomState::open(dir.path(), None).unwrap());
        let journal = Arc::new(Mutex::new(SecurityJournal::open(dir.path(), 1000).unwrap()));
        let reporter = Arc::new(Reporter::new(Arc::clone(&journal)));
        let fleet = Arc::new(Fleet::new(room.info().node_id, 0, node_state("pc")));
        let context = Arc::new(PeerContext::with_limits(
            Arc::clone(&room),
            reporter,
            fleet,
            test_timing(),
            Limits::default(),
            slots,
        ));
        Self {
            dir,
            room,
            journal,
            context,
        }
    }

    /// Creates a room here and returns its code.
    pub fn create_room(&self) -> RoomCode {
        let (room, code) = fresh_room("Salle B12".into(), Language::English);
        self.room.install(room).unwrap();
        code
    }

    /// Its room operations (no mDNS).
    pub fn membership(&self) -> Membership {
        Membership {
            room: Arc::clone(&self.room),
            peer: Arc::clone(&self.context),
            discovery: None,
        }
    }

    /// Starts the listener.
    pub async fn listen(&self) -> SocketAddr {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(server::serve(listener, Arc::clone(&self.context)));
        addr
    }

    /// Journal kinds so far, in order.
    pub fn kinds(&self) -> Vec<String> {
        self.journal
            .lock()
            .unwrap()
            .list(0, 0)
            .into_iter()
            .map(|e| e.kind)
            .collect()
    }

    /// Waits up to 5 s for an event of `kind` (the server writes it after the client sees
    /// the connection end).
    pub async fn wait_for(&self, kind: &str) -> bool {
        for _ in 0..100 {
            if self.kinds().iter().any(|k| k == kind) {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        false
    }
}

/// The joiner's view of a room: same id and epoch, code as given.
pub fn room_with_code(of: &Machine, code: RoomCode) -> ActiveRoom {
    let room = of.room.current().unwrap();
    ActiveRoom::derive(room.room_id, room.epoch, String::new(), code)
}

/// A code other than `code` (first word changed).
pub fn wrong_code(code: &RoomCode) -> RoomCode {
    let words = code.expose_words();
    let replacement = if words[0] == "zoo" { "abandon" } else { "zoo" };
    RoomCode::parse(&format!("{replacement} {} {} {}", words[1], words[2], words[3])).unwrap()
}

/// A hand-driven client: the handshake done with the core API, records sent raw, so tests
/// can replay, tamper, reorder and reflect them.
pub struct RawClient {
    pub stream: TcpStream,
    pub session: Session,
    /// The server's NODE_AUTH record as received (server→client direction).
    pub server_node_auth: Vec<u8>,
}

pub async fn read_record(stream: &mut TcpStream) -> std::io::Result<Vec<u8>> {
    let mut header = [0u8; HEADER_LEN];
    stream.read_exact(&mut header).await?;
    let len = ciphertext_len(header).map_err(|e| std::io::Error::other(e.to_string()))?;
    let mut record = header.to_vec();
    record.resize(HEADER_LEN + len, 0);
    stream.read_exact(&mut record[HEADER_LEN..]).await?;
    Ok(record)
}

impl RawClient {
    pub async fn connect(addr: SocketAddr, room: &ActiveRoom) -> Self {
        let mut stream = TcpStream::connect(addr).await.unwrap();
        let (handshake, hello) =
            ClientHandshake::start(room.room_id, room.epoch, room.password(), &mut OsRng);
        stream.write_all(&hello).await.unwrap();
        let mut flight = [0u8; SERVER_FLIGHT_LEN];
        stream.read_exact(&mut flight).await.unwrap();
        let (mut session, cf) = handshake.on_server_flight(&flight).unwrap();
        let identity = NodeIdentity::generate(&mut OsRng);
        let mut first = cf.to_vec();
        first.extend(session.seal_node_auth(&identity).unwrap());
        stream.write_all(&first).await.unwrap();
        let server_node_auth = read_record(&mut stream).await.unwrap();
        let opened = session.open(&server_node_auth).unwrap();
        session.verify_node_auth(&opened).unwrap();
        Self {
            stream,
            session,
            server_node_auth,
        }
    }

    pub async fn send_raw(&mut self, bytes: &[u8]) {
        // The server may already have closed: that is what some tests expect.
        let _ = self.stream.write_all(bytes).await;
    }

    /// Receives and opens one record; `None` when the server closed.
    pub async fn recv(&mut self) -> Option<Record> {
        let read = tokio::time::timeout(Duration::from_secs(5), read_record(&mut self.stream)).await;
        let record = read.ok()?.ok()?;
        Some(self.session.open(&record).unwrap())
    }
}

/// Reads until EOF: true when the peer closed without sending anything (within 5 s).
pub async fn closed_without_a_byte(stream: &mut TcpStream) -> bool {
    let mut byte = [0u8; 1];
    matches!(
        tokio::time::timeout(Duration::from_secs(5), stream.read(&mut byte)).await,
        Ok(Ok(0) | Err(_))
    )
}
