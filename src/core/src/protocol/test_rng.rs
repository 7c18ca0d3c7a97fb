// SPDX-License-Identifier: GPL-3.0-or-later
//! A deterministic "RNG" for tests: the same byte forever. Never use it outside tests.

use rand_core::{CryptoRng, RngCore};

/// Outputs its byte repeated.
pub(crate) struct FixedRng(pub(crate) u8);

impl RngCore for FixedRng {
    fn next_u32(&mut self) -> u32 {
        u32::from_ne_bytes([self.0; 4])
    }

    fn next_u64(&mut self) -> u64 {
        u64::from_ne_bytes([self.0; 8])
    }

    fn fill_bytes(&mut self, dest: &mut [u8]) {
        dest.fill(self.0);
    }

    fn try_fill_bytes(&mut self, dest: &mut [u8]) -> Result<(), rand_core::Error> {
        self.fill_bytes(dest);
        Ok(())
    }
}

impl CryptoRng for FixedRng {}
