"""Package names imported on first use (PEP 562), so that importing a package, as the command
line and spaCy's entry points do, loads no spaCy, torch or numpy for a name it never touches."""
import sys
from importlib import import_module
from typing import Any, Callable, Dict, List, Tuple


def lazy_exports(package: str, exports: Dict[str, str]) -> Tuple[Callable[[str], Any], Callable[[], List[str]]]:
    """A package's `__getattr__` and `__dir__` for `exports`, name -> the relative module it comes from."""

    def __getattr__(name: str) -> Any:
        if name not in exports:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(import_module(exports[name], package), name)

    def __dir__() -> List[str]:
        return sorted(getattr(sys.modules[package], "__all__", exports))

    return __getattr__, __dir__
