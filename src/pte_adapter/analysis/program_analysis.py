"""Everything the adapter works out about a program, computed once, in one typed result.

`analyse(program)` runs each analysis once per method — dataflow and partitions, role ids, the
ETRecord's layers, the partitioners' reasons, blocks, the NPU estimate, the memory picture, the
numbers — and, with an ETDump, places its events on the same partitions. Every view (the Model Explorer graphs, `summary`
text and JSON, `check`, `diff`, `size`, `profile`, the node data providers) reads this result and
never calls an analysis itself. The byte breakdown (`size`) walks the whole file, so it is made on
first use and kept.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from pte_adapter.analysis.blocks import Block, BlockRun, block_runs, fold_partitions
from pte_adapter.analysis.constants import ConstantValue, MethodConstants, method_constants
from pte_adapter.analysis.deployment import DeploymentMap, deployment_map, program_runner
from pte_adapter.analysis.memory import MethodMemory, method_memory
from pte_adapter.analysis.needs import (
    KernelKey,
    RuntimeNeeds,
    merge_needs,
    method_kernel_keys,
    method_needs,
)
from pte_adapter.analysis.npu_estimate import MethodEstimate, method_estimate
from pte_adapter.analysis.partitions import MethodPartitions, partition_method
from pte_adapter.analysis.profile.time_scale import NANOSECONDS, TimeScale
from pte_adapter.analysis.roles import instruction_role_ids, partition_roles
from pte_adapter.analysis.source import (
    MethodSource,
    PartitionSource,
    ProgramSource,
    partition_sources,
)
from pte_adapter.analysis.source_match import match_source
from pte_adapter.analysis.summary import MethodSummary, method_summary
from pte_adapter.analysis.what_if import MethodWhatIf, add_measured_time, method_what_if
from pte_adapter.analysis.why import Reason, why_not_delegated
from pte_adapter.backends import Runner
from pte_adapter.errors import PteFormatError, detached
from pte_adapter.program.model import Method, Program

# What serves only a side file (a bundle's tests, an ETDump's profile, the numeric gap) and the
# byte breakdown are imported where they are used, when the program has it: a conversion of a
# program alone does not pay for them (issue 49; tests/project/test_dependencies.py).
if TYPE_CHECKING:
    from pte_adapter.analysis.bundle import BundleAnalysis, MethodTests
    from pte_adapter.analysis.numerics.rows import MethodNumerics, ProgramNumerics
    from pte_adapter.analysis.profile.join import MethodProfile, ProgramProfile
    from pte_adapter.analysis.profile.measure import MethodMeasurement
    from pte_adapter.analysis.profile.report_types import ProfileSummary
    from pte_adapter.analysis.size import SizeReport
    from pte_adapter.container.etdump import ETDump


@dataclass
class MethodAnalysis:
    method: Method
    partitions: MethodPartitions  # dataflow, partitions and islands, crossings
    roles: list[str]  # per partition: its role, stable across re-exports (`roles.py`)
    instruction_ids: list[str]  # per instruction: its role id
    source: MethodSource | None  # the ETRecord's layers, when one belongs to the program
    partition_sources: list[PartitionSource]  # per partition: layers covered, causes
    reasons: list[Reason]  # why each CPU compute kernel was not delegated
    blocks: list[Block]  # consecutive partitions folded together; [] for a small method
    estimate: MethodEstimate | None  # the NPU estimate and the cost of the split
    memory: MethodMemory  # lifetimes of planned tensors, live bytes, the peak, NPU scratch
    summary: MethodSummary  # the numbers
    # The constant values on its inputs and outputs; for a method without instructions, what it
    # returns (analysis/constants.py).
    constants: MethodConstants = field(default_factory=MethodConstants)
    profile: MethodProfile | None = None  # measured runs, when an ETDump was given
    measured: MethodMeasurement | None = None  # their times, when the method ran
    tests: MethodTests | None = None  # its bundled test cases, when read from a bundle
    # What fixing each CPU island would buy, and fixing them all (analysis/what_if.py).
    what_if: MethodWhatIf | None = None
    # Each KernelCall's kernel key (dtypes and dim orders), and the kernels and backends the
    # method needs from a runtime (analysis/needs.py).
    kernel_keys: dict[int, KernelKey] = field(default_factory=dict)
    needs: RuntimeNeeds = field(default_factory=RuntimeNeeds)
    # Consecutive blocks grouped once more when there are many (`analysis/blocks.py`).
    block_runs: list[BlockRun] = field(default_factory=list)
    # The numeric gap of a recorded run (analysis/numerics/), when it was asked for.
    numerics: MethodNumerics | None = None

    @property
    def name(self) -> str:
        return self.method.name

    @property
    def is_constant(self) -> bool:
        """A method without instructions: it only returns values stored in the file (an LLM
        export's `get_max_seq_len`, `use_kv_cache`, ...)."""
        return not self.method.instructions


@dataclass
class ProgramAnalysis:
    program: Program
    methods: list[MethodAnalysis]
    source: ProgramSource | None  # the ETRecord used (None: none, or it did not belong)
    problems: list[str]  # the program's, then the side files'
    # What each method without instructions returns, in the program's order (the LLM export's
    # configuration: `get_max_seq_len` -> 128).
    constant_methods: dict[str, ConstantValue] = field(default_factory=dict)
    # What was noticed that is not a problem: a debug buffer beside the ETDump, which only the
    # numeric gap reads (api/sidefiles.py).
    notes: list[str] = field(default_factory=list)
    profile: ProgramProfile | None = None
    # `pte-adapter profile`'s numbers (analysis/profile/summary.py), with the profile.
    profile_summary: ProfileSummary | None = None
    # An ETDump that could not be used (corrupt, or recorded running another program).
    profile_error: PteFormatError | None = None
    # The BundledProgram the program came from: its test cases per method (`tests` of each).
    bundle: BundleAnalysis | None = None
    # The deployment memory map: what lands in which memory, the runner's pool sizes (fit); None
    # for a program of a phone or desktop backend (`deployment_skipped` says why).
    deployment: DeploymentMap | None = None
    deployment_skipped: str = ""
    # The kernels and backends the program needs from a runtime: its methods' merged.
    needs: RuntimeNeeds = field(default_factory=RuntimeNeeds)
    # The numeric gap of a recorded run (`api/numerics.py`), when asked for; or why there is none.
    numerics: ProgramNumerics | None = None
    numerics_error: PteFormatError | None = None
    _size: SizeReport | None = field(default=None, repr=False)

    def method(self, name: str) -> MethodAnalysis | None:
        return next((m for m in self.methods if m.name == name), None)

    def deployment_under(self, runner: Runner) -> DeploymentMap:
        """The memory map under this runner: the one made already when it is the program's,
        else made now (a board or a memory size asked for on a phone or desktop program)."""
        if self.deployment is not None and self.deployment.runner == runner:
            return self.deployment
        return deployment_map(
            self.program,
            {m.name: m.partitions for m in self.methods},
            {m.name: m.memory for m in self.methods},
            runner,
        )

    def size(self) -> SizeReport:
        """The byte breakdown of the file (made on first use)."""
        if self._size is None:
            from pte_adapter.analysis.bundle_size import file_size_report

            self._size = file_size_report(self.program)
        return self._size


def analyse_method(
    method: Method, source: MethodSource | None, program: Program | None = None
) -> MethodAnalysis:
    """One method's analysis; with its program, constant tensors' values are read too."""
    parts = partition_method(method)
    reasons = why_not_delegated(method, parts, source)
    psources = partition_sources(method, source, parts)
    estimate = method_estimate(method, parts)
    constants = method_constants(program, method)
    memory = method_memory(method, parts)
    summary = method_summary(method, parts, source, psources, reasons, estimate, memory)
    summary.problems.extend(constants.problems)
    roles = partition_roles(parts)
    keys, key_problems = method_kernel_keys(method)
    label = str(program.path) if program is not None and program.path is not None else ""
    blocks = fold_partitions(method, parts, source) or []
    return MethodAnalysis(
        method=method,
        partitions=parts,
        roles=roles,
        instruction_ids=instruction_role_ids(method, parts, roles),
        source=source,
        partition_sources=psources,
        reasons=reasons,
        blocks=blocks,
        estimate=estimate,
        memory=memory,
        summary=summary,
        constants=constants,
        what_if=method_what_if(method, parts, reasons, psources),
        kernel_keys=keys,
        needs=method_needs(label, method, parts, source, keys, key_problems),
        block_runs=block_runs(blocks),
    )


def _times_us(measured: MethodMeasurement, scale: TimeScale) -> dict[int, float]:
    """Each instruction's median measured time in microseconds; {} when the unit is cycles
    without a clock."""
    ms = scale.ms_per_unit
    if ms is None:
        return {}
    return {i: t.stats.median * ms * 1000 for i, t in measured.instruction_times.items()}


def analyse(
    program: Program,
    etdump: ETDump | None = None,
    *,
    time_scale: TimeScale = NANOSECONDS,
) -> ProgramAnalysis:
    """Analyse every method once; with an ETDump, place its events on the result and measure each
    method, its ticks in `time_scale` (`analysis/profile/time_scale.py`: ns, us, ms, or cycles with
    an optional clock; nanoseconds unless given).

    The program's ETRecord (`Program.etrecord`, as `load` found it) is used only when it belongs
    to the program; otherwise one problem says why. An ETDump that cannot be placed is kept as
    `profile_error`, never raised: the program is still analysed."""
    source: ProgramSource | None = None
    problems = list(program.problems)
    if program.etrecord is not None:
        source, mismatch = match_source(program, program.etrecord)
        problems.extend(mismatch)
    methods = [
        analyse_method(m, source.methods.get(m.name) if source else None, program)
        for m in program.methods
    ]
    constants = {m.name: m.constants.returns for m in methods if m.is_constant}
    result = ProgramAnalysis(program, methods, source, problems, constants)
    result.needs = merge_needs([m.needs for m in methods])
    runner, result.deployment_skipped = program_runner(program)
    if runner is not None:
        result.deployment = result.deployment_under(runner)
    if program.bundle is not None:
        from pte_adapter.analysis.bundle import analyse_bundle

        result.bundle = analyse_bundle(program.bundle, program.methods)
        problems.extend(f"bundle: {p}" for p in result.bundle.problems)
        for m in methods:
            m.tests = result.bundle.methods.get(m.name)
    if etdump is not None:
        from pte_adapter.analysis.profile.join import join_profile
        from pte_adapter.analysis.profile.measure import measure_program

        try:
            result.profile = join_profile(program, etdump, {m.name: m.partitions for m in methods})
        except PteFormatError as e:
            result.profile_error = detached(e)
        else:
            name = program.path.name if program.path else ""
            result.profile_summary, measured = measure_program(result.profile, name, time_scale)
            for m in methods:
                m.profile = result.profile.method(m.name)
                m.measured = measured.get(m.name)
                if m.what_if is not None and m.measured is not None:
                    add_measured_time(m.what_if, m.partitions, _times_us(m.measured, time_scale))
    return result
