"""The Model Explorer adapter: `model-explorer --extensions=pte_adapter model.pte`."""

from __future__ import annotations

import atexit
from pathlib import Path
from typing import Any

from model_explorer import Adapter, AdapterMetadata, ModelExplorerGraphs

from pte_adapter import __version__
from pte_adapter.backends import decoded_backends, payload_file_suffixes
from pte_adapter.errors import PteFormatError
from pte_adapter.explorer.cache import GraphCache
from pte_adapter.explorer.convert import convert_with_folders
from pte_adapter.explorer.served import served

# One per server process: re-opening a file whose content and side files did not change returns
# the graphs already made (explorer/cache.py).
CACHE = GraphCache(__version__)
# Let go of the kept graphs as the interpreter starts to exit, by reference counting: left to
# the end, they were walked by every collection the interpreter's teardown runs (a large program's
# graphs are hundreds of thousands of objects: 0.7 s of exit on the 192-layer XNNPACK program,
# 0.1 s without them, 0.3 s when the last request's JSON is still alive too; docs/benchmarks.md,
# issue 49). Everything is still freed, and every finaliser run, as before.
atexit.register(CACHE.clear)


class PteAdapter(Adapter):  # type: ignore[misc]
    """Shows every method of an ExecuTorch program, grouped and coloured by backend."""

    metadata = AdapterMetadata(
        id="pte_adapter",
        name="ExecuTorch .pte adapter",
        description="ExecuTorch programs and bundled programs: methods, instructions, tensors, "
        f"decoded delegate payloads ({', '.join(decoded_backends())}) and bundled test cases, "
        "with NPU/CPU partitions made visible; ETRecords: the exported, edge and graph-map "
        "programs, each node showing where it ran.",
        # "bpte": a BundledProgram (Arm's --bundleio); a bundle named .pte is told by its bytes.
        # Then the bare payload files a backend's record reads (its `file_reader`: ".tosa").
        # "etrecord", "bin": an ETRecord (`<stem>.etrecord`, `<stem>_etrecord.bin`,
        # `etrecord.bin`). Model Explorer picks an adapter by the last suffix, so every `.bin`
        # comes here: one that is not an ETRecord gets one sentence saying so (an adapter
        # loaded earlier that also claims `.bin` stays the default for it: docs/model-explorer.md).
        fileExts=[
            "pte",
            "bpte",
            *(s.lstrip(".") for s in payload_file_suffixes()),
            "etrecord",
            "bin",
        ],
        # No source_repo: the project has no public repository yet, and a made-up URL would
        # send users to the wrong place.
    )

    def __init__(self) -> None:
        super().__init__()

    def convert(self, model_path: str, settings: dict[str, Any]) -> ModelExplorerGraphs:
        # A PteFormatError propagates: Model Explorer shows its message as the conversion error
        # (and nothing is kept), made inert first (`inert_error`).
        try:
            # The same JSON, cheaper for the server to make (explorer/served.py).
            return {"graphs": served(CACHE.get(Path(model_path), convert_with_folders))}
        except PteFormatError as e:
            raise PteFormatError(inert_error(str(e))) from e


# Words of an error message Model Explorer's home page turns into a link (`linkifyErrorMessage`).
_LINKED_WORD = "go/"


def inert_error(message: str) -> str:
    """The message as Model Explorer should show it. Its home page binds a conversion error as
    HTML (`[innerHTML]`, through Angular's sanitizer, which keeps `<img src=...>`: a file named
    `<img src=https://...>x.pte` made the page fetch that URL), and makes a link of each word that
    starts with `go/`. So `&`, `<` and `>` become entities (shown as themselves), and such a word
    gets a zero-width space (`&#8203;`) in front."""
    text = message.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return " ".join(
        f"&#8203;{word}" if word.startswith(_LINKED_WORD) else word for word in text.split(" ")
    )
