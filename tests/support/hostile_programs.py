"""The hostile corpus, round two (issue 44): programs and payloads whose few bytes make a view do
work past what it read. Each case is a generator `build(folder, scale) -> program path` like those
of `hostile.py` (which lists them in its `CASES`), made from a real example by the minimal writer
of `pte_writer.py` (ExecuTorch's schema and `flatc`, its generated FlatBuffers code, its Vulkan
serializer's layout, its `executorchcoreml` folder flattening, coremltools' protobuf messages);
`scale` multiplies the hostile count, and the issue's table gives the count at scale 1.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.support.examples import EXAMPLES
from tests.support.pte_writer import (
    Unit,
    field_position,
    flat_folder,
    flatten_folder,
    program_json,
    program_tables,
    proto_field,
    repeat_tables,
    varint,
    vulkan_payload,
    vulkan_slot,
    vulkan_tables,
    write_program,
)

Builder = Callable[[Path, int], Path]
PROGRAM_CASES: dict[str, Builder] = {}
# Commands a case runs besides every command of the corpus (`{pte}` is its program).
EXTRA_COMMANDS: dict[str, tuple[tuple[str, ...], ...]] = {}

VULKAN = "vulkan_cnn_island"  # three Vulkan delegates (payloads in segments 1-3), two CPU kernels
COREML = "coreml_small"  # one Core ML delegate (its flattened folder in segment 1)
ETHOSU = "lrn_cortex_m_qdq_ethosu85"  # two Ethos-U delegates around a CPU island (inline payloads)
LINK = "https://evil.example/fix"
# Names Model Explorer's side panel would draw as links: a URL, a markdown link, a short link.
LINK_NAMES = (LINK, f"[download]({LINK})", "go/evil.example")


def program_case(fn: Builder) -> Builder:
    PROGRAM_CASES[fn.__name__.removeprefix("case_")] = fn
    return fn


def _program(folder: Path, name: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    return folder / f"{name}.pte"


def method_tables(fb: bytearray) -> tuple[Any, Any]:
    """The first method and its first chain, read by the project's own reader (to find fields)."""
    from pte_adapter.container._generated import program_schema as S
    from pte_adapter.container.pte import PteFile

    root = PteFile(bytes(fb), "written").root
    plan = next(root.iter_tables(S.Program.execution_plan, "execution_plan"))
    return plan, next(plan.iter_tables(S.ExecutionPlan.chains, "chains"))


def instructions_unit(*calls: tuple[str, int, list[int]]) -> Unit:
    """Instructions made by ExecuTorch's generated code: ("kernel", op, args) or ("delegate",
    index, args)."""
    from executorch.exir._serialize.generated.executorch_flatbuffer import (
        DelegateCall,
        Instruction,
        InstructionArguments,
        KernelCall,
    )

    out = []
    for kind, index, args in calls:
        instruction = Instruction.InstructionT()
        if kind == "kernel":
            instruction.instrArgsType = InstructionArguments.InstructionArguments.KernelCall
            instruction.instrArgs = KernelCall.KernelCallT()
            instruction.instrArgs.opIndex = index
        else:
            instruction.instrArgsType = InstructionArguments.InstructionArguments.DelegateCall
            instruction.instrArgs = DelegateCall.DelegateCallT()
            instruction.instrArgs.delegateIndex = index
        instruction.instrArgs.args = args
        out.append(instruction)
    return program_tables(*out)


def repeated_chain(unit: Unit, n: int) -> Callable[[bytearray], None]:
    from pte_adapter.container._generated import program_schema as S

    def edit(fb: bytearray) -> None:
        _, chain = method_tables(fb)
        repeat_tables(fb, field_position(chain, S.Chain.instructions), unit, n)

    return edit


# --- Vulkan payloads ----------------------------------------------------------------------


def vk_tensor(dims: list[int]) -> dict[str, Any]:
    return {
        "value_type": "VkTensor",
        "value": {"datatype": "FLOAT32", "dims": dims, "constant_id": -1, "mem_obj_id": -1},
    }


def vk_graph(
    values: list[dict[str, Any]], chain: list[dict[str, Any]], ins: list[int], outs: list[int]
) -> dict[str, Any]:
    return {"version": "0", "chain": chain, "values": values, "input_ids": ins, "output_ids": outs}


def with_vulkan(folder: Path, payload: bytes) -> Path:
    """The Vulkan example with its first delegate's payload (segment 1) replaced."""
    program, segments = program_json(EXAMPLES / f"{VULKAN}.pte")
    segments[1] = payload
    return write_program(program, segments, _program(folder, VULKAN))


