"""Cluster Index Vector (CIV), OctopiA §8.

A row of bits, one per cluster, indexed from the right (bit 0 is the rightmost). Three contexts share the type:

* CIV_a^i — at the publisher's host broker in cluster C_i: bit i marks the host cluster, bit j a target
  secondary cluster (TSC) C_j that holds a subscription overlapping the advertisement;
* CIV_s^j — at the secondary broker in cluster C_j: bit i names the advertisement's host cluster and bit j
  says whether C_j holds an overlapping subscription (only these two bits are meaningful);
* CIV_p^i — in the header of a dynamically routed publication (CIV_p^i-D, §9.2): the TSCs this copy is still
  responsible for; bit i (the origin) is always 0.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Civ:
    bits: int = 0

    @classmethod
    def of(cls, indexes: Iterable[int]) -> Civ:
        bits = 0
        for i in indexes:
            if i < 0:
                raise ValueError(f"cluster index {i} < 0")
            bits |= 1 << i
        return cls(bits)

    def __getitem__(self, index: int) -> bool:
        return bool(self.bits >> index & 1)

    def set(self, index: int) -> Civ:
        return Civ(self.bits | 1 << index)

    def unset(self, index: int) -> Civ:
        return Civ(self.bits & ~(1 << index))

    def __and__(self, other: Civ) -> Civ:
        return Civ(self.bits & other.bits)

    def __or__(self, other: Civ) -> Civ:
        return Civ(self.bits | other.bits)

    def __bool__(self) -> bool:
        return self.bits != 0

    def __iter__(self) -> Iterator[int]:
        """The set indexes, ascending."""
        bits, i = self.bits, 0
        while bits:
            if bits & 1:
                yield i
            bits >>= 1
            i += 1

    def __len__(self) -> int:
        return self.bits.bit_count()

    def render(self, width: int) -> str:
        """As in the paper's figures: ``Civ.of([0, 2]).render(3) == '101'``."""
        return format(self.bits, f"0{width}b")


__all__ = ["Civ"]
