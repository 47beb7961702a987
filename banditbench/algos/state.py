"""A policy's learned state as plain data, so that a checkpoint never has to store (or run) code.

``state_dict()`` returns a tree of plain values only: numpy arrays and scalars, torch tensors, ``None``, bools,
ints, floats, strings, and lists, tuples and dicts of those. It is built from the object's attributes:

- an ``np.random.Generator`` becomes its ``bit_generator.state`` (plain ints), a ``torch.Generator`` its state
  tensor (uint8), a torch module or optimiser its own ``state_dict()``;
- a helper object (a learner, a history buffer) becomes the dict of its attributes, or its own ``state_dict()``;
- configuration that cannot change (functions, torch devices and dtypes) is written as its name and left as
  built on restore.

``load_state_dict(state)`` is called on a freshly built object with the same hyper-parameters and dimensions,
and writes the saved values into it: arrays and tensors of unchanged shape are copied in place (so attributes
that share an array still share it), the rest are replaced. Every attribute is saved unless the class lists it
in ``transient`` (data rebuilt identically by the constructor or ``start``, e.g. a slate policy's catalogue),
so an attribute added later is saved without anyone remembering to declare it.

A policy over the members of a group (``MemberPolicy``) keeps its learned state with the member axis first: every
array and tensor has it as its leading axis, every list holds one entry per member, and a tuple or dict holds such
values; a scalar is a setting shared by every member. ``member_state_dict(m)`` is then member m's share of
``state_dict()``, each of those at index m, so a checkpoint stays per unit, and ``load_member_state_dict(m, state)``
writes one member's share (of a group of any size) into place m. Arrays that a group pads to its largest member
(rows never read) grow to fit a member saved from a larger group. A class whose state is shaped otherwise overrides
the two methods.
"""

from __future__ import annotations

import functools
import sys
import types
from typing import Any

import numpy as np

CONSTANT = (types.FunctionType, types.BuiltinFunctionType, types.MethodType, functools.partial, type)


class Stateful:
    """Mixin: ``state_dict`` / ``load_state_dict`` over the instance's attributes (see the module docstring)."""

    #: Attributes not saved: rebuilt identically when the object is constructed (and started) again.
    transient: tuple[str, ...] = ()

    def state_dict(self) -> dict[str, Any]:
        skip = {name for kind in type(self).__mro__ for name in vars(kind).get("transient", ())}
        state = {}
        for name, value in vars(self).items():
            if name not in skip:
                try:
                    state[name] = capture(value)
                except TypeError as e:
                    raise TypeError(
                        f"{type(self).__name__}.{name}: {e} (list it in `transient` if the constructor rebuilds it)"
                    ) from None
        return state

    def load_state_dict(self, state: dict[str, Any]) -> None:
        restore_attributes(self, state)


class MemberStateful(Stateful):
    """Mixin of an object whose state has the member axis first (see the module docstring); ``members``: [M]."""

    members: np.ndarray

    def member_state_dict(self, m: int) -> dict[str, Any]:
        return member_part(self.state_dict(), m)

    def load_member_state_dict(self, m: int, state: dict[str, Any]) -> None:
        restore_member_attributes(self, m, state, len(self.members))


def torch_or_none():
    return sys.modules.get("torch")  # torch is never imported here: a numpy-only policy never pays for it


def capture(value: Any) -> Any:
    """``value`` as plain data (arrays and tensors are not copied: serialise the result before changing them)."""
    if value is None or isinstance(value, (bool, int, float, str, np.ndarray, np.generic)):
        return value
    if isinstance(value, np.random.Generator):
        return value.bit_generator.state
    torch = torch_or_none()
    if torch is not None:
        if isinstance(value, torch.Tensor):
            return value.detach()
        if isinstance(value, torch.Generator):
            return value.get_state()
        if isinstance(value, (torch.nn.Module, torch.optim.Optimizer)):
            return capture(value.state_dict())
        if isinstance(value, (torch.device, torch.dtype)):
            return str(value)
    if isinstance(value, CONSTANT):
        return getattr(value, "__qualname__", repr(value))
    if isinstance(value, (list, tuple)):
        return type(value)(capture(v) for v in value) if type(value) in (list, tuple) else [capture(v) for v in value]
    if isinstance(value, dict):
        return {k: capture(v) for k, v in value.items()}
    if hasattr(value, "state_dict"):
        return value.state_dict()
    if hasattr(value, "__dict__"):
        return {name: capture(v) for name, v in vars(value).items()}
    raise TypeError(f"cannot save a {type(value).__name__} as plain state")


def restore(current: Any, saved: Any) -> Any:
    """The value to hold after loading ``saved`` into ``current`` (the freshly built value, updated in place
    where possible)."""
    if isinstance(current, np.random.Generator):
        current.bit_generator.state = saved
        return current
    torch = torch_or_none()
    if torch is not None and (isinstance(current, torch_objects(torch)) or isinstance(saved, torch.Tensor)):
        return restore_torch(torch, current, saved)
    if isinstance(current, CONSTANT):
        return current
    if isinstance(saved, np.ndarray):
        return restore_array(current, saved)
    if isinstance(saved, dict):
        return restore_dict(current, saved)
    if isinstance(saved, (list, tuple)):
        return restore_sequence(current, saved)
    return saved


