"""The NPU's registers as the command stream sets them, and the operation each command starts
read off them: feature maps, kernel, activation, weight streams, DMA transfers."""

from __future__ import annotations

from types import ModuleType

from pte_adapter.delegates.ethosu.operations import (
    _FORMATS,
    _PRECISION_BITS,
    _STORAGE_CHAINED,
    COMPUTE_OPS,
    DmaTransfer,
    FeatureMap,
    NpuOperation,
    WeightStream,
)


class ShadowRegisters:
    """The last value written to every register, as the 64-bit command (payload in 32-63)."""

    def __init__(self, table: ModuleType) -> None:
        self.fields: dict[str, tuple[tuple[str, int, int], ...]] = table.FIELDS
        self.enums: dict[str, dict[int, str]] = table.ENUMS
        self.values: dict[str, int] = {}

    def get(self, register: str, name: str, default: int = 0) -> int:
        value = self.values.get(register)
        if value is None:
            return default
        for fname, lsb, width in self.fields.get(register, ()):
            if fname == name:
                return (value >> lsb) & ((1 << width) - 1)
        return default

    def address(self, register: str) -> int:
        """Addresses are 32 bits in the payload plus (U65/U85) high bits in the parameter."""
        return self.get(register, "addr_lo") | self.get(register, "addr_hi") << 32

    def signed16(self, register: str, name: str) -> int:
        v = self.get(register, name)
        return v - 0x10000 if v & 0x8000 else v

    def enum(self, enum_name: str, value: int) -> str:
        return self.enums.get(enum_name, {}).get(value, str(value))

    def dtype(self, register: str) -> str:
        bits = _PRECISION_BITS.get(self.get(register, "activation_precision"), 8)
        signed = self.get(register, "activation_type") == 1
        return f"{'' if signed else 'u'}int{bits}"


def _feature_map(regs: ShadowRegisters, role: str, depth: int) -> FeatureMap:
    prefix = f"NPU_SET_{role}_"
    dtype = regs.dtype(prefix + "PRECISION")
    zero_point = regs.get(prefix + "ZERO_POINT", "zero_point")
    # The register holds 16 bits; for signed data it is two's complement (Vela writes -128 as
    # 0xff80), so show the value the hardware applies.
    if zero_point is not None and not dtype.startswith("u") and zero_point >= 0x8000:
        zero_point -= 0x10000
    return FeatureMap(
        height=regs.get(prefix + "HEIGHT0_M1", "height_m1") + 1,
        width=regs.get(prefix + "WIDTH0_M1", "width_m1") + 1,
        depth=depth,
        dtype=dtype,
        format=_FORMATS.get(regs.get(prefix + "PRECISION", "activation_format"), "?"),
        region=regs.get(prefix + "REGION", "region"),
        base=regs.address(prefix + "BASE0"),
        stride_x=regs.address(prefix + "STRIDE_X"),
        stride_y=regs.address(prefix + "STRIDE_Y"),
        stride_c=regs.address(prefix + "STRIDE_C"),
        zero_point=zero_point,
        chained=regs.get(prefix + "PRECISION", "activation_storage") == _STORAGE_CHAINED,
    )


def _mode(regs: ShadowRegisters, name: str) -> str:
    if name == "NPU_OP_POOL":
        return regs.enum("pooling_mode", regs.get(name, "pooling_mode"))
    if name == "NPU_OP_ELEMENTWISE":
        return regs.enum("elementwise_mode", regs.get(name, "elementwise_mode"))
    if name == "NPU_OP_RESIZE":
        return regs.enum("resize_mode", regs.get(name, "resize_mode"))
    if name == "NPU_OP_CONV" and regs.get(name, "weights_ifm2"):
        return "WEIGHTS_FROM_IFM2"
    if name == "NPU_OP_KERNEL_WAIT":
        return f"n={regs.get(name, 'n')}"
    if name == "NPU_OP_DMA_WAIT":
        return f"k={regs.get(name, 'k')}"
    return ""


def _feature_maps(regs: ShadowRegisters, op: NpuOperation) -> None:
    """IFM (and IFM2), OFM and the OFM block of a compute operation."""
    ofm_depth = regs.get("NPU_SET_OFM_DEPTH_M1", "depth_m1") + 1
    ifm_depth = regs.get("NPU_SET_IFM_DEPTH_M1", "depth_m1") + 1
    if op.name == "NPU_OP_ELEMENTWISE":
        # Elementwise operands have the OFM's depth; Vela leaves IFM_DEPTH_M1 stale for them.
        ifm_depth = ofm_depth
    op.ifm = _feature_map(regs, "IFM", ifm_depth)
    if op.name == "NPU_OP_ELEMENTWISE":
        op.ifm2 = _feature_map(regs, "IFM2", ifm_depth)
    ofm = _feature_map(regs, "OFM", ofm_depth)
    # The OFM registers hold the whole output size; HEIGHT0/WIDTH0 are its first tile.
    ofm.height = regs.get("NPU_SET_OFM_HEIGHT_M1", "height_m1") + 1
    ofm.width = regs.get("NPU_SET_OFM_WIDTH_M1", "width_m1") + 1
    op.ofm = ofm
    op.block = (
        regs.get("NPU_SET_OFM_BLK_HEIGHT_M1", "height_m1") + 1,
        regs.get("NPU_SET_OFM_BLK_WIDTH_M1", "width_m1") + 1,
        regs.get("NPU_SET_OFM_BLK_DEPTH_M1", "depth_m1") + 1,
    )