@program_case
def case_vulkan_one_tensor(folder: Path, scale: int) -> Path:
    """2,000 x scale Vulkan operator calls that each read and write one tensor (every read had an
    edge from every earlier writer)."""
    n = 2000 * scale
    chain = [{"node_id": i, "name": "aten.relu.default", "args": [0, 0]} for i in range(n)]
    return with_vulkan(folder, vulkan_payload(vk_graph([vk_tensor([1, 8])], chain, [0], [0])))


@program_case
def case_vulkan_shared_value_list(folder: Path, scale: int) -> Path:
    """One Vulkan ValueList of 4,000 x scale tensor ids read by as many calls (each call expanded
    the whole list)."""
    n = 4000 * scale
    values = [vk_tensor([1, 8]), {"value_type": "ValueList", "value": {"items": [0] * n}}]
    chain = [{"node_id": i, "name": "aten.cat.default", "args": [1, 0]} for i in range(n)]
    return with_vulkan(folder, vulkan_payload(vk_graph(values, chain, [0], [0])))


def _vk_tensor_unit(dims: int) -> Unit:
    """One VkValue holding a FLOAT32 VkTensor of `dims` dimensions of 2, with its own vtables."""
    from pte_adapter.delegates.vulkan._generated.vulkan_schema import UNIONS

    tag = next(t for t, name in UNIONS["GraphTypes"].items() if name == "VkTensor")

    def build(b: Any) -> list[int]:
        b.StartVector(4, dims, 4)
        for _ in range(dims):
            b.PrependUint32(2)
        vector = b.EndVector()
        b.StartObject(7)
        b.PrependInt8Slot(vulkan_slot("VkTensor", "datatype"), 5, 0)
        b.PrependUOffsetTRelativeSlot(vulkan_slot("VkTensor", "dims"), vector, 0)
        b.PrependInt32Slot(vulkan_slot("VkTensor", "constant_id"), -1, 0)
        b.PrependInt32Slot(vulkan_slot("VkTensor", "mem_obj_id"), -1, 0)
        tensor = b.EndObject()
        union = vulkan_slot("VkValue", "value")  # the type's slot; the table's is the next
        b.StartObject(2)
        b.PrependUint8Slot(union, tag, 0)
        b.PrependUOffsetTRelativeSlot(union + 1, tensor, 0)
        return [b.EndObject()]

    return vulkan_tables(build)


@program_case
def case_vulkan_many_tensors(folder: Path, scale: int) -> Path:
    """20,000 x scale Vulkan tensors, half of them graph inputs and half outputs (each was looked
    up in both id lists)."""
    n = 20_000 * scale
    unit = _vk_tensor_unit(4)

    def edit(fb: bytearray) -> None:
        from pte_adapter.container.flatbuf import FlatBuffer

        root = FlatBuffer(bytes(fb), "graph").root()
        repeat_tables(fb, field_position(root, vulkan_slot("VkGraph", "values")), unit, n)

    graph = vk_graph([vk_tensor([1])], [], list(range(0, n, 2)), list(range(1, n, 2)))
    return with_vulkan(folder, vulkan_payload(graph, edit))


@program_case
def case_vulkan_huge_byte_count(folder: Path, scale: int) -> Path:
    """A Vulkan tensor of 450 x scale dimensions of 2^32 - 1: its byte count has over 4,300 digits
    (Python's limit for `str` of an int), as do the graph input's and output's."""
    values = [vk_tensor([0xFFFFFFFF] * (450 * scale))]
    chain = [{"node_id": 0, "name": "aten.relu.default", "args": [0, 0]}]
    return with_vulkan(folder, vulkan_payload(vk_graph(values, chain, [0], [0])))


# --- Core ML payloads ---------------------------------------------------------------------

MODEL = "model.mlpackage/Data/com.apple.CoreML/model.mlmodel"
MANIFEST = "model.mlpackage/Manifest.json"


def _coreml_files() -> dict[str, bytes]:
    from tests.support.pte_writer import coreml_folder

    _, segments = program_json(EXAMPLES / f"{COREML}.pte")
    return coreml_folder(segments[1])


def _with_coreml(
    folder: Path, payload: bytes, edit: Callable[[dict[str, Any]], None] | None = None
) -> Path:
    program, segments = program_json(EXAMPLES / f"{COREML}.pte")
    segments[1] = payload
    if edit is not None:
        edit(program)
    return write_program(program, segments, _program(folder, COREML))


def _model() -> Any:
    from coremltools.proto import Model_pb2

    model = Model_pb2.Model()
    model.ParseFromString(_coreml_files()[MODEL])
    return model


