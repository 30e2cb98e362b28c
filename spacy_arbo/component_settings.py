"""Component settings, written once: a frozen dataclass per component gives the factory's
defaults, its config validation (the factory signature is made from the fields, and a bad
value is one `ConfigSettingError` line naming the component, the setting, the value and what
it takes) and the checks that a value is sensible. The pipeline's config is where settings live; a saved
pipeline keeps them in its `config.cfg`, so `spacy.load(path, config=...)` can change them. Each component
also saves them in its own `cfg`, as spaCy's EntityLinker does: `nlp.from_bytes` keeps the components it
has, made from another config, and only their `cfg` brings back the settings they were saved with.
"""
import dataclasses
import functools
import inspect
import math
import typing
from pathlib import Path
from typing import Any, Callable, Dict, Iterable, Optional, Sequence, Tuple, Type, TypeVar

import srsly
from confection import ConfigValidationError

from .util import ArboError, atomic_path, read_json

S = TypeVar("S")
# What a component's settings are saved as, a JSON file or a bytes field: spaCy's name.
CFG = "cfg"


def setting_defaults(settings: Type[Any]) -> Dict[str, Any]:
    """The fields' defaults, for `Language.factory(default_config=...)`."""
    defaults = {}
    for f in dataclasses.fields(settings):
        if f.default is not dataclasses.MISSING:
            defaults[f.name] = f.default
        elif f.default_factory is not dataclasses.MISSING:  # type: ignore[misc]
            defaults[f.name] = f.default_factory()  # type: ignore[misc]
    return defaults


class ConfigSettingError(ArboError, ConfigValidationError):
    """A bad value in a component's config, as one line: "arbo_linker: top_k takes a positive
    integer; got 0.". spaCy's commands (`spacy assemble`, `spacy train`, `spacy debug config`)
    print a ConfigValidationError as its title and exit 1, where any other error is a traceback;
    spacy-arbo's commands print it as the ArboError it also is."""

    def __init__(self, *, title: str, **_: Any) -> None:  # spaCy re-makes it through `from_error`
        ConfigValidationError.__init__(self, title=title, show_config=False)

    def __str__(self) -> str:
        return self.title or ""


def config_checked(make: Callable) -> Callable:
    """A factory whose bad settings (an ArboError from their checks) raise `ConfigSettingError`
    naming the component, for every way a config is read: `add_pipe`, `spacy.load`, `spacy assemble`, `spacy train`."""

    @functools.wraps(make)
    def checked(*args: Any, **kwargs: Any) -> Any:
        try:
            return make(*args, **kwargs)
        except ConfigSettingError:
            raise
        except ArboError as err:
            name, message = kwargs.get("name", ""), str(err)
            raise ConfigSettingError(title=message if message.startswith(f"{name}:") else f"{name}: {message}") \
                from None

    checked.__signature__ = inspect.signature(make)  # type: ignore[attr-defined]  # spaCy reads the names
    return checked


def config_error_line(err: ConfigValidationError) -> str:
    """confection's own validation error (a setting spaCy's config does not know, a value of the
    wrong type for an architecture) as one line: where, and what is wrong, without the config."""
    found = [f"{' -> '.join(str(part) for part in error.get('loc', []))}: {error.get('msg')}" for error in err.errors or []]
    return "; ".join(found) or (err.title or "config validation error")


def with_setting_parameters(settings: Type[Any], leading: Sequence[Tuple[str, Any]]) -> Callable:
    """Give a `make(nlp, name, ..., **settings)` factory an explicit signature, so that spaCy's
    config knows every setting; their values are checked by the settings class, whose errors
    `config_checked` turns into one line (confection's own check of the fields' types would
    print the whole config)."""

    def decorate(make: Callable) -> Callable:
        params = [inspect.Parameter(n, inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=a) for n, a in leading]
        params += [inspect.Parameter(f.name, inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=Any)
                   for f in dataclasses.fields(settings)]
        make.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
        return config_checked(make)

    return decorate


def replace_settings(current: S, changes: Dict[str, Any], component: str) -> S:
    """`current` with `changes`, re-checked; unknown names are an error naming them."""
    known = {f.name for f in dataclasses.fields(current)}  # type: ignore[arg-type]
    unknown = sorted(set(changes) - known)
    if unknown:
        raise ArboError(f"Unknown {component} settings {unknown}; known: {sorted(known)}.")
    return dataclasses.replace(current, **changes)  # type: ignore[type-var]


def check_types(settings: Any) -> None:
    """Each field's value against its annotation, so a bad value (`threshold = "abc"`)
    is an error naming the setting rather than a failure deep inside the component."""
    hints = typing.get_type_hints(type(settings))
    for f in dataclasses.fields(settings):
        value = getattr(settings, f.name)
        if not _matches(value, hints[f.name]):
            raise ArboError(f"{f.name} takes {_describe(hints[f.name])}; got {value!r}.")


def is_number(value: Any) -> bool:
    """A JSON or config number: true and false read as Python ints, but are not numbers."""
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _matches(value: Any, annotation: Any) -> bool:
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is typing.Union:
        return any(_matches(value, a) for a in args)
    if origin in (list, tuple):
        return isinstance(value, (list, tuple)) and all(_matches(v, args[0]) for v in value)
    if origin is dict:
        return isinstance(value, dict)
    if annotation is type(None):
        return value is None
    if annotation is float:
        return is_number(value) and math.isfinite(value)
    if annotation is int:
        return isinstance(value, int) and not isinstance(value, bool)
    return annotation is Any or isinstance(value, annotation)


def _describe(annotation: Any) -> str:
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is typing.Union:
        return " or ".join(_describe(a) for a in args)
    names = {type(None): "null", float: "a number", int: "an integer", bool: "true or false", str: "a string"}
    if origin in (list, tuple):
        return "a list"
    return names.get(annotation, "a mapping" if origin is dict else str(annotation))


def check_choice(name: str, value: Any, allowed: Iterable[Any]) -> None:
    allowed = tuple(allowed)
    if value not in allowed:
        raise ArboError(f"Unknown {name} {value!r}; expected one of {allowed}.")


def check_at_least(minimum: int, **values: Any) -> None:
    for name, value in values.items():
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
            expected = "a positive integer" if minimum == 1 else f"an integer >= {minimum}"
            raise ArboError(f"{name} takes {expected}; got {value!r}.")


def write_cfg(path: Path, cfg: Dict[str, Any]) -> None:
    """A component's settings, as JSON, written whole or not at all."""
    with atomic_path(path) as tmp:
        srsly.write_json(tmp, cfg)


def read_cfg(path: Path) -> Optional[Dict[str, Any]]:
    """A component's saved settings (None when it was saved without them): a file that is not
    a JSON object of setting names is an error naming it, as any damaged file of a pipeline is."""
    if not path.exists():
        return None
    cfg = read_json(path)
    if not isinstance(cfg, dict):
        raise ArboError(f"{path}: not a component's settings (a JSON object of setting names); "
                        "the pipeline was not saved whole.")
    return cfg


def store_in_config(nlp: Any, component: Any, changes: Dict[str, Any]) -> None:
    """Write changed settings into the pipeline's config too, so that `nlp.to_disk` keeps
    them (a saved pipeline's settings live in its config.cfg)."""
    if nlp is not None and component.name in nlp.component_names and nlp.get_pipe(component.name) is component:
        nlp.get_pipe_config(component.name).update(changes)
