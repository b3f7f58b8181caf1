"""One record per backend: everything the adapter knows about a delegate id, in one place.

A `Backend` says how a backend's partitions are named ("NPU partition 2 (EthosUBackend)") and
coloured, which magic bytes identify its payloads when the id is unfamiliar, which CPU kernels its
export flow places at partition boundaries that only convert data (glue, not compute), and where
the code that knows its payloads lives: its package under `pte_adapter.delegates` and the hooks in
it, named "module:function" and imported only when used (so a broken decoder cannot stop a file
opening, and this module stays plain data):

- `decoder`: `decode(payload, ctx) -> DecodedDelegate`, the payload as neutral graphs and numbers;
- `layout`: `payload_layout(payload, base, sources) -> PayloadLayout`, where each byte of the
  payload goes (`pte-adapter size`);
- `side_files`: `attach(program, delegates)`, finds the intermediate files its export left beside
  the program and attaches what they say to its delegates (Ethos-U's and TOSA's `.tosa` files,
  `delegates/tosa/sidecars.py`), once per program after every payload is decoded;
- `artifact_folders`: `artifact_folders(pte_path, delegate) -> list[Path]`, the folders inside the
  program's folder that the delegate names for its intermediate files (the Model Explorer
  server's cache watches them, `explorer/cache.py`);
- `partition_rules`: `reasons(method, delegates) -> judge(instruction, operator, origin) ->
  list[Verdict]`, why its partitioner would refuse a CPU kernel (several backends may share one,
  e.g. Arm's);
- `partition_report`: `partition_report(pte_path, delegate) -> PartitionerReport | None`, the
  partitioner's own report of the export, found beside the `.pte` (Arm's `partition_report.txt`);
- `cpu_rewrites`: `rewritten_from(kernel) -> KernelRewrites`, the edge operators its export flow's
  CPU passes turn into that kernel (Arm's Cortex-M lowering), so that an ETRecord recorded before
  those passes still matches the program;
- `price_operators`: `price_operators(method, instructions, delegate) -> list[OperatorPrice]`,
  what CPU kernels would cost inside that delegate (the what-if of `analysis/what_if.py`);
- `profile_events`: places what the backend logs about itself in an ETDump on its decoded nodes;
- `file_reader` / `file_suffixes`: a bare file of this backend's payload format (`.tosa`) opens as
  its graphs;
- `compiler_check`: `check(program, delegates, timeout) -> rows`, the backend's own compiler run
  on request beside our estimate (Vela: `pte-adapter vela`, `export --vela`).

Every hook's type, its accessor and the one policy for a hook that fails are in
`delegates/hooks.py`: nothing outside `delegates/` imports a backend package.

Adding a backend is one package under `delegates/` and one `register(Backend(...))` call below
(`docs/contributing.md` shows it; `tests/unit/delegates/test_add_a_backend.py` keeps it true). A
backend without hooks is still named and coloured; its payload is shown as opaque bytes. No module
outside this one spells a backend id.

This module is plain data and imports nothing else from the package but `operator_names` (plain
string functions), so every layer may use it.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from pte_adapter.operator_names import kernel_base

CPU = "CPU"

Colour = tuple[str, str]  # (background, border)

# CPU nodes: compute is the colour that should catch the eye; glue and control are muted.
CPU_GROUP_COLOUR: Colour = ("#fff3f3", "#b71c1c")
CPU_COMPUTE_COLOUR: Colour = ("#ffcdd2", "#b71c1c")
CPU_GLUE_COLOUR: Colour = ("#f5f5f5", "#9e9e9e")
CPU_CONTROL_COLOUR: Colour = ("#fff9c4", "#827717")
OTHER_DELEGATE_COLOUR: Colour = ("#b2ebf2", "#006064")


@dataclass(frozen=True)
class Runner:
    """The bare-metal runner that loads a backend's programs on a microcontroller board, and the
    build options that size its memory pools: what `pte-adapter fit` maps and prints."""

    name: str  # for people: "Arm's runner"
    title: str  # the same, said in full: "Arm's bare-metal runner"
    source: str  # where its pools and linker scripts are defined
    method_pool: str  # the method allocator: planned arenas, the runtime's bookkeeping
    scratch_pool: str  # the temp allocator: an NPU's scratch
    fast_scratch_pool: str  # the fast scratch temp allocator
    fast_memory_pool: str  # the planned fast memory (the memory plan's `fast_memory_arena`)
    fast_memory_arena: int  # the planned buffer index taken from the fast memory pool
    align: int  # every planned buffer is allocated aligned to this many bytes


# Arm's bare-metal runner (examples/arm/executor_runner in ExecuTorch; its CMakeLists.txt names the
# pool size build options): the runner of the Ethos-U backend, and of a program without delegates.
ARM_RUNNER = Runner(
    "Arm's runner",
    "Arm's bare-metal runner",
    "examples/arm/executor_runner (ExecuTorch)",
    method_pool="ET_ARM_BAREMETAL_METHOD_ALLOCATOR_POOL_SIZE",
    scratch_pool="ET_ARM_BAREMETAL_SCRATCH_TEMP_ALLOCATOR_POOL_SIZE",
    fast_scratch_pool="ET_ARM_BAREMETAL_FAST_SCRATCH_TEMP_ALLOCATOR_POOL_SIZE",
    fast_memory_pool="ET_ARM_BAREMETAL_PLANNED_FAST_MEMORY_SIZE",
    fast_memory_arena=3,
    align=16,
)


@dataclass(frozen=True)
class Backend:
    id: str  # the delegate id stored in the .pte, e.g. "EthosUBackend"
    display: str  # what it is, for people: "Arm Ethos-U NPU"
    group_prefix: str  # partition group names: "<prefix> <n> (<id>)"
    colour: Colour
    colour_name: str  # for the legend: "orange"
    decoder: str | None = None  # "module:function", imported when a payload is decoded
    magics: tuple[tuple[int, bytes], ...] = ()  # (offset, bytes) that identify a payload
    side_files: str | None = None  # "module:function": finds and attaches its side files
    artifact_folders: str | None = None  # "module:function": folders named for its side files
    layout: str | None = None  # "module:function": the payload's byte layout for `size`
    partition_rules: str | None = None  # "module:function": why its partitioner refuses a kernel
    profile_events: str | None = None  # "module:function": its own ETDump events on its nodes
    file_reader: str | None = None  # "module:function": a bare file of its format as graphs
    file_suffixes: tuple[str, ...] = ()  # suffixes of such files (".tosa")
    cpu_rewrites: str | None = None  # "module:function": edge operators its CPU passes rewrite
    partition_report: str | None = None  # "module:function": the partitioner's own report
    price_operators: str | None = None  # "module:function": CPU kernels priced inside it
    compiler_check: str | None = None  # "module:function": its compiler run on request
    # CPU kernels (namespace::name, no overload) that this backend's export flow puts at its
    # partition boundaries and that only convert or move data: counted as glue, not compute.
    cpu_glue_ops: frozenset[str] = frozenset()
    # Values its decoded nodes and tensors leave out because they are the default, said once in
    # the method graph's `defaults_not_shown` attribute (docs/model-explorer.md, "Defaults").
    defaults_not_shown: str = ""
    # The bare-metal runner its programs run under (the deployment memory map's pools), if any.
    runner: Runner | None = None
    # It runs on a phone or desktop, under an operating system: its programs get no bare-metal
    # memory map unless a board or a memory size is asked for.
    hosted: bool = False
    # Prefixes of the events it logs in an ETDump for its own operators that only move or
    # re-encode data (layout, quantization): a partition's delegate glue in `profile`.
    profile_glue_events: tuple[str, ...] = ()


BACKENDS: dict[str, Backend] = {}


def register(backend: Backend) -> Backend:
    if backend.id in BACKENDS or backend.id == CPU:
        raise ValueError(f"backend {backend.id!r} is registered twice")
    BACKENDS[backend.id] = backend
    return backend


def backend_info(backend_id: str) -> Backend:
    """The record for a delegate id; an unknown id gets a generic, still readable record."""
    found = BACKENDS.get(backend_id)
    if found is not None:
        return found
    return Backend(
        backend_id,
        f"{backend_id or 'unnamed'} (unknown backend)",
        "Delegate partition",
        OTHER_DELEGATE_COLOUR,
        "cyan",
    )


def backend_colour(backend_id: str) -> Colour:
    """(background, border) of a partition group or delegate node; CPU islands get the CPU colour."""
    if backend_id == CPU:
        return CPU_GROUP_COLOUR
    return backend_info(backend_id).colour


def group_prefix(backend_id: str) -> str:
    return backend_info(backend_id).group_prefix


def legend(backend_ids: list[str]) -> str:
    """What the colours mean, for the given delegate ids (all decodable backends when none)."""
    ids = list(dict.fromkeys(backend_ids)) or [b.id for b in BACKENDS.values() if b.decoder]
    parts = [f"{backend_info(i).colour_name} = {backend_info(i).display}" for i in ids]
    parts += [
        "red = CPU compute",
        "grey = CPU quantize/dequantize/copy glue",
        "yellow = Move/Jump/Free",
    ]
    return ", ".join(parts)


def for_file(suffix: str) -> Backend | None:
    """The backend whose payload format a bare file with this suffix (".tosa") holds."""
    return next((b for b in BACKENDS.values() if suffix.lower() in b.file_suffixes), None)


def payload_file_suffixes() -> list[str]:
    """Every suffix of a bare payload file some record reads (".tosa"), once, in the records'
    order: what Model Explorer offers to open besides programs."""
    return list(
        dict.fromkeys(s for b in BACKENDS.values() if b.file_reader for s in b.file_suffixes)
    )


def decoded_backends() -> list[str]:
    """What each backend with a decoder is, for people ("Arm Ethos-U NPU"), in the records' order."""
    return [b.display for b in BACKENDS.values() if b.decoder]