def torch_objects(torch) -> tuple[type, ...]:
    """The torch objects restored into themselves (or kept as built) rather than replaced by a saved tensor."""
    return (torch.Generator, torch.nn.Module, torch.optim.Optimizer, torch.device, torch.dtype)


def restore_torch(torch, current: Any, saved: Any) -> Any:
    """A generator's state, a module's or optimiser's ``state_dict``, or a tensor (copied in place when shape and
    dtype match, else moved to ``current``'s device); devices and dtypes stay as built."""
    if isinstance(current, torch.Generator):
        current.set_state(saved)
    elif isinstance(current, (torch.nn.Module, torch.optim.Optimizer)):
        current.load_state_dict(restore(None, saved))
    elif isinstance(current, torch.Tensor):
        if current.shape != saved.shape or current.dtype != saved.dtype:
            return saved.to(current.device)
        with torch.no_grad():
            current.copy_(saved)
    elif not isinstance(current, (torch.device, torch.dtype)):
        return saved
    return current


def restore_array(current: Any, saved: np.ndarray) -> Any:
    """``saved`` copied into ``current`` where it is a writeable array of the same shape and dtype (arrays sharing
    it keep sharing it), else ``saved`` itself."""
    fits = isinstance(current, np.ndarray) and current.shape == saved.shape and current.dtype == saved.dtype
    if fits and current.flags.writeable and current.ndim:
        current[...] = saved
        return current
    return saved


def restore_dict(current: Any, saved: dict) -> Any:
    """A dict updated key by key, a helper object loaded from its attributes, or a new dict."""
    if isinstance(current, dict):
        loaded = {k: restore(current.get(k), v) for k, v in saved.items()}
        current.clear()
        current.update(loaded)
        return current
    if current is not None and not isinstance(current, (list, tuple)):
        if hasattr(current, "load_state_dict"):
            current.load_state_dict(saved)
        else:
            restore_attributes(current, saved)
        return current
    return {k: restore(None, v) for k, v in saved.items()}


def restore_sequence(current: Any, saved: list | tuple) -> Any:
    """Entries restored one by one into the entries of a sequence of the same length; a list stays the same list."""
    same = isinstance(current, (list, tuple)) and len(current) == len(saved)
    loaded = [restore(current[i] if same else None, v) for i, v in enumerate(saved)]
    if isinstance(current, list) and type(saved) is list:
        current[:] = loaded
        return current
    return type(saved)(loaded)


def restore_attributes(target: Any, state: dict[str, Any]) -> None:
    for name, saved in state.items():
        setattr(target, name, restore(getattr(target, name, None), saved))


def member_part(value: Any, m: int) -> Any:
    """Member m's share of plain state: arrays, tensors and lists at index m, tuples and dicts entry by entry."""
    if isinstance(value, list) or getattr(value, "ndim", 0) and not isinstance(value, np.generic):
        return value[m]
    if isinstance(value, tuple):
        return tuple(member_part(v, m) for v in value)
    if isinstance(value, dict):
        return {k: member_part(v, m) for k, v in value.items()}
    return value


def restore_member(current: Any, m: int, saved: Any, members: int) -> Any:
    """The value to hold after writing member m's ``saved`` share into ``current`` (a group of ``members``)."""
    if isinstance(current, np.ndarray) and current.ndim:
        return restore_row(current, m, np.asarray(saved))
    torch = torch_or_none()
    if torch is not None and isinstance(current, torch.Tensor) and current.dim():
        if current.shape[1:] != saved.shape or current.dtype != saved.dtype:
            raise ValueError(f"a member's {saved.dtype}{list(saved.shape)} where {current.dtype}{list(current.shape)}")
        with torch.no_grad():
            current[m] = saved
        return current
    if current is None and isinstance(saved, np.ndarray):  # built later in a fresh group: every member's rows
        return restore_row(np.zeros((members, *saved.shape), saved.dtype), m, saved)
    if isinstance(current, list):
        current[m] = restore(current[m], saved)
        return current
    if isinstance(current, tuple):
        return tuple(restore_member(c, m, v, members) for c, v in zip(current, saved))
    if isinstance(saved, dict) and isinstance(current, dict):
        loaded = {k: restore_member(current.get(k), m, v, members) for k, v in saved.items()}
        current.update(loaded)
        return current
    if isinstance(saved, dict) and current is not None and hasattr(current, "__dict__"):
        restore_member_attributes(current, m, saved, members)
        return current
    return restore(current, saved)


def restore_row(current: np.ndarray, m: int, saved: np.ndarray) -> np.ndarray:
    """``current`` [M, ...] with row m set to ``saved``; grown (zero rows, never read) where ``saved`` is larger."""
    if current.shape[1:] != saved.shape:
        grown = np.zeros((len(current), *np.maximum(current.shape[1:], saved.shape)), current.dtype)
        grown[(slice(None), *map(slice, current.shape[1:]))] = current
        current = grown
    current[(m, *map(slice, saved.shape))] = saved
    return current


def restore_member_attributes(target: Any, m: int, state: dict[str, Any], members: int) -> None:
    for name, saved in state.items():
        setattr(target, name, restore_member(getattr(target, name, None), m, saved, members))
