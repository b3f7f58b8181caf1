"""The driver-actions header Vela puts in front of the NPU command stream (`COP1` / `COP2`).

Layouts (facts of Vela's driver payload and of the NPU CONFIG / ID registers):
- COP1: words `COP1`, optimiser-config tag, CONFIG register value, ID register value, NOP tags
  (0x05) up to a 16-byte boundary, then a CMDSTRM tag `0x02 | len_hi << 8 | len_lo << 16`
  (length in 32-bit words) followed by the command words.
- COP2: `COP2`, u16 major/minor version, u32 length of everything after the 16-byte header; one
  COMMAND_STREAM entry (u32 type 1, u32 length) whose `VEUM` metadata holds the same CONFIG and
  ID values, then 0xFF padding to 16 bytes and the command words.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from pte_adapter.errors import PteFormatError

PART = "EthosUBackend payload, block 'cmd_data'"
PRODUCTS = {0: "Ethos-U55", 1: "Ethos-U65", 2: "Ethos-U85"}
_TAG_OPTCFG = 0x01
_TAG_CMDSTRM = 0x02
_TAG_NOP = 0x05
_COP2_ENTRY_COMMAND_STREAM = 1
_COP2_FEATURES = {1: "network-wide addressing", 2: "local addressing (separate I/O regions)"}


@dataclass(frozen=True)
class NpuConfig:
    """What the header says about the NPU the stream was compiled for."""

    cop_format: str  # "COP1" or "COP2"
    product_code: int  # CONFIG.product: 0 U55, 1 U65, 2 U85
    config_word: int
    id_word: int
    macs_per_cycle: int
    cmd_stream_version: int
    shram_kb: int | None  # U55/U65 only
    optimiser_version: str
    stream_offset: int  # byte offset of the first command word in cmd_data
    stream_words: int
    num_axi_sram: int | None = None  # U85 only
    num_axi_ext: int | None = None
    num_weight_decoders: int | None = None
    staging_bytes: int | None = None  # COP2 only
    features: str = ""  # COP2 only

    @property
    def product(self) -> str:
        return PRODUCTS.get(self.product_code, f"unknown product {self.product_code}")

    @property
    def arch_version(self) -> str:
        """ID register: arch_major (28-31).arch_minor (20-27).arch_patch (16-19)."""
        w = self.id_word
        return f"{w >> 28}.{(w >> 20) & 0xFF}.{(w >> 16) & 0xF}"

    @property
    def accelerator_config(self) -> str:
        """The name Vela's --accelerator-config uses for this product and MAC count."""
        short = {0: "ethos-u55", 1: "ethos-u65", 2: "ethos-u85"}.get(self.product_code, "?")
        return f"{short}-{self.macs_per_cycle}"

    def describe(self) -> str:
        parts = [f"{self.product}, {self.macs_per_cycle} MACs/cycle"]
        if self.shram_kb is not None:
            parts.append(f"SHRAM {self.shram_kb} KB")
        if self.num_weight_decoders is not None:
            parts.append(f"{self.num_weight_decoders} weight decoder(s)")
        parts.append(f"architecture {self.arch_version}")
        parts.append(f"{self.cop_format}, command stream v{self.cmd_stream_version}")
        return ", ".join(parts)


def _config_fields(config: int) -> dict[str, int | None]:
    product = config >> 28
    fields: dict[str, int | None] = {
        "macs_per_cycle": 1 << (config & 0xF),
        "cmd_stream_version": (config >> 4) & 0xF,
        "shram_kb": None,
    }
    if product == 2:
        fields["num_axi_sram"] = 1 << ((config >> 8) & 0x3)
        fields["num_axi_ext"] = 1 << ((config >> 10) & 0x1)
        fields["num_weight_decoders"] = 1 << ((config >> 12) & 0x3)
    else:
        fields["shram_kb"] = (config >> 8) & 0xFF
    return fields


def parse_cop(cmd_data: memoryview) -> tuple[NpuConfig, memoryview]:
    """Read the header; return the config and the command words (a view into cmd_data)."""
    if len(cmd_data) < 16:
        raise PteFormatError(
            f"the command data holds {len(cmd_data)} bytes, too few for a COP header",
            part=PART,
            offset=0,
        )
    magic = bytes(cmd_data[:4])
    if magic == b"COP1":
        return _parse_cop1(cmd_data)
    if magic == b"COP2":
        return _parse_cop2(cmd_data)
    raise PteFormatError(f"expected 'COP1' or 'COP2', found {magic!r}", part=PART, offset=0)