def with_hook(hook: str) -> list[Backend]:
    """Registered backends that set `hook` (a field name, e.g. "partition_rules"), in order."""
    return [b for b in BACKENDS.values() if getattr(b, hook)]


def sniff(payload: memoryview | bytes) -> str | None:
    """The backend whose magic bytes the payload carries, if any."""
    for b in BACKENDS.values():
        for offset, magic in b.magics:
            if bytes(payload[offset : offset + len(magic)]) == magic:
                return b.id
    return None


# -- glue: an explicit list; every other operator, in any namespace, is compute --------------------

# ExecuTorch's own CPU operators that (de)quantize, copy, view or change the dim order. The
# quantized_decomposed names are those of torchao's quantization primitives (kernels exist in
# ExecuTorch's kernels/quantized for most of them).
CPU_GLUE_OPS: frozenset[str] = frozenset(
    {
        # quantization glue: convert between float and integer representations
        "quantized_decomposed::quantize_per_tensor",
        "quantized_decomposed::quantize_per_channel",
        "quantized_decomposed::quantize_per_token",
        "quantized_decomposed::quantize_per_channel_group",
        "quantized_decomposed::dequantize_per_tensor",
        "quantized_decomposed::dequantize_per_channel",
        "quantized_decomposed::dequantize_per_token",
        "quantized_decomposed::dequantize_per_channel_group",
        "quantized_decomposed::choose_qparams",
        "quantized_decomposed::choose_qparams_symmetric",
        "quantized_decomposed::choose_qparams_per_token",
        "quantized_decomposed::choose_qparams_per_token_asymmetric",
        # copies and views
        "aten::view_copy",
        "aten::_reshape_alias_copy",
        "aten::reshape",
        "aten::alias_copy",
        "aten::squeeze_copy",
        "aten::unsqueeze_copy",
        "aten::expand_copy",
        "aten::permute_copy",
        "aten::clone",
        "aten::contiguous",
        "aten::copy",
        "aten::copy_",
        "aten::_to_copy",
        "executorch_prim::et_view",
        # dim-order (memory layout) conversions
        "dim_order_ops::_to_dim_order_copy",
        "dim_order_ops::_clone_dim_order",
    }
)

