// SPDX-License-Identifier: GPL-3.0-or-later
//! Bytes on the TCP connection: exact reads under deadlines before authentication (PGR/1
//! §8.1), then whole records (§6.1) through an established [`Session`].

use std::io;
use std::net::SocketAddr;
use std::time::Duration;

use partagpu_core::protocol::keys::HASH_LEN;
use partagpu_core::protocol::record::{ciphertext_len, HEADER_LEN};
use partagpu_core::protocol::{
    NodeAuth, NodeAuthError, NodeIdentity, Opener, Record, RecordError, RecordType, Role, Sealer, Session,
    VerifiedNode,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::TcpStream;
use tokio::time::{timeout_at, Instant};

/// Why reading or writing stopped.
#[derive(Debug, thiserror::Error)]
pub enum WireError {
    /// The peer closed the connection (or reset it).
    #[error("the connection was closed")]
    Closed,
    /// A deadline passed.
    #[error("the peer was too slow")]
    Deadline,
    /// Another socket error.
    #[error("network error: {0}")]
    Io(io::Error),
    /// A record was refused (§6.5).
    #[error(transparent)]
    Record(#[from] RecordError),
}

impl From<io::Error> for WireError {
    fn from(error: io::Error) -> Self {
        match error.kind() {
            io::ErrorKind::UnexpectedEof
            | io::ErrorKind::ConnectionReset
            | io::ErrorKind::ConnectionAborted
            | io::ErrorKind::BrokenPipe => Self::Closed,
            _ => Self::Io(error),
        }
    }
}

/// Reads exactly `N` bytes before `deadline`.
///
/// # Errors
/// [`WireError::Deadline`], [`WireError::Closed`] or another I/O error.
pub async fn read_exact_before<const N: usize>(
    stream: &mut TcpStream,
    deadline: Instant,
) -> Result<[u8; N], WireError> {
    let mut buf = [0u8; N];
    fill_before(stream, &mut buf, deadline).await?;
    Ok(buf)
}

/// Fills `buf` from `stream` before `deadline` (either half of a TCP stream).
async fn fill_before(
    stream: &mut (impl AsyncReadExt + Unpin),
    buf: &mut [u8],
    deadline: Instant,
) -> Result<(), WireError> {
    match timeout_at(deadline, stream.read_exact(buf)).await {
        Err(_) => Err(WireError::Deadline),
        Ok(result) => result.map(|_| ()).map_err(WireError::from),
    }
}

/// Writes all of `bytes` before `deadline`.
///
/// # Errors
/// As [`read_exact_before`].
pub async fn write_before(
    stream: &mut (impl AsyncWriteExt + Unpin),
    bytes: &[u8],
    deadline: Instant,
) -> Result<(), WireError> {
    match timeout_at(deadline, stream.write_all(bytes)).await {
        Err(_) => Err(WireError::Deadline),
        Ok(result) => result.map_err(WireError::from),
    }
}

/// How long a write of one record may block on a peer that stopped reading.
const WRITE_TIMEOUT: Duration = Duration::from_secs(30);

/// The receiving half: reads whole records and opens them.
pub struct Reader {
    stream: OwnedReadHalf,
    opener: Opener,
}

/// The sending half: seals records and writes them.
pub struct Writer {
    stream: OwnedWriteHalf,
    sealer: Sealer,
    closed: bool,
}

/// An authenticated connection, split so that a reader task and a writer can run at once
/// (reads are not cancel-safe: a half-read record must never be abandoned by a `select!`).
pub struct Channel {
    /// Receiving half.
    pub reader: Reader,
    /// Sending half.
    pub writer: Writer,
    /// This end's role.
    pub role: Role,
    /// TH, for node authentication (§5.2).
    pub transcript_hash: [u8; HASH_LEN],
    /// The epoch the session was made under.
    pub epoch: u32,
    /// The peer's address.
    pub peer: SocketAddr,
}

impl Channel {
    /// Wraps an established session.
    #[must_use]
    pub fn new(stream: TcpStream, session: Session, peer: SocketAddr) -> Self {
        let role = session.role();
        let transcript_hash = *session.transcript_hash();
        let epoch = session.epoch();
        let (sealer, opener) = session.into_parts();
        let (read, write) = stream.into_split();
        Self {
            reader: Reader { stream: read, opener },
            writer: Writer {
                stream: write,
                sealer,
                closed: false,
            },
            role,
            transcript_hash,
            epoch,
            peer,
        }
    }

    /// Seals this end's NODE_AUTH record (§5.1) without sending it.
    ///
    /// # Errors
    /// [`RecordError`] (cannot happen for the first record).
    pub fn seal_node_auth(&mut self, identity: &NodeIdentity) -> Result<Vec<u8>, RecordError> {
        let auth = identity.sign(self.role, &self.transcript_hash);
        self.writer.sealer.seal(RecordType::NodeAuth, &auth.encode())
    }

    /// Checks the peer's NODE_AUTH record against TH and the peer's role (§5.3).
    ///
    /// # Errors
    /// [`NodeAuthError`].
    pub fn verify_node_auth(&self, record: &Record) -> Result<VerifiedNode, NodeAuthError> {
        if record.record_type != RecordType::NodeAuth {
            return Err(NodeAuthError::NotNodeAuth);
        }
        NodeAuth::parse(&record.body)?.verify(self.role.peer(), &self.transcript_hash)
    }
}

impl Reader {
    /// Receives one whole record before `deadline` and opens it.
    ///
    /// # Errors
    /// [`WireError`]; on a record error the caller closes without sending (§6.5).
    pub async fn recv_before(&mut self, deadline: Instant) -> Result<Record, WireError> {
        let mut header = [0u8; HEADER_LEN];
        fill_before(&mut self.stream, &mut header, deadline).await?;
        let len = ciphertext_len(header)?;
        let mut record = vec![0u8; HEADER_LEN + len];
        record[..HEADER_LEN].copy_from_slice(&header);
        fill_before(&mut self.stream, &mut record[HEADER_LEN..], deadline).await?;
        Ok(self.opener.open(&record)?)
    }
}

impl Writer {
    /// Seals and sends one record.
    ///
    /// # Errors
    /// [`WireError`]; after CLOSE nothing more is sent (§7.3).
    pub async fn send(&mut self, record_type: RecordType, body: &[u8]) -> Result<(), WireError> {
        if self.closed {
            return Err(WireError::Closed);
        }
        let record = self.sealer.seal(record_type, body)?;
        self.send_raw(&record).await
    }

    /// Sends bytes already sealed (the client's NODE_AUTH goes with CF in one write).
    ///
    /// # Errors
    /// [`WireError`].
    pub async fn send_raw(&mut self, bytes: &[u8]) -> Result<(), WireError> {
        write_before(&mut self.stream, bytes, Instant::now() + WRITE_TIMEOUT).await
    }

    /// Sends a KEY_UPDATE and switches this direction's key (§6.6).
    ///
    /// # Errors
    /// [`WireError`].
    pub async fn key_update(&mut self) -> Result<(), WireError> {
        let record = self.sealer.seal_key_update()?;
        self.send_raw(&record).await
    }

    /// Whether the sending key has done its share (§6.6 counters).
    #[must_use]
    pub fn needs_key_update(&self) -> bool {
        self.sealer.needs_key_update()
    }

    /// Sends CLOSE with `reason` (best effort) and shuts the sending side.
    pub async fn close(&mut self, reason: &str) {
        if self.closed {
            return;
        }
        let reason = truncate_utf8(reason, 256);
        if let Ok(record) = self.sealer.seal(RecordType::Close, reason.as_bytes()) {
            let _ = self.send_raw(&record).await;
        }
        self.closed = true;
        let _ = self.stream.shutdown().await;
    }
}

fn truncate_utf8(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

#[cfg(test)]
mod tests {
    use super::truncate_utf8;

    #[test]
    fn close_reasons_are_cut_on_a_character_boundary() {
        let reason = "é".repeat(200);
        let cut = truncate_utf8(&reason, 256);
        assert_eq!(cut.len(), 256);
        assert_eq!(truncate_utf8(&"é".repeat(200)[..], 255).len(), 254);
        assert_eq!(truncate_utf8("short", 256), "short");
    }
}
