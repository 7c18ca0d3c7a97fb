# SPDX-License-Identifier: GPL-3.0-or-later
"""PartaGPU, the Python side: pooling lab machines for PyTorch training.

For now this package holds :mod:`partagpu.pgr`, an implementation of PGR/1, the encrypted
peer protocol specified in ``docs/protocol.md``, independent of the Rust one in ``src/core``
and checked against the same known-answer vectors.
"""

__version__ = "0.1.0"