def _output_stage(regs: ShadowRegisters, op: NpuOperation) -> None:
    """Activation, clipping, accumulator format and the OFM transpose."""
    function = regs.get("NPU_SET_ACTIVATION", "activation_function")
    op.activation = regs.enum("activation_function", function)
    op.activation_range = (
        regs.signed16("NPU_SET_ACTIVATION_MIN", "clip_boundary"),
        regs.signed16("NPU_SET_ACTIVATION_MAX", "clip_boundary"),
    )
    op.acc_format = regs.enum("acc_format", regs.get("NPU_SET_ACC_FORMAT", "acc_format"))
    if "microblock" in {f[0] for f in regs.fields.get("NPU_SET_ACC_FORMAT", ())}:
        op.microblock = regs.enum("microblock", regs.get("NPU_SET_ACC_FORMAT", "microblock"))
    if "activation_transpose" in {f[0] for f in regs.fields.get("NPU_SET_OFM_PRECISION", ())}:
        op.ofm_transpose = regs.enum(
            "activation_transpose", regs.get("NPU_SET_OFM_PRECISION", "activation_transpose")
        )


def _broadcast(regs: ShadowRegisters, op: NpuOperation) -> None:
    """How an elementwise second operand is broadcast: a register constant, or along axes."""
    fields = {f[0] for f in regs.fields.get("NPU_SET_IFM2_BROADCAST", ())}
    if "broadcast_constant" in fields:  # U55/U65
        op.ifm2_scalar = regs.get("NPU_SET_IFM2_BROADCAST", "broadcast_constant") == 1
        op.ifm2_broadcast = "".join(
            axis
            for axis in "HWC"
            if regs.get("NPU_SET_IFM2_BROADCAST", f"broadcast_{axis.lower()}")
        )
    elif "broadcast_mode" in fields:  # U85
        mode = regs.enum("broadcast_mode", regs.get("NPU_SET_IFM2_BROADCAST", "broadcast_mode"))
        op.ifm2_scalar = mode == "SCALAR"
        op.ifm2_broadcast = "" if mode in ("NONE", "SCALAR") or mode.isdigit() else mode
    if "C" in op.ifm2_broadcast and op.ifm2 is not None:
        op.ifm2.depth = 1  # broadcast along the channels: one channel is read


def _kernel(regs: ShadowRegisters, op: NpuOperation) -> None:
    """Kernel size, stride, dilation, traversal and padding."""
    stride_reg = "NPU_SET_KERNEL_STRIDE"
    dil_x = regs.get(stride_reg, "dilation_x") + 1
    dil_y = regs.get(stride_reg, "dilation_y") + 1
    op.dilation = (dil_x, dil_y)
    op.traversal = regs.enum("weight_order", regs.get(stride_reg, "weight_order"))
    # KERNEL_*_M1 holds the dilated extent minus one: dilation * (k - 1).
    op.kernel = (
        regs.get("NPU_SET_KERNEL_WIDTH_M1", "width_m1") // dil_x + 1,
        regs.get("NPU_SET_KERNEL_HEIGHT_M1", "height_m1") // dil_y + 1,
    )
    op.stride = (
        (regs.get(stride_reg, "stride_x_msb") << 1 | regs.get(stride_reg, "stride_x_lsb")) + 1,
        (regs.get(stride_reg, "stride_y_msb") << 1 | regs.get(stride_reg, "stride_y_lsb")) + 1,
    )
    op.padding = (
        regs.get("NPU_SET_IFM_PAD_TOP", "pad"),
        regs.get("NPU_SET_IFM_PAD_LEFT", "pad"),
        regs.get("NPU_SET_IFM_PAD_BOTTOM", "pad"),
        regs.get("NPU_SET_IFM_PAD_RIGHT", "pad"),
    )


def _weight_streams(regs: ShadowRegisters, op: NpuOperation, weight_streams: int) -> None:
    weight_region = regs.get("NPU_SET_WEIGHT_REGION", "region")
    scale_region = regs.get("NPU_SET_SCALE_REGION", "region")
    for k in range(max(1, min(weight_streams, 4))):
        suffix = "" if k == 0 else str(k)
        length = regs.get(f"NPU_SET_WEIGHT{suffix}_LENGTH", "length")
        if length:
            base = regs.address(f"NPU_SET_WEIGHT{suffix}_BASE")
            op.weights.append(WeightStream("weights", weight_region, base, length))
        scale_len_reg = f"NPU_SET_SCALE{suffix}_LENGTH"
        if scale_len_reg in regs.fields:
            length = regs.get(scale_len_reg, "length")
            if length:
                base = regs.address(f"NPU_SET_SCALE{suffix}_BASE")
                op.weights.append(WeightStream("scales", scale_region, base, length))


def snapshot(
    regs: ShadowRegisters, index: int, offset: int, name: str, param: int, weight_streams: int
) -> NpuOperation:
    """The operation a command starts, from the registers as they are when it is issued."""
    op = NpuOperation(index=index, offset=offset, name=name, param=param)
    op.mode = _mode(regs, name)
    if name == "NPU_OP_DMA_START":
        op.dma = DmaTransfer(
            src_region=regs.get("NPU_SET_DMA0_SRC_REGION", "region"),
            src=regs.address("NPU_SET_DMA0_SRC"),
            dst_region=regs.get("NPU_SET_DMA0_DST_REGION", "region"),
            dst=regs.address("NPU_SET_DMA0_DST"),
            length=regs.address("NPU_SET_DMA0_LEN"),
            dst_internal=regs.get("NPU_SET_DMA0_DST_REGION", "region_mode") == 1,
        )
        return op
    if name not in COMPUTE_OPS:
        return op
    _feature_maps(regs, op)
    _output_stage(regs, op)
    if name == "NPU_OP_ELEMENTWISE":
        _broadcast(regs, op)
        return op
    _kernel(regs, op)
    if name in ("NPU_OP_CONV", "NPU_OP_DEPTHWISE") and not op.mode:
        _weight_streams(regs, op, weight_streams)
    return op
