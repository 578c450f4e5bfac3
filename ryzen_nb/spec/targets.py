"""Ryzen AI NPU targets: one record each, every figure with where it comes from.

The figures are explained, with their sources and status (published, derived, assumption), in
``docs/npu-hardware.md``; the comment beside each names the section. Where AMD publishes nothing,
the value is an assumption of the register in ``docs/npu-assumptions.md`` ("A<n>") and a field a
user can change: ``TARGETS["STX"].with_options(clock_ghz=1.8)``.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from ryzen_nb.errors import UnknownNameError

__all__ = ["DEFAULT_TARGET", "Target", "TARGETS", "get_target", "target_names"]

#: the target used when none is named: Strix Point, the generation that runs every precision
DEFAULT_TARGET = "STX"


@dataclass(frozen=True)
class Target:
    name: str  #: short name: PHX, HPT, STX, KRK, STXH
    label: str
    generation: str  #: "XDNA" (AIE-ML) or "XDNA2" (AIE-ML v2 / AIE2P)
    #: usable compute columns: PHX/HPT 4 of 5 (column 0 has no DMA), XDNA2 all 8
    #: (docs/npu-hardware.md#generations-and-arrays)
    columns: int
    rows: int = 4  #: compute rows per column (docs/npu-hardware.md#generations-and-arrays)
    #: NPU clock: the DPM level that reproduces the marketing TOPS (A1, docs/npu-hardware.md#clocks-and-peak-rates)
    clock_ghz: float = 1.0
    #: MACs per cycle per compute tile by data type (docs/npu-hardware.md#mac-rates-per-tile; A4 for int16 x int8)
    macs_per_cycle: dict[str, int] = field(default_factory=dict)
    l1_kib: int = 64  #: data memory per compute tile (docs/npu-hardware.md#memories)
    l2_kib: int = 512  #: per memory tile, one memory tile per column (docs/npu-hardware.md#memories)
    #: sustained DDR bandwidth per direction: not published (A5, docs/npu-hardware.md#ddr-bandwidth)
    ddr_gbps: float = 25.0
    #: host -> NPU command round trip, xrt-smi's latency test (A6, docs/npu-hardware.md#dispatch-and-contexts)
    dispatch_us: float = 84.2
    hw_contexts: int = 6  #: concurrent hardware contexts (docs/npu-hardware.md#generations-and-arrays)
    marketing_tops: float = 10.0  #: AMD's INT8 TOPS (docs/npu-hardware.md#generations-and-arrays)
    #: precisions the NPU runs: the model-compatibility table (docs/npu-compilers.md#compilers). The one
    #: record of which target runs which precision: ryzen_nb.spec.precisions derives its lists from it.
    precisions: tuple[str, ...] = ("XINT8",)
    #: compiler per precision: X1 legacy DPU flow, X2 (Ryzen AI >= 1.6 INT8), VAIML (BF16)
    #: (docs/npu-compilers.md#compilers)
    compilers: dict[str, str] = field(default_factory=dict)
    #: compute tiles a compiled model uses, per compiler (A2: the X1 4x4 overlay uses 16 tiles; X2/VAIML all)
    tiles_by_compiler: dict[str, int] = field(default_factory=dict)
    pci_id: str = ""  #: how the driver and the Ryzen AI installer tell the parts apart

    @property
    def tiles(self) -> int:
        return self.columns * self.rows

    def tiles_for(self, precision: str) -> int:
        return self.tiles_by_compiler.get(self.compilers.get(precision, ""), self.tiles)

    def peak_tops(self, dtype: str = "int8") -> float:
        """Peak tera-ops/s (2 ops per MAC) for a data type on all usable tiles."""
        return 2 * self.macs_per_cycle.get(dtype, 0) * self.tiles * self.clock_ghz / 1000

    def with_options(self, **changes: Any) -> Target:
        """A copy with some fields changed (the assumptions are the fields to change)."""
        names = {f.name for f in dataclasses.fields(self)}
        for key in changes:
            if key not in names:
                raise UnknownNameError("target field", key, sorted(names))
        return dataclasses.replace(self, **changes)

    def describe(self) -> dict[str, Any]:
        return {
            "target": self.name, "device": self.label, "generation": self.generation,
            "compute tiles": self.tiles, "clock (GHz)": self.clock_ghz,
            "peak INT8 TOPS": round(self.peak_tops("int8"), 1), "peak BF16 TFLOPS": round(self.peak_tops("bf16"), 1),
            "L2 (KiB)": self.l2_kib * (self.columns + (1 if self.generation == "XDNA" else 0)),
            "DDR GB/s (A5)": self.ddr_gbps, "precisions": ", ".join(self.precisions),
        }

    def as_dict(self) -> dict[str, Any]:
        """Every field as JSON-able data (for :func:`ryzen_nb.spec.facts`), with the tile count."""
        out = dataclasses.asdict(self)
        out["precisions"] = list(self.precisions)
        out["tiles"] = self.tiles
        return out


# docs/npu-hardware.md#mac-rates-per-tile: AIE-ML (XDNA) and AIE-ML v2 (XDNA2); int16 x int8 is A4
_XDNA_MACS = {"int8": 256, "int16x8": 128, "int16": 64, "int4": 512, "bf16": 128}
_XDNA2_MACS = {"int8": 512, "int16x8": 256, "int16": 128, "bf16": 256, "bfp16": 512}

# docs/npu-compilers.md#compilers: XDNA2 runs every precision through X2 (INT8) and VAIML (BF16, BFP16)
_XDNA2_PRECISIONS = ("XINT8", "A8W8", "A16W8", "BF16", "BFP16")
_XDNA2_COMPILERS = {"XINT8": "X2", "A8W8": "X2", "A16W8": "X2", "BF16": "VAIML", "BFP16": "VAIML"}
_XDNA2_TILES = {"X1": 16, "X2": 32, "VAIML": 32}  # A2

TARGETS: dict[str, Target] = {
    t.name: t
    for t in (
        Target(
            # A1: 1.024 GHz, the DPM level at which 4 columns x 2048 ops give the 8.4 usable TOPS
            "PHX", "Phoenix (Ryzen 7040)", "XDNA", columns=4, clock_ghz=1.024,
            macs_per_cycle=_XDNA_MACS, ddr_gbps=25.0, hw_contexts=6, marketing_tops=10,
            # INT8 on Phoenix/Hawk Point only through X1 and the 4x4 xclbin; no BF16
            precisions=("XINT8",), compilers={"XINT8": "X1"}, tiles_by_compiler={"X1": 16}, pci_id="0x1502 rev 0",
        ),
        Target(
            "HPT", "Hawk Point (Ryzen 8040)", "XDNA", columns=4, clock_ghz=1.6,  # A1: 16 TOPS at 1.6 GHz
            macs_per_cycle=_XDNA_MACS, ddr_gbps=25.0, hw_contexts=6, marketing_tops=16,
            precisions=("XINT8",), compilers={"XINT8": "X1"}, tiles_by_compiler={"X1": 16}, pci_id="0x1502 rev 0",
        ),
        Target(
            "STX", "Strix Point (Ryzen AI 300)", "XDNA2", columns=8, clock_ghz=1.584,  # A1: 8x4096x1.584 = 51.9 TOPS
            macs_per_cycle=_XDNA2_MACS, ddr_gbps=33.0, hw_contexts=16, marketing_tops=50,  # A5: 33 GB/s
            precisions=_XDNA2_PRECISIONS, compilers=_XDNA2_COMPILERS, tiles_by_compiler=_XDNA2_TILES,
            pci_id="0x17F0 rev 0x00/0x10/0x11",
        ),
        Target(
            "KRK", "Krackan Point (e.g. Ryzen AI 7 350)", "XDNA2", columns=8, clock_ghz=1.584,  # A3: all 8 columns
            macs_per_cycle=_XDNA2_MACS, ddr_gbps=33.0, hw_contexts=16, marketing_tops=50,
            precisions=_XDNA2_PRECISIONS, compilers=_XDNA2_COMPILERS, tiles_by_compiler=_XDNA2_TILES,
            pci_id="0x17F0 rev 0x20",
        ),
        Target(
            # Strix's array and clock (mlir-aie's npu2 covers it; its clock is not published: A1)
            "STXH", "Strix Halo (Ryzen AI Max)", "XDNA2", columns=8, clock_ghz=1.584,
            macs_per_cycle=_XDNA2_MACS, ddr_gbps=33.0, hw_contexts=16, marketing_tops=50,
            precisions=_XDNA2_PRECISIONS, compilers=_XDNA2_COMPILERS, tiles_by_compiler=_XDNA2_TILES,
            pci_id="npu5",
        ),
    )
}
_ALIASES = {"PHOENIX": "PHX", "HAWKPOINT": "HPT", "HAWK_POINT": "HPT", "STRIX": "STX", "KRACKAN": "KRK",
            "STX-HALO": "STXH", "STX_HALO": "STXH", "STRIXHALO": "STXH", "STRIX_HALO": "STXH"}


def target_names() -> list[str]:
    return list(TARGETS)


def get_target(name: str | Target) -> Target:
    if isinstance(name, Target):
        return name
    key = str(name).strip().upper().replace(" ", "")
    key = _ALIASES.get(key, key)
    if key not in TARGETS:
        raise UnknownNameError("NPU target", name, TARGETS, hint="PHX/HPT are XDNA (Ryzen 7040/8040); STX/KRK/STXH XDNA2.")
    return TARGETS[key]