def _number(message: Any, field: str) -> int:
    return int(message.DESCRIPTOR.fields_by_name[field].number)


def _with_block(model: Any, block_tail: bytes, program_tail: bytes = b"") -> bytes:
    """The model's specification with `block_tail` (wire bytes of Block fields) after its main
    function's block and `program_tail` after its program: the messages around are rebuilt with
    their lengths, as protobuf writes them."""
    program = model.mlProgram
    function = program.functions["main"]
    opset = function.opset
    block = function.block_specializations[opset]
    block_bytes = block.SerializeToString() + block_tail
    bare_function = type(function)()
    bare_function.CopyFrom(function)
    del bare_function.block_specializations[opset]
    entry = proto_field(1, opset.encode()) + proto_field(2, block_bytes)
    function_bytes = bare_function.SerializeToString() + proto_field(
        _number(function, "block_specializations"), entry
    )
    bare_program = type(program)()
    bare_program.CopyFrom(program)
    del bare_program.functions["main"]
    program_bytes = (
        bare_program.SerializeToString()
        + proto_field(
            _number(program, "functions"), proto_field(1, b"main") + proto_field(2, function_bytes)
        )
        + program_tail
    )
    bare_model = type(model)()
    bare_model.CopyFrom(model)
    bare_model.ClearField("mlProgram")
    return bare_model.SerializeToString() + proto_field(_number(model, "mlProgram"), program_bytes)


def _coreml_ops(model: Any, n: int) -> bytes:
    """The model's main block's operations, repeated to `n` (as Block wire bytes)."""
    block = model.mlProgram.functions["main"].block_specializations[
        model.mlProgram.functions["main"].opset
    ]
    tag = _number(block, "operations")
    ops = [proto_field(tag, op.SerializeToString()) for op in block.operations]
    return b"".join(ops[i % len(ops)] for i in range(n))


@program_case
def case_coreml_many_delegates(folder: Path, scale: int) -> Path:
    """One 1 MB Core ML payload (its block's 19 operations repeated to 700, about 100 ms to
    decode, and its weights padded to 1 MB) referenced by 4,000 x scale delegate entries (each
    entry decoded it again)."""
    from executorch.exir._serialize.generated.executorch_flatbuffer import (
        BackendDelegate,
        BackendDelegateDataReference,
        DataLocation,
    )

    from pte_adapter.container._generated import program_schema as S

    files = _coreml_files()
    files[MODEL] = _with_block(_model(), _coreml_ops(_model(), 700))
    weights = "model.mlpackage/Data/com.apple.CoreML/weights/weight.bin"
    files[weights] += bytes(1_000_000 - len(files[weights]) - len(files[MODEL]))
    entry = BackendDelegate.BackendDelegateT()
    entry.id = "CoreMLBackend"
    entry.processed = BackendDelegateDataReference.BackendDelegateDataReferenceT()
    entry.processed.location = DataLocation.DataLocation.SEGMENT
    entry.processed.index = 1
    entry.compileSpecs = []
    unit = program_tables(entry)

    def edit(fb: bytearray) -> None:
        plan, _ = method_tables(fb)
        repeat_tables(fb, field_position(plan, S.ExecutionPlan.delegates), unit, 4000 * scale)

    program, segments = program_json(EXAMPLES / f"{COREML}.pte")
    segments[1] = flatten_folder(files)
    return write_program(program, segments, _program(folder, COREML), edit)


def _coreml_index(payload: bytes) -> tuple[int, dict[str, Any]]:
    """Where the folder index of a flattened payload starts, and the index."""
    depth = 0
    for pos in range(len(payload) - 1, -1, -1):
        depth += {ord("{"): 1, ord("}"): -1}.get(payload[pos], 0)
        if depth == 0:
            return pos, json.loads(payload[pos:][::-1])
    raise ValueError("no index")


def _reindexed(payload: bytes, nodes: list[dict[str, Any]], extra: bytes = b"") -> bytes:
    start, _ = _coreml_index(payload)
    text = json.dumps({"nodes": nodes}, sort_keys=True, separators=(",", ":")).encode()
    if extra:
        text = text[:-1] + b"," + extra + b"}"
    return payload[:start] + text[::-1]