def _parse_cop1(data: memoryview) -> tuple[NpuConfig, memoryview]:
    optcfg, config, id_word = struct.unpack_from("<3I", data, 4)
    if optcfg & 0xFF != _TAG_OPTCFG:
        raise PteFormatError(
            f"expected an optimiser-config tag (0x01) in word 1, found 0x{optcfg:08x}",
            part=PART,
            offset=4,
        )
    pos = 16
    n = len(data)
    while True:
        if n - pos < 4:
            raise PteFormatError(
                "the COP1 header ends before its CMDSTRM tag", part=PART, offset=pos
            )
        tag = int.from_bytes(data[pos : pos + 4], "little")
        kind = tag & 0xFF
        if kind == _TAG_NOP:
            pos += 4
            continue
        if kind != _TAG_CMDSTRM:
            raise PteFormatError(
                f"unexpected tag 0x{tag:08x} in the COP1 header (expected NOP 0x05 or CMDSTRM 0x02)",
                part=PART,
                offset=pos,
            )
        words = ((tag >> 8) & 0xFF) << 16 | (tag >> 16)
        pos += 4
        break
    if words * 4 > n - pos:
        raise PteFormatError(
            f"the command stream claims {words} words ({words * 4} bytes) but only {n - pos} "
            "bytes follow",
            part=PART,
            offset=pos - 4,
        )
    release = (optcfg >> 16) & 0xF
    patch = (optcfg >> 20) & 0xFFF
    cfg = _config_fields(config)
    return (
        NpuConfig(
            cop_format="COP1",
            product_code=config >> 28,
            config_word=config,
            id_word=id_word,
            optimiser_version=f"{release}.{patch}",
            stream_offset=pos,
            stream_words=words,
            **cfg,  # type: ignore[arg-type]
        ),
        data[pos : pos + words * 4],
    )


def _parse_cop2(data: memoryview) -> tuple[NpuConfig, memoryview]:
    n = len(data)
    major, minor, total = struct.unpack_from("<HHI", data, 4)
    if total > n - 16:
        raise PteFormatError(
            f"the COP2 header claims {total} bytes of actions, only {n - 16} follow",
            part=PART,
            offset=8,
        )
    if n < 64:
        raise PteFormatError("the COP2 command-stream entry is truncated", part=PART, offset=16)
    entry_type, entry_len = struct.unpack_from("<II", data, 16)
    if entry_type != _COP2_ENTRY_COMMAND_STREAM:
        raise PteFormatError(
            f"expected a command-stream entry (type 1), found type {entry_type}",
            part=PART,
            offset=16,
        )
    meta_magic = bytes(data[28:32])
    if meta_magic != b"VEUM":
        raise PteFormatError(
            f"expected 'VEUM' metadata, found {meta_magic!r}", part=PART, offset=28
        )
    meta_data_len = int.from_bytes(data[36:40], "little")
    if meta_data_len < 20 or 40 + meta_data_len > n:
        raise PteFormatError(
            f"VEUM metadata length {meta_data_len} does not fit", part=PART, offset=36
        )
    config, id_word, features, staging = struct.unpack_from("<IIIQ", data, 40)
    meta_end = 40 + meta_data_len
    pos = (meta_end + 15) // 16 * 16
    stream_bytes = entry_len - (pos - 24)
    if entry_len > n - 24 or stream_bytes < 0 or stream_bytes % 4 or stream_bytes > n - pos:
        raise PteFormatError(
            f"the command-stream entry length {entry_len} runs past the end of the data "
            f"({n - 24} bytes follow its header)",
            part=PART,
            offset=20,
        )
    cfg = _config_fields(config)
    return (
        NpuConfig(
            cop_format="COP2",
            product_code=config >> 28,
            config_word=config,
            id_word=id_word,
            optimiser_version=f"COP2 {major}.{minor}",
            stream_offset=pos,
            stream_words=stream_bytes // 4,
            staging_bytes=staging,
            features=_COP2_FEATURES.get(features, f"features 0x{features:x}"),
            **cfg,  # type: ignore[arg-type]
        ),
        data[pos : pos + stream_bytes],
    )
