"""Every public name is documented: `fwcore.__all__` against the API reference and the
README's method table."""
import re
from pathlib import Path

import fwcore

ROOT = Path(__file__).resolve().parents[1]


def test_every_public_name_is_in_the_reference():
    docs = "".join(p.read_text(encoding="utf-8") for p in (ROOT / "docs").glob("*.rst"))
    documented = set(re.findall(r"\.\. auto\w+:: fwcore\.(\w+)", docs))
    assert [name for name in fwcore.__all__ if name not in documented] == []


def test_every_marginal_method_is_in_the_readme():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert [m for m in fwcore.available_methods() if f'"{m}"' not in readme] == []
