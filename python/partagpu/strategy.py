# SPDX-License-Identifier: GPL-3.0-or-later
"""How the machines of a training exchange gradients: a compression and an accumulation.

Shared by the planner (which predicts each strategy) and :mod:`partagpu.ddp` (which applies
the chosen one inside the job). A strategy travels to the ranks as the text of
:meth:`Strategy.to_text`, e.g. ``fp16+accumulate8`` in ``$PARTAGPU_DDP_STRATEGY``.
"""

from __future__ import annotations

from dataclasses import dataclass

COMPRESSIONS = ("none", "fp16", "bf16", "powersgd")
# The order in which docs/performance.md suggests them when the efficiency is low: a halved
# message costs no accuracy; accumulation changes the global batch; PowerSGD approximates.
_COMPRESSION_RISK = {"none": 0, "fp16": 1, "bf16": 1, "powersgd": 3}
ENV_VAR = "PARTAGPU_DDP_STRATEGY"


class StrategyError(ValueError):
    """A strategy text or value that does not describe a strategy."""


@dataclass(frozen=True)
class Strategy:
    compression: str = "none"
    accumulation: int = 1  # micro-steps per optimizer step (DDP's no_sync on the others)
    rank: int = 0  # PowerSGD's matrix rank

    def __post_init__(self):
        if self.compression not in COMPRESSIONS:
            raise StrategyError(f"unknown gradient compression {self.compression!r}, expected one of {COMPRESSIONS}")
        if not 1 <= self.accumulation <= 1024:
            raise StrategyError(f"accumulation must be 1 to 1024 micro-steps, not {self.accumulation}")
        if (self.compression == "powersgd") != (self.rank > 0):
            raise StrategyError("a PowerSGD strategy needs a rank of at least 1, and only PowerSGD has one")

    @property
    def allreduces_per_bucket(self) -> int:
        # PowerSGD reduces P, then Q, then the uncompressed vectors: three messages a bucket.
        return 3 if self.compression == "powersgd" else 1

    def invasiveness(self) -> tuple[int, int]:
        """Sort key: how much the strategy changes the training besides its speed."""
        return (_COMPRESSION_RISK[self.compression] + (2 if self.accumulation > 1 else 0), self.accumulation)

    def describe(self) -> str:
        """Words for the user: 'fp16 gradients and 8-step accumulation'."""
        parts = []
        if self.compression in ("fp16", "bf16"):
            parts.append(f"{self.compression} gradients")
        elif self.compression == "powersgd":
            parts.append(f"PowerSGD rank {self.rank}")
        if self.accumulation > 1:
            parts.append(f"{self.accumulation}-step accumulation")
        return " and ".join(parts) or "plain fp32 gradients"

    def to_text(self) -> str:
        head = f"powersgd{self.rank}" if self.compression == "powersgd" else self.compression
        return head if self.accumulation == 1 else f"{head}+accumulate{self.accumulation}"

    @classmethod
    def from_text(cls, text: str) -> Strategy:
        """The inverse of :meth:`to_text`; a clear error for anything else."""
        head, _, tail = text.strip().partition("+")
        accumulation = 1
        if tail:
            if not tail.startswith("accumulate") or not tail[len("accumulate") :].isdigit():
                raise StrategyError(f"cannot read strategy {text!r}: expected e.g. 'fp16+accumulate8'")
            accumulation = int(tail[len("accumulate") :])
        if head.startswith("powersgd") and head[len("powersgd") :].isdigit():
            return cls("powersgd", accumulation, int(head[len("powersgd") :]))
        if head not in ("none", "fp16", "bf16"):
            raise StrategyError(f"cannot read strategy {text!r}: unknown compression {head!r}")
        return cls(head, accumulation)


def candidate_strategies(max_accumulation: int = 16, *, lossy: bool = False) -> list[Strategy]:
    """What the planner weighs by default: fp32 or fp16 gradients, accumulation 1, 2, 4, …
    up to ``max_accumulation``. bf16 moves the same bytes as fp16 (the planner cannot tell
    them apart) and PowerSGD changes the result, so both only on request (``lossy``)."""
    steps = [k for k in (1, 2, 4, 8, 16, 32, 64) if k <= max_accumulation]
    compressions = ["none", "fp16"]
    out = [Strategy(c, k) for c in compressions for k in steps]
    if lossy:
        out += [Strategy("powersgd", k, rank) for rank in (1, 4) for k in steps]
    return out
