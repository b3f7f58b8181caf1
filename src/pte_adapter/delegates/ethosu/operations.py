"""What a decoded Ethos-U command stream is made of: commands, NPU operations, their feature maps,
weight streams and DMA transfers (plain dataclasses; `commands.py` decodes them)."""

from __future__ import annotations

from dataclasses import dataclass, field

from pte_adapter.delegates.ethosu.binstream import region_name

# Operations that compute a feature map (the rest move data, wait or stop).
COMPUTE_OPS = frozenset(
    {"NPU_OP_CONV", "NPU_OP_DEPTHWISE", "NPU_OP_POOL", "NPU_OP_ELEMENTWISE", "NPU_OP_RESIZE"}
)
_PRECISION_BITS = {0: 8, 1: 16, 2: 32, 3: 64}
_FORMATS = {0: "NHWC", 1: "NHCWB16"}
# Bytes per element of the dtypes `ShadowRegisters.dtype` names (the estimate asks often).
_ELEM_SIZES = {f"{s}int{b}": b // 8 for s in ("", "u") for b in (8, 16, 32, 64)}
_STORAGE_CHAINED = 2  # U85 activation_storage.CHAINED
# Operations decoded from one stream at most. Vela emits a few hundred for MobileNet-sized
# networks; a garbage stream of bare NPU_OP words could otherwise yield one per 4 bytes, each
# becoming a snapshot, a graph node and a dataflow step.
MAX_OPERATIONS = 20_000


@dataclass(frozen=True)
class Command:
    offset: int  # byte offset from the first command word
    opcode: int
    two_words: bool
    name: str
    param: int  # bits 16-31 of the first word
    payload: int | None  # the second word of a cmd1 command


@dataclass
class FeatureMap:
    """A feature-map operand as the registers describe it (tile 0 of up to four tiles)."""

    height: int
    width: int
    depth: int
    dtype: str
    format: str
    region: int
    base: int
    stride_x: int
    stride_y: int
    stride_c: int
    zero_point: int | None = None
    # U85 chaining: the operand passes through an internal buffer to/from the neighbouring
    # operation instead of memory, so its region and address mean nothing.
    chained: bool = False

    @property
    def shape(self) -> list[int]:
        return [self.height, self.width, self.depth]

    @property
    def elem_size(self) -> int:
        size = _ELEM_SIZES.get(self.dtype)
        if size is None:
            bits = int("".join(c for c in self.dtype if c.isdigit()) or "8")
            size = max(bits // 8, 1)
        return size

    @property
    def address_range(self) -> tuple[int, int]:
        """[start, end) of the bytes the operand touches, from its strides."""
        h, w, d = max(self.height, 1), max(self.width, 1), max(self.depth, 1)
        if self.format == "NHCWB16":
            channels = ((d + 15) // 16 - 1) * self.stride_c + 16 * self.elem_size
        else:
            channels = (d - 1) * self.stride_c + self.elem_size
        extent = (h - 1) * self.stride_y + (w - 1) * self.stride_x + channels
        return self.base, self.base + max(extent, 1)

    def describe(self) -> str:
        if self.chained:
            return f"{self.height}x{self.width}x{self.depth} {self.dtype} chained (no memory)"
        lo, hi = self.address_range
        return (
            f"{self.height}x{self.width}x{self.depth} {self.dtype} {self.format} "
            f"@ {region_name(self.region)}[0x{lo:x}, 0x{hi:x})"
        )


@dataclass(frozen=True)
class DmaTransfer:
    src_region: int
    src: int
    dst_region: int
    dst: int
    length: int
    # The destination is the NPU's internal memory (region mode 1): a LUT table load, as Vela
    # emits it (BASE_PTR_INDEX_MEM2MEM), not a copy into a region of the system memory.
    dst_internal: bool = False


@dataclass(frozen=True)
class WeightStream:
    kind: str  # "weights" or "scales"
    region: int
    base: int
    length: int


@dataclass
class NpuOperation:
    index: int
    offset: int  # byte offset of the NPU_OP_* command in the command stream
    name: str  # NPU_OP_CONV, NPU_OP_DMA_START, ...
    param: int
    mode: str = ""  # pooling / elementwise / resize mode, or the wait count
    ifm: FeatureMap | None = None
    ifm2: FeatureMap | None = None
    ofm: FeatureMap | None = None
    kernel: tuple[int, int] | None = None  # (width, height)
    stride: tuple[int, int] | None = None  # (x, y)
    dilation: tuple[int, int] | None = None  # (x, y)
    padding: tuple[int, int, int, int] | None = None  # (top, left, bottom, right)
    activation: str = ""
    activation_range: tuple[int, int] | None = None
    block: tuple[int, int, int] | None = None  # OFM block (height, width, depth)
    weights: list[WeightStream] = field(default_factory=list)
    dma: DmaTransfer | None = None
    # How the hardware walks the work, for the performance estimate (perf.py).
    traversal: str = ""  # weight_order: DEPTH_FIRST / PART_KERNEL_FIRST (convolutions)
    microblock: str = ""  # U85 ACC_FORMAT microblock (U2X2 ...); U55/U65 have a fixed one
    acc_format: str = ""  # accumulator: I32 / I40 (U55) / I48 (U85)
    ifm2_scalar: bool = False  # elementwise second operand is a register constant
    ifm2_broadcast: str = ""  # the IFM2 axes broadcast to the OFM ("H", "W", "C", "HW", ...)
    ofm_transpose: str = ""  # U85 OFM activation_transpose (HWC = none)

    @property
    def kind(self) -> str:
        return self.name.removeprefix("NPU_OP_")

    @property
    def is_compute(self) -> bool:
        return self.name in COMPUTE_OPS

    @property
    def weight_bytes(self) -> int:
        return sum(w.length for w in self.weights if w.kind == "weights")

    @property
    def scale_bytes(self) -> int:
        return sum(w.length for w in self.weights if w.kind == "scales")

    @property
    def label(self) -> str:
        text = self.kind
        if self.mode and self.name in ("NPU_OP_POOL", "NPU_OP_ELEMENTWISE", "NPU_OP_RESIZE"):
            text += f" {self.mode}"
        if self.kernel is not None and self.name in ("NPU_OP_CONV", "NPU_OP_DEPTHWISE"):
            text += f" {self.kernel[0]}x{self.kernel[1]}"
        if self.stride is not None and self.stride != (1, 1) and self.is_compute:
            text += f"/{self.stride[0]}x{self.stride[1]}"
        return text

    def attrs(self) -> dict[str, str]:
        out: dict[str, str] = {"stream_offset": f"0x{self.offset:06x}", "command": self.name}
        if self.mode:
            out["mode"] = self.mode
        for role, fm in (("ifm", self.ifm), ("ifm2", self.ifm2), ("ofm", self.ofm)):
            if fm is not None:
                out[role] = fm.describe()
                if fm.zero_point is not None:
                    out[f"{role}_zero_point"] = str(fm.zero_point)
        if self.kernel is not None:
            out["kernel"] = f"{self.kernel[0]}x{self.kernel[1]}"
        if self.stride is not None:
            out["stride"] = f"{self.stride[0]}x{self.stride[1]}"
        if self.dilation is not None:
            out["dilation"] = f"{self.dilation[0]}x{self.dilation[1]}"
        if self.padding is not None:
            out["padding"] = "top {} left {} bottom {} right {}".format(*self.padding)
        if self.activation:
            out["activation"] = self.activation
        if self.activation_range is not None:
            out["activation_range"] = f"[{self.activation_range[0]}, {self.activation_range[1]}]"
        if self.block is not None:
            out["ofm_block"] = "{}x{}x{}".format(*self.block)
        for i, w in enumerate(self.weights):
            out[f"{w.kind}{i}"] = f"{w.length} bytes @ {region_name(w.region)}[0x{w.base:x}]"
        if self.weights:
            out["weight_bytes"] = str(self.weight_bytes)
            out["scale_bytes"] = str(self.scale_bytes)
        if self.ifm2_broadcast:
            out["ifm2_broadcast"] = self.ifm2_broadcast
        if self.dma is not None:
            d = self.dma
            out["dma"] = (
                f"{d.length} bytes {region_name(d.src_region)}[0x{d.src:x}] -> "
                f"{region_name(d.dst_region)}[0x{d.dst:x}]"
            )
        return out


@dataclass
class CommandStream:
    operations: list[NpuOperation] = field(default_factory=list)
    commands: list[Command] = field(default_factory=list)  # only when asked for
    command_count: int = 0
    words_decoded: int = 0
    problems: list[str] = field(default_factory=list)

    @property
    def compute_ops(self) -> list[NpuOperation]:
        return [op for op in self.operations if op.is_compute]