# Arm's CPU fallback for Ethos-U systems runs `cortex_m::` kernels (backends/cortex_m/ops/
# operators.yaml in ExecuTorch 1.5.1). These only convert data: (de)quantization and the layout
# transposes its explicit-layout lowering inserts. quantized_conv2d, quantized_linear,
# quantized_add, pad, softmax ... are compute. (It has no requantize kernel.)
CORTEX_M_GLUE_OPS: frozenset[str] = frozenset(
    {
        "cortex_m::quantize_per_tensor",
        "cortex_m::dequantize_per_tensor",
        "cortex_m::transpose",
    }
)


def glue_operators() -> frozenset[str]:
    """Every glue operator: ExecuTorch's own, plus each registered backend's."""
    return _glue_union(tuple(b.cpu_glue_ops for b in BACKENDS.values()))


def is_glue(op_name: str) -> bool:
    """True only for an operator on the explicit glue list; unknown operators are compute."""
    return kernel_base(op_name) in glue_operators()


@functools.lru_cache(maxsize=8)
def _glue_union(per_backend: tuple[frozenset[str], ...]) -> frozenset[str]:
    """The union, made once per distinct set of lists: keyed by the lists themselves (not by
    which record objects hold them), so a record registered or replaced with other glue is never
    answered from a stale union."""
    return CPU_GLUE_OPS.union(*per_backend)


