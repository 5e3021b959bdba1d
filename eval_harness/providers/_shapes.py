"""The JSON types of a provider's reply, checked where the wire parsers read each value.

A reply is parsed by orjson into plain dicts and lists, and the parsers read what they need from them: a value
of the wrong JSON type (a string where the API documents an object) would otherwise surface as an
``AttributeError`` or a ``TypeError`` far from its cause, recorded as a contract error that names no field. Each
accessor here returns the value when its type is the documented one and raises ``ProviderResponseError`` naming
its path otherwise: ``usage.prompt_tokens_details: expected an object, got a string``. A field that is absent
and one that is null read the same (None): the APIs leave optional fields out or send null.

Only what the answer is read from is held to its documented type (``object_at``, ``string_at``, ``objects``).
What only describes the answer — usage counts, the model's name, the request id, the finish reason, a refusal
or reasoning text — is read leniently (``*_or_none``): a value of another type is "not reported", never the
failure of an answer the server did give (servers that speak the wire loosely — llama.cpp, vLLM, Ollama,
gateways — vary most in those fields).

Plain checks rather than pydantic models of the replies: the parsers read about a dozen values of each reply,
on every call, and each check here is one ``type()`` test of a value already in hand.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from eval_harness.errors import ProviderResponseError, json_type_name

_MAX_COUNT = 10**9
"""The largest token count read: a billion, far beyond any context window. A larger count is a broken or
hostile server's, and would price one sample at billions of dollars and hold --tpm's pacing for days."""


def wrong_shape(path: str, expected: str, value: object) -> ProviderResponseError:
    """The error for ``value`` at ``path`` (``choices[0].message``) not being ``expected`` (``an object``)."""
    return ProviderResponseError(f"{path}: expected {expected}, got {json_type_name(value)}")


def _path(at: str, key: str) -> str:
    return f"{at}.{key}" if at else key


def object_at(parent: Mapping[str, Any], key: str, at: str = "") -> dict[str, Any] | None:
    """``parent[key]`` when it is an object, None when absent or null; ``at`` is ``parent``'s path."""
    value = parent.get(key)
    if value is None or type(value) is dict:
        return value
    raise wrong_shape(_path(at, key), "an object", value)


def string_at(parent: Mapping[str, Any], key: str, at: str = "") -> str | None:
    """``parent[key]`` when it is a string, None when absent or null."""
    value = parent.get(key)
    if value is None or type(value) is str:
        return value
    raise wrong_shape(_path(at, key), "a string", value)


def count_or_none(parent: Mapping[str, Any], key: str) -> int | None:
    """``parent[key]`` as a token count when it is one — a whole number from 0 to a billion, written as an integer or
    a float — else None (absent, null, negative, fractional, a string...): a count the report could not read
    back must not reach a record, and a wrong one is metadata, not a failed answer."""
    value = parent.get(key)
    if type(value) is int:
        return value if 0 <= value <= _MAX_COUNT else None
    if isinstance(value, float) and value.is_integer() and 0 <= value <= _MAX_COUNT:
        return int(value)
    return None


def object_or_none(parent: Mapping[str, Any], key: str) -> dict[str, Any] | None:
    """``parent[key]`` when it is an object, else None (metadata of another type reads as not reported)."""
    value = parent.get(key)
    return value if type(value) is dict else None


def string_or_none(parent: Mapping[str, Any], key: str) -> str | None:
    """``parent[key]`` when it is a string, else None (metadata of another type reads as not reported)."""
    value = parent.get(key)
    return value if type(value) is str else None


def name_or_none(parent: Mapping[str, Any], key: str) -> str | None:
    """``parent[key]`` as a name (an id, a model): a string, or a number written as text; else None."""
    value = parent.get(key)
    if type(value) is str:
        return value
    if type(value) in (int, float):
        return str(value)
    return None


def objects(value: Any, at: str, *, required: bool = False) -> list[dict[str, Any]]:
    """``value``, read at path ``at``, when it is an array of objects; an absent or null array is empty, or
    (``required``) the error that the response has none."""
    if value is None:
        if required:
            raise ProviderResponseError(f"the response has no {at}")
        return []
    if type(value) is not list:
        raise wrong_shape(at, "an array", value)
    for index, item in enumerate(value):
        if type(item) is not dict:
            raise wrong_shape(f"{at}[{index}]", "an object", item)
    return value


__all__ = [
    "count_or_none",
    "name_or_none",
    "object_at",
    "object_or_none",
    "objects",
    "string_at",
    "string_or_none",
    "wrong_shape",
]
