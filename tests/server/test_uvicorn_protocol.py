"""``GuardedH11Protocol`` against the installed uvicorn's private h11 protocol.

The guard's connection protocol (``guard/connections.py``) subclasses uvicorn's
``H11Protocol``, overrides four of its methods and reads its state; none of that is
uvicorn's public API, so ``pyproject.toml`` bounds uvicorn to the minor releases
checked. The counterpart here is the installed uvicorn's own source: the names the
subclass reads from ``self`` (found in the subclass's source, so a new one is checked
too) must be ones uvicorn's protocol defines, the methods it overrides or calls must
keep their signatures, the nested state it reads (``self.cycle.keep_alive``,
``self.flow.read_paused`` ...) must be set by uvicorn's classes, and no private name of
the subclass may shadow one of uvicorn's. An upgrade past the bound that changes any of
it fails here before a connection misbehaves.
"""

from __future__ import annotations

import ast
import inspect
import textwrap

import h11
from uvicorn.protocols.http.flow_control import FlowControl
from uvicorn.protocols.http.h11_impl import H11Protocol, RequestResponseCycle

from metacortex.guard.connections import GuardedH11Protocol

# What the subclass overrides of uvicorn's, and what it calls, with their parameters.
OVERRIDDEN = {
    "connection_made": ["self", "transport"],
    "data_received": ["self", "data"],
    "on_response_complete": ["self"],
    "connection_lost": ["self", "exc"],
}
SIGNATURES = {
    **OVERRIDDEN,
    "_unset_keepalive_if_required": ["self"],
    "timeout_keep_alive_handler": ["self"],
}
# uvicorn's attributes the subclass sets on purpose: the app (wrapped so a closing
# response says so) and the keep-alive timer (re-armed after a refused body is drained).
REPLACED = {"app", "timeout_keep_alive_task"}
# The classes of uvicorn's (and h11's) state objects whose attributes the subclass reads.
STATE_CLASSES: dict[str, type] = {
    "cycle": RequestResponseCycle,
    "flow": FlowControl,
    "conn": h11.Connection,
}


def _tree(cls: type) -> ast.AST:
    return ast.parse(textwrap.dedent(inspect.getsource(cls)))


def _self_attributes(cls: type) -> tuple[set[str], set[str]]:
    """(names assigned as ``self.X``, names read as ``self.X``) in ``cls``'s own source."""
    assigned: set[str] = set()
    read: set[str] = set()
    for node in ast.walk(_tree(cls)):
        if isinstance(node, ast.Attribute | ast.AnnAssign) and _on_self(node):
            target = node.target if isinstance(node, ast.AnnAssign) else node
            assert isinstance(target, ast.Attribute)
            is_store = isinstance(node, ast.AnnAssign) or isinstance(node.ctx, ast.Store)
            (assigned if is_store else read).add(target.attr)
    return assigned, read


def _on_self(node: ast.Attribute | ast.AnnAssign) -> bool:
    target = node.target if isinstance(node, ast.AnnAssign) else node
    return (
        isinstance(target, ast.Attribute)
        and isinstance(target.value, ast.Name)
        and target.value.id == "self"
    )


def _nested_reads(cls: type) -> set[tuple[str, str]]:
    """``(X, Y)`` for every ``self.X.Y`` in ``cls``'s own source."""
    return {
        (node.value.attr, node.attr)
        for node in ast.walk(_tree(cls))
        if isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Attribute)
        and isinstance(node.value.value, ast.Name)
        and node.value.value.id == "self"
    }


def _own_names(cls: type) -> set[str]:
    """What ``cls`` itself defines (methods, class attributes) and assigns on ``self``."""
    return set(vars(cls)) | set(cls.__annotations__) | _self_attributes(cls)[0]


def _provided_by(cls: type) -> set[str]:
    """Every name an instance of ``cls`` has: its classes' members and what they assign."""
    names = set(dir(cls))
    for klass in cls.__mro__:
        if klass.__module__.startswith(("uvicorn", "h11")):
            names |= _self_attributes(klass)[0]
    return names


def test_every_uvicorn_name_the_guarded_protocol_reads_exists_in_the_installed_uvicorn() -> None:
    ours = _own_names(GuardedH11Protocol) - REPLACED
    _assigned, read = _self_attributes(GuardedH11Protocol)
    borrowed = read - ours
    assert borrowed, "the subclass reads uvicorn's state: the source scan found none"
    assert borrowed - _provided_by(H11Protocol) == set()


def test_the_methods_it_overrides_or_calls_keep_their_signatures_in_the_installed_uvicorn() -> None:
    found = {
        name: list(inspect.signature(getattr(H11Protocol, name)).parameters)
        for name in SIGNATURES
        if hasattr(H11Protocol, name)
    }
    assert found == SIGNATURES


def test_the_state_it_reads_through_uvicorns_objects_is_set_by_their_classes() -> None:
    nested = {
        (owner, name) for owner, name in _nested_reads(GuardedH11Protocol) if owner in STATE_CLASSES
    }
    assert {owner for owner, _ in nested} == set(STATE_CLASSES)
    missing = {
        (owner, name) for owner, name in nested if name not in _provided_by(STATE_CLASSES[owner])
    }
    assert missing == set()


def test_no_private_name_of_the_guarded_protocol_shadows_one_of_uvicorns() -> None:
    """Only the four overridden methods, ``__init__`` and the two replaced attributes
    are shared: a name uvicorn adds later that the subclass also uses is caught."""
    shared = (_own_names(GuardedH11Protocol) & _provided_by(H11Protocol)) - set(vars(object))
    dunder = {name for name in shared if name.startswith("__") and name.endswith("__")}
    assert shared - dunder == OVERRIDDEN.keys() | REPLACED
