"""Conditional hyperparameters: a space module's `conditions` say when a key of its param_space is
searched at all ("momentum only with sgd, beta2 only with adam, width_3 only with 3 layers").

    param_space = {"optimizer": tune.choice(["sgd", "adam"]), "momentum": tune.uniform(0.0, 0.99), ...}
    conditions = {"momentum": {"optimizer": "sgd"}, "width_3": {"layers": [3, 4]}}

Each entry maps a key to the values of other keys (its parents) it needs: one value, or a list of any
of them; several parents must all match. A key whose condition does not hold is inactive: it is not in
the trial's config at all, so no searcher spends trials on it, the trial's code never sees it, and the
report leaves its cell empty. The conditions are read here, Ray-free, as `Conditions`; each searcher gets
them compiled in tuner/search/conditional.py.

Parents are keys with a known set of values (tune.choice, tune.grid_search or a constant), so a
condition can be checked against them before any trial starts.
"""

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from tuner.errors import TunerError
from tuner.spec.param_space import finite_values, is_constant, is_group

EXAMPLE = "{'momentum': {'optimizer': 'sgd'}}"


@dataclass(frozen=True)
class Condition:
    """`key` is active only when `parent` takes one of `values`."""

    key: str
    parent: str
    values: tuple[Any, ...]

    def holds(self, config: Mapping[str, Any]) -> bool:
        return self.parent in config and any(_same(config[self.parent], value) for value in self.values)


def _same(a: Any, b: Any) -> bool:
    # True == 1 in Python; a bool parent and a number condition (or back) is no match.
    return bool(a == b) and _is_bool(a) == _is_bool(b)


def _is_bool(value: Any) -> bool:
    # numpy's bool (BOHB's samples hold it) is named bool_ before numpy 2, bool since
    return isinstance(value, bool) or (type(value).__module__ == "numpy" and type(value).__name__ in ("bool", "bool_"))


@dataclass(frozen=True)
class Conditions:
    """The checked conditions of one param_space; empty for a plain space."""

    items: tuple[Condition, ...] = ()
    order: tuple[str, ...] = ()  # every param_space key, each parent before the keys that need it

    def __bool__(self) -> bool:
        return bool(self.items)

    @property
    def conditional(self) -> set[str]:
        return {item.key for item in self.items}

    @property
    def parents(self) -> set[str]:
        return {item.parent for item in self.items}

    def of(self, key: str) -> list[Condition]:
        return [item for item in self.items if item.key == key]

    def active(self, key: str, config: Mapping[str, Any]) -> bool:
        """Whether `key` is searched given the values chosen so far (its parents' among them; a parent
        that is itself inactive is absent from `config`, so its children are inactive too)."""
        return all(item.holds(config) for item in self.of(key))

    def prune(self, config: Mapping[str, Any]) -> dict[str, Any]:
        """`config` without its inactive keys, decided parents first."""
        kept: dict[str, Any] = {}
        for key in [*self.order, *(k for k in config if k not in self.order)]:
            if key in config and self.active(key, kept):
                kept[key] = config[key]
        return kept

    def components(self) -> list[list[str]]:
        """The keys in groups that depend on nothing outside themselves (each in `order`), conditional
        keys with their parents; the keys no condition mentions are a group each."""
        group = {key: key for key in self.order}

        def root(key: str) -> str:
            while group[key] != key:
                key = group[key]
            return key

        for item in self.items:
            group[root(item.key)] = root(item.parent)
        found: dict[str, list[str]] = {}
        for key in self.order:
            found.setdefault(root(key), []).append(key)
        return list(found.values())


def read(declared: Any, param_space: Mapping[str, Any]) -> Conditions:
    """The module's `conditions` checked against its param_space; a mistake is one TunerError line."""
    if declared is None:
        return Conditions(order=tuple(param_space))
    if not isinstance(declared, Mapping):
        raise TunerError(f"conditions must be a dict such as {EXAMPLE}, not {type(declared).__name__}")
    if declared and (groups := [key for key, value in param_space.items() if is_group(value)]):
        raise TunerError(
            f"conditions need a flat param_space, and {', '.join(groups)} is a nested group; write its keys "
            "at the top level"
        )
    items = []
    for key, needs in declared.items():
        if not isinstance(needs, Mapping) or not needs:
            raise TunerError(
                f"conditions[{key!r}] must map the keys it depends on to their values, such as {EXAMPLE}, not {needs!r}"
            )
        for name in (key, *needs):
            _check_key(name, param_space)
        for parent, values in needs.items():
            items.append(_condition(key, parent, values, param_space))
    return Conditions(tuple(items), _order(items, list(param_space)))


def _check_key(name: Any, param_space: Mapping[str, Any]) -> None:
    if name not in param_space:
        keys = ", ".join(map(str, param_space)) or "none"
        raise TunerError(f"conditions name {name!r}, which is no key of param_space (its keys: {keys})")


def _condition(key: str, parent: str, values: Any, param_space: Mapping[str, Any]) -> Condition:
    if parent == key:
        raise TunerError(f"conditions: {key!r} depends on itself; a key's condition names other keys")
    wanted = tuple(values) if isinstance(values, (list, tuple, set, frozenset)) else (values,)
    if not wanted:
        raise TunerError(f"conditions[{key!r}][{parent!r}] is empty; give the value(s) of {parent} it needs")
    domain = param_space[parent]
    possible = finite_values(domain)
    if not is_constant(domain):  # a constant parent is one `--set` may have pinned: any value is allowed
        if possible is None:
            raise TunerError(
                f"conditions: {key!r} depends on {parent!r}, which is sampled from a range; what a key depends on "
                f"must be a tune.choice, a tune.grid_search or a constant"
            )
        for value in wanted:
            if not any(_same(value, candidate) for candidate in possible):
                raise TunerError(
                    f"conditions: {key!r} needs {parent}={value!r}, a value {parent} never takes "
                    f"(its values: {', '.join(map(repr, possible))})"
                )
    return Condition(key, parent, wanted)


def _order(items: list[Condition], keys: list[str]) -> tuple[str, ...]:
    """The keys with every parent before its children, in param_space order otherwise; a cycle is an
    error naming it."""
    parents = {key: [item.parent for item in items if item.key == key] for key in keys}
    done: list[str] = []
    visiting: list[str] = []

    def visit(key: str) -> None:
        if key in done:
            return
        if key in visiting:
            cycle = [*visiting[visiting.index(key) :], key]
            raise TunerError(f"conditions form a cycle: {' needs '.join(cycle)}; a key cannot depend on itself")
        visiting.append(key)
        for parent in parents[key]:
            visit(parent)
        visiting.pop()
        done.append(key)

    for key in keys:
        visit(key)
    return tuple(done)
