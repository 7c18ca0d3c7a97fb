# SPDX-License-Identifier: GPL-3.0-or-later
"""The exceptions of the ``partagpu`` package outside PGR/1 (which has its own, in
:mod:`partagpu.pgr.errors`).

Every message is one sentence meant for a person: the command line prints it as it is.
"""

from __future__ import annotations


class PartaGPUError(Exception):
    """Base of the errors raised by :func:`partagpu.discover` and the command line."""


class ServiceUnavailableError(PartaGPUError):
    """The local service cannot be asked: no system bus, or partagpud is not running on it,
    or it did not answer in time. Trying again later (or starting partagpud) may help."""


class ServiceError(PartaGPUError):
    """partagpud answered, but not what this package understands: it refused the request,
    lacks the interface (an older version), or sent a value of another D-Bus type."""