def coreml_with_folder_chain(folder: Path, depth: int) -> Path:
    """The Core ML example's payload with a chain of `depth` nested folders added under its root
    folder (each named "d"), a file at the bottom, in its folder index."""
    _, segments = program_json(EXAMPLES / f"{COREML}.pte")
    payload = segments[1]
    _, index = _coreml_index(payload)
    nodes = index["nodes"]
    root = nodes.pop()
    first = len(nodes)
    nodes.append(
        {"children": {}, "dataRegion": {"offset": 0, "size": 126}, "kind": 0, "name": "deep.json"}
    )
    for level in range(depth):
        child = "d" if level else "deep.json"
        nodes.append(
            {
                "children": {child: first + level},
                "dataRegion": {"offset": 0, "size": 0},
                "kind": 1,
                "name": "d",
            }
        )
    root["children"]["d"] = len(nodes) - 1
    nodes.append(root)
    return _with_coreml(folder, _reindexed(payload, nodes))


@program_case
def case_coreml_deep_folders(folder: Path, scale: int) -> Path:
    """The Core ML example's folder with a chain of 40,000 x scale nested folders (every level's
    full path was built and kept)."""
    return coreml_with_folder_chain(folder, 40_000 * scale)


@program_case
def case_coreml_index_values(folder: Path, scale: int) -> Path:
    """The Core ML example's folder index padded to 16 MB x scale with tiny JSON values (`0,`)."""
    _, segments = program_json(EXAMPLES / f"{COREML}.pte")
    payload = segments[1]
    _, index = _coreml_index(payload)
    n = 8_000_000 * scale
    extra = b'"padding":[' + b"0," * (n - 1) + b"0]"
    return _with_coreml(folder, _reindexed(payload, index["nodes"], extra))


@program_case
def case_coreml_many_constants(folder: Path, scale: int) -> Path:
    """20,000 x scale Core ML constants in the main block, each naming the last of 2,000 weight
    files (each constant scanned the file list)."""
    from coremltools.proto import MIL_pb2

    files = _coreml_files()
    blob = (
        (0xDEADBEEF).to_bytes(4, "little") + (1).to_bytes(4, "little") + (4).to_bytes(8, "little")
    )
    blob += (64).to_bytes(8, "little") + bytes(44)
    for i in range(2000):
        files[f"model.mlpackage/Data/com.apple.CoreML/weights/w{i:04d}.bin"] = blob
    op = MIL_pb2.Operation(type="const")
    out = op.outputs.add()
    out.name = "c"
    out.type.tensorType.dataType = MIL_pb2.FLOAT32
    out.type.tensorType.rank = 1
    out.type.tensorType.dimensions.add().constant.size = 1
    value = op.attributes["val"]
    value.blobFileValue.fileName = "@model_path/weights/w1999.bin"
    value.blobFileValue.offset = 0
    model = _model()
    main = model.mlProgram.functions["main"]
    block = main.block_specializations[main.opset]
    tag = _number(block, "operations")
    files[MODEL] = _with_block(model, proto_field(tag, op.SerializeToString()) * (20_000 * scale))
    order = sorted(files, key=lambda p: (p != MODEL, p))  # the weights last: each lookup scans all
    return _with_coreml(folder, flat_folder({p: files[p] for p in order}))


@program_case
def case_coreml_million_ops(folder: Path, scale: int) -> Path:
    """A million x scale empty 2-byte operations after the Core ML example's main block's own."""
    model = _model()
    block = model.mlProgram.functions["main"].block_specializations[
        model.mlProgram.functions["main"].opset
    ]
    empty = varint(_number(block, "operations") << 3 | 2) + b"\0"
    files = _coreml_files()
    files[MODEL] = _with_block(model, empty * (1_000_000 * scale))
    return _with_coreml(folder, flatten_folder(files))


@program_case
def case_coreml_function_without_value(folder: Path, scale: int) -> Path:
    """Core ML functions map entries with a name and no function (scale: that many)."""
    model = _model()
    tail = b"".join(
        proto_field(_number(model.mlProgram, "functions"), proto_field(1, f"broken{i}".encode()))
        for i in range(scale)
    )
    files = _coreml_files()
    files[MODEL] = _with_block(model, b"", tail)
    return _with_coreml(folder, flatten_folder(files))


@program_case
def case_coreml_root_identifier_list(folder: Path, scale: int) -> Path:
    """A Core ML manifest whose `rootModelIdentifier` is a list (of `scale` identifiers)."""
    files = _coreml_files()
    manifest = json.loads(files[MANIFEST])
    manifest["rootModelIdentifier"] = [manifest["rootModelIdentifier"]] * scale
    files[MANIFEST] = json.dumps(manifest).encode()
    return _with_coreml(folder, flatten_folder(files))


# --- programs -----------------------------------------------------------------------------


