"""Imports every module that registers oracles (one line per module)."""
from . import exact_oracles  # noqa: F401
from . import lp  # noqa: F401
from . import portfolio  # noqa: F401
from . import approximate  # noqa: F401
from . import anytime  # noqa: F401
from . import search  # noqa: F401
