"""The type stubs of the compiled modules (``fwcore/*.pyi``) say what their ``.pyx``
sources define: every ``def`` / ``cpdef`` function with its arguments (memoryviews as
NumPy arrays, C numbers as Python numbers), every ``cdef class`` and its ``def`` methods,
and the module's constants. They are generated from the sources by `stub_of`;

    python tests/test_stubs.py        # rewrites fwcore/*.pyi from fwcore/*.pyx

and this test fails when one drifts from its source (mypy reads the stubs: the package
ships ``py.typed``)."""
import re
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "fwcore"
SOURCES = sorted(PACKAGE.glob("*.pyx"))

#: C scalar types and the Python type a caller passes
_SCALARS = {"int": "int", "long": "int", "long long": "int", "Py_ssize_t": "int",
            "int32_t": "int", "int64_t": "int", "uint64_t": "int", "size_t": "int",
            "double": "float", "float": "float", "bint": "bool", "object": "Any",
            "str": "str", "bytes": "bytes", "list": "list[Any]", "tuple": "tuple[Any, ...]",
            "dict": "dict[Any, Any]"}
_HEADER = ('"""Type stubs of the compiled module fwcore.{name}, generated from {name}.pyx by\n'
           'tests/test_stubs.py (do not edit by hand)."""\n'
           "from typing import Any\n\nimport numpy as np\n")


def _signatures(text, indent=""):
    """(name, argument text) of each ``def`` / ``cpdef`` at ``indent``, arguments joined
    across lines."""
    pattern = re.compile(rf"^{indent}(?:cpdef|def) +(?:[\w\[\]:, ]+ +)?(\w+)\((.*?)\)"
                         r"(?: +(?:noexcept|except [^:]+))?:", re.S | re.M)
    return [(m.group(1), " ".join(m.group(2).split())) for m in pattern.finditer(text)]


def _split(arguments):
    """The arguments of a signature, split at top-level commas."""
    parts, depth, current = [], 0, ""
    for ch in arguments:
        depth += (ch in "([") - (ch in ")]")
        if ch == "," and depth == 0:
            parts.append(current.strip())
            current = ""
        else:
            current += ch
    if current.strip():
        parts.append(current.strip())
    return parts


def _argument(text, classes):
    """``name: type`` (``= ...`` for a default) of one Cython argument."""
    default = ""
    if "=" in text:
        text, _ = text.split("=", 1)
        default = " = ..."
    words = text.replace("const ", "").strip()
    if words in ("self", "cls") or words.startswith("*"):
        return words
    typed = re.match(r"(.*?)\s*(\[[^\]]*\])?\s+(\w+)$", words)
    if typed is None:  # untyped
        return f"{words}: Any{default}"
    ctype, view, name = typed.groups()
    if view:
        kind = "np.ndarray"
    else:
        kind = _SCALARS.get(ctype) or (ctype if ctype in classes else "Any")
    if default.endswith("...") and re.search(rf"{re.escape(name)}\s*=\s*None", text + default):
        kind = f"{kind} | None"
    return f"{name}: {kind}{default}"


def stub_of(source):
    """The ``.pyi`` text of one ``.pyx`` ``source``."""
    text = source.read_text(encoding="utf-8")
    classes = re.findall(r"^cdef class (\w+)", text, re.M)
    imported = re.findall(r"^from \.(\w+) cimport ([A-Z]\w*)$", text, re.M)
    lines = [_HEADER.format(name=source.stem)]
    lines += [f"from .{module} import {cls}" for module, cls in imported]
    classes += [cls for _, cls in imported]
    constants = re.findall(r"^([A-Z][A-Z0-9_]*(?:, *[A-Z][A-Z0-9_]*)*) = (.+)$", text, re.M)
    for targets, values in constants:  # ``A = 1`` and ``A, B = 0, 1`` alike
        names = [t.strip() for t in targets.split(",")]
        parts = _split(values) if len(names) > 1 else [values]
        for k, name in enumerate(names):
            value = parts[k].strip() if len(parts) == len(names) else ""  # else unpacked
            kind = ("int" if re.fullmatch(r"-?[\d_]+", value) else
                    "float" if re.fullmatch(r"-?[\d_.]+(e-?\d+)?", value) else "Any")
            lines.append(f"{name}: {kind}")
    declared = source.with_suffix(".pxd")
    header = declared.read_text(encoding="utf-8") if declared.exists() else ""
    for cls in re.findall(r"^cdef class (\w+)", text, re.M):
        body = text.split(f"cdef class {cls}", 1)[1].split("\n", 1)[1]
        body = re.split(r"^\S", body, maxsplit=1, flags=re.M)[0]
        if f"cdef class {cls}" in header:  # its attributes, declared in the .pxd
            body = header.split(f"cdef class {cls}", 1)[1] + body
        methods = [(n, a) for n, a in _signatures(body, "    ")]
        lines.append(f"\nclass {cls}:")
        for ctype, name in re.findall(r"^    cdef (?:readonly|public) (.*?)(\w+)$", body, re.M):
            lines.append(f"    {name}: {'np.ndarray' if '[' in ctype else 'Any'}")
        for name, arguments in methods or [("__init__", "self")]:
            args = ", ".join(_argument(a, classes) for a in _split(arguments))
            returns = "None" if name == "__init__" else "Any"
            lines.append(f"    def {name}({args}) -> {returns}: ...")
    for name, arguments in _signatures(text):
        args = ", ".join(_argument(a, classes) for a in _split(arguments))
        lines.append(f"\ndef {name}({args}) -> Any: ...")
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("source", SOURCES, ids=lambda p: p.name)
def test_each_compiled_module_has_its_generated_stub(source):
    stub = source.with_suffix(".pyi")
    assert stub.exists(), f"{stub.name} is missing: python tests/test_stubs.py writes it"
    assert stub.read_text(encoding="utf-8") == stub_of(source), (
        f"{stub.name} differs from what {source.name} defines: python tests/test_stubs.py")


if __name__ == "__main__":
    for source in SOURCES:
        source.with_suffix(".pyi").write_text(stub_of(source), encoding="utf-8")
        print(f"wrote {source.with_suffix('.pyi')}", file=sys.stderr)