@program_case
def case_delegate_many_calls(folder: Path, scale: int) -> Path:
    """The Vulkan example's first delegate called 100,000 x scale times (each call had its own
    copy of the delegate's graph)."""
    program, segments = program_json(EXAMPLES / f"{VULKAN}.pte")
    unit = instructions_unit(("delegate", 0, [0, 1]))
    return write_program(
        program, segments, _program(folder, VULKAN), repeated_chain(unit, 100_000 * scale)
    )


def ethosu_islands(program: dict[str, Any]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The Ethos-U example's call of its first delegate, and its CPU island (dequantize, the
    average pool, quantize) with the call of the second delegate after it."""
    chain = program["execution_plan"][0]["chains"][0]["instructions"]
    return chain[:2], chain[2:6]


@program_case
def case_huge_dims_islands(folder: Path, scale: int) -> Path:
    """80 x scale CPU islands (the Ethos-U example's average pool between its two partitions,
    repeated) whose tensors have eight dimensions of 2^31 - 1 (the what-if priced them with
    uncapped products)."""
    program, segments = program_json(EXAMPLES / f"{ETHOSU}.pte")
    head, island = ethosu_islands(program)
    plan = program["execution_plan"][0]
    plan["chains"][0]["instructions"] = head + island * (80 * scale)
    for value in plan["values"]:
        if value["val_type"] == "Tensor":
            value["val"]["sizes"] = [2**31 - 1] * 8
            value["val"]["dim_order"] = list(range(8))
    return write_program(program, segments, _program(folder, ETHOSU))


def ethosu_with_islands(folder: Path, n: int) -> Path:
    """The Ethos-U example with `n` CPU islands: its average pool and a call of its second
    delegate, repeated after the call of its first."""
    program, segments = program_json(EXAMPLES / f"{ETHOSU}.pte")
    head, island = ethosu_islands(program)
    program["execution_plan"][0]["chains"][0]["instructions"] = head
    pool, call = island[1]["instr_args"], island[3]["instr_args"]
    unit = instructions_unit(
        ("kernel", pool["op_index"], pool["args"]),
        ("delegate", call["delegate_index"], call["args"]),
    )
    return write_program(program, segments, _program(folder, ETHOSU), repeated_chain(unit, n))


@program_case
def case_many_islands(folder: Path, scale: int) -> Path:
    """40,000 x scale CPU islands (the what-if copied the partition list per island)."""
    return ethosu_with_islands(folder, 40_000 * scale)


@program_case
def case_link_names(folder: Path, scale: int) -> Path:
    """CPU operator names and Vulkan operator names that Model Explorer would draw as links (a
    URL, a markdown link, a short link; scale: each repeated), shown as node labels."""
    program, segments = program_json(EXAMPLES / f"{VULKAN}.pte")
    plan = program["execution_plan"][0]
    names = list(LINK_NAMES)
    for k, op in enumerate(plan["operators"]):
        op["name"] = names[k % len(names)] * scale
    values = [vk_tensor([1, 8])]
    chain = [{"node_id": i, "name": name, "args": [0, 0]} for i, name in enumerate(names * scale)]
    segments[1] = vulkan_payload(vk_graph(values, chain, [0], [0]))
    return write_program(program, segments, _program(folder, VULKAN))


@program_case
def case_link_folders(folder: Path, scale: int) -> Path:
    """The Core ML example with files in folders named like links (`go/...`, a markdown link),
    its delegate called twice (so its views are graphs of their own, namespaced by the folders
    from the file alone), 2 x scale files in each."""
    files = _coreml_files()
    for i in range(2 * scale):  # two: a folder of one file is not drawn as a layer
        files[f"go/evil.example/{i}.json"] = b"{}"
        files[f"[download](evil.example)/{i}.json"] = b"{}"
    program, segments = program_json(EXAMPLES / f"{COREML}.pte")
    segments[1] = flatten_folder(files)
    chain = program["execution_plan"][0]["chains"][0]["instructions"]
    chain.append(chain[0])
    return write_program(program, segments, _program(folder, COREML))


@program_case
def case_fit_huge_sizes(folder: Path, scale: int) -> Path:
    """`fit` given sizes of 400 x scale nines and sizes just above 2^53 (a float rounds them)."""
    pte = _program(folder, ETHOSU)
    pte.write_bytes((EXAMPLES / f"{ETHOSU}.pte").read_bytes())
    return pte


EXTRA_COMMANDS["fit_huge_sizes"] = (
    ("fit", "--sram", "9" * 400, "{pte}"),
    ("fit", "--flash", str(2**53 + 1), "--sram", str(2**53 + 1), "{pte}"),
    ("fit", "--json", "--sram", "1e400", "{pte}"),
)