# -- the registry -----------------------------------------------------------------------------------

_ARM_CPU_GLUE = CORTEX_M_GLUE_OPS
# The Arm backends share one partitioner (TOSA support lists and checks) and its rules, and one
# CPU fallback (the Cortex-M passes).
_ARM_RULES = "pte_adapter.delegates.arm.partition_rules:reasons"
_ARM_CPU_REWRITES = "pte_adapter.delegates.arm.cortex_m:rewritten_from"
_ARM_REPORT = "pte_adapter.delegates.arm.partition_report:partition_report"
_ARM_FOLDERS = "pte_adapter.delegates.arm.artifacts:artifact_folders"

ETHOSU = register(
    Backend(
        "EthosUBackend",
        "Arm Ethos-U NPU",
        "NPU partition",
        ("#ffe0b2", "#e65100"),
        "orange",
        decoder="pte_adapter.delegates.ethosu.decode:decode",
        magics=((0, b"vela_bin_stream\x00"),),
        # the intermediate `.tosa` of each partition, matched to its delegate by I/O
        side_files="pte_adapter.delegates.tosa.sidecars:attach_matched_by_io",
        artifact_folders=_ARM_FOLDERS,
        cpu_glue_ops=_ARM_CPU_GLUE,
        layout="pte_adapter.delegates.ethosu.layout:payload_layout",
        partition_rules=_ARM_RULES,
        cpu_rewrites=_ARM_CPU_REWRITES,
        partition_report=_ARM_REPORT,
        price_operators="pte_adapter.delegates.ethosu.what_if_prices:price_operators",
        compiler_check="pte_adapter.delegates.ethosu.vela_oracle:compare_with_vela",
        runner=ARM_RUNNER,
    )
)
TOSA = register(
    Backend(
        "TOSABackend",
        "TOSA graph (Arm)",
        "TOSA partition",
        ("#e1bee7", "#4a148c"),
        "purple",
        decoder="pte_adapter.delegates.tosa.decode:decode",
        magics=((4, b"TOSA"),),
        # the payload is a `.tosa` file: an identical file among the intermediate ones is named
        side_files="pte_adapter.delegates.tosa.sidecars:note_identical_file",
        artifact_folders=_ARM_FOLDERS,
        cpu_glue_ops=_ARM_CPU_GLUE,
        layout="pte_adapter.delegates.tosa.layout:payload_layout",
        partition_rules=_ARM_RULES,
        cpu_rewrites=_ARM_CPU_REWRITES,
        partition_report=_ARM_REPORT,
        file_reader="pte_adapter.delegates.tosa.decode:read_tosa_file",
        file_suffixes=(".tosa",),
    )
)
VGF = register(
    Backend(
        "VgfBackend",
        "Arm VGF (Vulkan ML)",
        "VGF partition",
        ("#c8e6c9", "#1b5e20"),
        "green",
        decoder="pte_adapter.delegates.vgf.decode:decode",
        magics=((0, b"VGF1"),),
        cpu_glue_ops=_ARM_CPU_GLUE,
        layout="pte_adapter.delegates.vgf.layout:payload_layout",
        hosted=True,  # Vulkan ML: a phone's or a desktop's GPU
        artifact_folders=_ARM_FOLDERS,
        partition_rules=_ARM_RULES,
        cpu_rewrites=_ARM_CPU_REWRITES,
        partition_report=_ARM_REPORT,
    )
)
XNNPACK = register(
    Backend(
        "XnnpackBackend",
        "XNNPACK (CPU)",
        "XNNPACK partition",
        ("#bbdefb", "#0d47a1"),
        "blue",
        decoder="pte_adapter.delegates.xnnpack.decode:decode",
        magics=((4, b"XH00"),),
        layout="pte_adapter.delegates.xnnpack.layout:payload_layout",
        partition_rules="pte_adapter.delegates.xnnpack.partition_rules:reasons",
        profile_events="pte_adapter.delegates.xnnpack.profile_events:inner_node_times",
        hosted=True,
        # XNNPACK logs its runtime operators by type name: `Convert` (quantize/dequantize at the
        # partition's edges), `Transpose` (NCHW<->NHWC) and `Copy` move or re-encode data.
        profile_glue_events=("Convert", "Transpose", "Copy"),
        defaults_not_shown="an XNNPACK node's flags: 0, its kind: its label, input_id / "
        "input<k>_id / output_id: the tensor v<id> on its port, num_dims: the length of its "
        "new_shape or perm; an XNNPACK value's flags: 0 (external_input / external_output: its "
        "name says input / output), external_id: none, dq_datatype: none; a payload without "
        "constants: constants none",
    )
)
VULKAN = register(
    Backend(
        "VulkanBackend",
        "Vulkan GPU (e.g. Arm Mali)",
        "Vulkan partition",
        ("#dcedc8", "#33691e"),
        "light green",
        decoder="pte_adapter.delegates.vulkan.decode:decode",
        magics=((4, b"VH00"),),
        layout="pte_adapter.delegates.vulkan.layout:payload_layout",
        partition_rules="pte_adapter.delegates.vulkan.partition_rules:reasons",
        hosted=True,
    )
)
COREML = register(
    Backend(
        "CoreMLBackend",
        "Apple Core ML",
        "Core ML partition",
        ("#b2dfdb", "#004d40"),
        "teal",
        decoder="pte_adapter.delegates.coreml.decode:decode",
        layout="pte_adapter.delegates.coreml.layout:payload_layout",
        hosted=True,
    )
)
# ExecuTorch's other backends (the ids of ExecuTorch 1.5.1's BackendDetails classes; MPSBackend
# from earlier releases): named and coloured, their payloads shown as opaque bytes. All but
# Neutron (NXP's NPU, on microcontrollers too) run on a phone's, a desktop's or a server's chips.
_OPAQUE: tuple[tuple[str, str, str, Colour, str, bool], ...] = (
    ("QnnBackend", "Qualcomm QNN (Hexagon)", "QNN partition", ("#f8bbd0", "#880e4f"), "pink", True),
    ("MPSBackend", "Apple MPS", "MPS partition", ("#c5cae9", "#1a237e"), "indigo", True),
    (
        "NeuropilotBackend",
        "MediaTek NeuroPilot",
        "NeuroPilot partition",
        ("#ffecb3", "#ff6f00"),
        "amber",
        True,
    ),
    ("EnnBackend", "Samsung Exynos (ENN)", "ENN partition", ("#d7ccc8", "#3e2723"), "brown", True),
    (
        "NeutronBackend",
        "NXP eIQ Neutron NPU",
        "Neutron partition",
        ("#cfd8dc", "#263238"),
        "blue grey",
        False,
    ),
    (
        "OpenvinoBackend",
        "Intel OpenVINO",
        "OpenVINO partition",
        ("#b3e5fc", "#01579b"),
        "light blue",
        True,
    ),
    (
        "CudaBackend",
        "NVIDIA CUDA (AOTInductor)",
        "CUDA partition",
        ("#d1c4e9", "#311b92"),
        "deep purple",
        True,
    ),
)
for _id, _display, _prefix, _colour, _colour_name, _hosted in _OPAQUE:
    register(Backend(_id, _display, _prefix, _colour, _colour_name, hosted=_hosted))
