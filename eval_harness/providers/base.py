"""The provider contract: one abstract async method, ``generate``; everything else has a default.

A provider file is pure wire translation. Retries, rate limits, concurrency and caching live in
``gateway.py``, which wraps any provider; whether an error is worth retrying is decided here, next to the
wire knowledge, and carried on ``ProviderError.retry_cause``.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, SecretStr, ValidationError

from eval_harness.config import Settings
from eval_harness.errors import ConfigError
from eval_harness.registry import Registry
from eval_harness.types import ChatMessage, Completion, GenerateConfig, GenerateRequest, Usage, first_problem


class ProviderOptions(BaseModel):
    """Per-model options from ``--model-arg KEY=VALUE``; subclasses add their own fields."""

    # inf and nan are refused: a manifest records them as null, and the run could not be resumed
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    transport_only: ClassVar[frozenset[str]] = frozenset()
    """Options that change how answers travel, never what they are (streaming, timeouts, the HTTP client, the
    largest body read, where the key is read from and sent): a resume may change them without ``--force``, for its
    own session."""
    replaces: ClassVar[Mapping[str, frozenset[str]]] = {}
    """Options that may not be set together, by name: each given anew to a resume unsets the recorded ones it
    names (the run's ``api_key_query`` for an ``api_key_header`` given now), which nothing else could unset."""

    @classmethod
    def resumed(cls, recorded: Mapping[str, Any], given: Mapping[str, Any]) -> dict[str, Any]:
        """The options of a resumed session: ``recorded`` with each option ``given`` now in place of its own, and
        unset where one ``given`` replaces it (``replaces``); two of a pair given together are both kept, and
        refused as on a run."""
        unset = {name for option in given for name in cls.replaces.get(option, ()) if name not in given}
        return {**{name: value for name, value in recorded.items() if name not in unset}, **given}

    def public(self) -> dict[str, Any]:
        """The options as recorded in a manifest: secrets are dropped."""
        return {
            name: value for name, value in self.model_dump(mode="python").items() if not isinstance(value, SecretStr)
        }


@dataclass(frozen=True)
class ProviderContext:
    """What a provider may know about the run it serves."""

    settings: Settings = field(default_factory=Settings)
    concurrency: int = 16
    connect_timeout_s: float = 10.0
    read_timeout_s: float = 120.0
    offline: bool = False
    """True for a dry run: nothing will be called, so missing credentials are not an error yet."""
    axes: frozenset[str] | None = None
    """The dataset's axes, when the run knows them: options that name an axis are checked against them."""
    cache: bool = False
    """Answers may come from ``--cache``: a run answered from it may never connect (nothing is checked early that
    only a connection needs)."""
    options_flag: str = "--model-arg"
    """The flag the provider's options were given through (``--judge-arg`` for the judge): messages name it."""


class Provider(ABC):
    """A model behind some API. Subclasses implement ``generate`` and set ``Options``."""

    Options: ClassVar[type[ProviderOptions]] = ProviderOptions

    def __init__(self, model: str, options: ProviderOptions, context: ProviderContext) -> None:
        self.model = model
        self.options = options
        self.context = context

    @property
    def model_id(self) -> str:
        """``provider/model`` as the user wrote it."""
        return f"{type(self).provider_name}/{self.model}"

    provider_name: ClassVar[str] = ""

    @abstractmethod
    async def generate(self, request: GenerateRequest) -> Completion:
        """Call the model once; raise ``ProviderError`` (with ``retry_cause`` when transient)."""

    async def aclose(self) -> None:
        """Release connections; the default has none."""
        return None

    def secrets(self) -> list[str]:
        """Values that must never reach an artifact, log or message: the environment's keys, every
        ``SecretStr`` among the options (a key given as ``--model-arg api_key=...``) and ``own_secrets``, each
        once, longest first (an order ``redact`` no longer needs, since it finds them all in the text as given, but
        which keeps the list the same however its values came)."""
        values = [*self.context.settings.secrets(), *option_secrets(self.options), *self.own_secrets()]
        return sorted(dict.fromkeys(value for value in values if value), key=len, reverse=True)

    def own_secrets(self) -> list[str]:
        """Secrets this provider holds beyond the environment's and its ``SecretStr`` options (a key it read
        itself); none by default."""
        return []

    def cost(self, usage: Usage) -> float | None:
        """USD for ``usage``; None when the price is unknown (never a silent 0)."""
        return None

    @property
    def proxy(self) -> str | None:
        """The environment variable whose proxy this provider's requests go through, or None (messages about a
        server that cannot be reached name it)."""
        return None

    def request_body(self, request: GenerateRequest) -> dict[str, Any] | None:
        """The exact wire body for ``request`` (used as the response-cache key); None if not cacheable."""
        return None

    @property
    def cacheable(self) -> bool:
        """Whether ``--cache`` can serve this provider's answers: it gives request bodies to key them by (the
        mock, deterministic and free, does not)."""
        return type(self).request_body is not Provider.request_body

    def check_generation(self, config: GenerateConfig) -> None:
        """Raise ``ConfigError`` for generation options this model's API refuses (checked before the run, not
        met as the same error on every sample); the default accepts every option."""
        return None

    def check_requests(self) -> None:
        """Raise ``ConfigError`` for what would make every request fail before it is sent (an HTTP provider: a
        key that no header can carry), so that it is refused before the run, not blamed on its first sample."""
        return None

    def output_cap(self, config: GenerateConfig) -> int | None:
        """The most tokens one call may write, thinking included (what bounds its output's cost); None when
        nothing bounds it. The task's ``max_tokens``, unless the provider adds room for thinking."""
        return config.max_tokens

    def generation_notes(self, config: GenerateConfig) -> list[str]:
        """Notes for the user about options of ``config`` this model takes differently from how they are written
        (one it does not take and is not sent): printed at the start of a run, never silent."""
        return []

    def stop_applied_after(self, request: GenerateRequest) -> list[str] | None:
        """Stop sequences this provider cuts the answer at itself, not sent in the body (part of the cache key:
        the stored answer is already cut)."""
        return None


def option_secrets(value: object) -> list[str]:
    """Every ``SecretStr`` value in ``value``: options, and the lists, dicts and models they hold."""
    if isinstance(value, SecretStr):
        return [value.get_secret_value()]
    if isinstance(value, BaseModel):
        items: Iterable[object] = dict(value).values()
    elif isinstance(value, Mapping):
        items = value.values()
    elif isinstance(value, list | tuple | set | frozenset):
        items = value
    else:
        return []
    return [secret for item in items for secret in option_secrets(item)]


def estimate_tokens(messages: list[ChatMessage] | str) -> int:
    """A provider-independent token estimate (~4 characters a token) for dry-run cost estimates."""
    if isinstance(messages, str):
        return math.ceil(len(messages) / 4)
    return sum(math.ceil(len(m.content) / 4) + 4 for m in messages)


PROVIDERS: Registry[type[Provider]] = Registry("provider")


def register_provider(name: str) -> Callable[[type[Provider]], type[Provider]]:
    """Class decorator: make ``name/<model>`` resolve to this provider."""

    def decorate(cls: type[Provider]) -> type[Provider]:
        cls.provider_name = name
        return PROVIDERS.register(name)(cls)

    return decorate


_GENERATION_FLAGS = {"temperature": "--temperature", "max_tokens": "--max-tokens"}


def _misplaced_option_hint(key: str, flag: str, provider: str) -> str:
    """Where a generation option given as a provider option by mistake is set ("" when ``key`` is none)."""
    if key not in GenerateConfig.model_fields:
        return ""
    if flag == "--judge-arg":  # --temperature and [generation] set the model under evaluation, not the judge
        return "; a judge's temperature and max_tokens are its scorer's args" if key in _GENERATION_FLAGS else ""
    if key == "seed" and provider == "mock":
        return "; the mock's draws are seeded with --seed"
    given = f"with {_GENERATION_FLAGS[key]} or " if key in _GENERATION_FLAGS else "in "
    return f"; set it {given}the task's [generation] {key}"


def create_provider(
    model_id: str, raw_args: dict[str, Any], context: ProviderContext, flag: str = "--model-arg"
) -> Provider:
    """Build the provider for ``provider/model`` with validated options; ``flag`` set them (for errors)."""
    prefix, sep, model = model_id.partition("/")
    if not sep or not model:
        raise ConfigError(f"model {model_id!r} must look like provider/model, e.g. mock/strong or openai/gpt-4o")
    cls = PROVIDERS.get(prefix)
    if flag != context.options_flag:
        context = replace(context, options_flag=flag)
    try:
        options = cls.Options.model_validate(raw_args)
    except ValidationError as exc:
        key, message = first_problem(exc)
        known = ", ".join(cls.Options.model_fields) or "none"
        if exc.errors(include_url=False)[0]["type"] == "extra_forbidden":  # pydantic: "Extra inputs are not permitted"
            message = "unknown option" + _misplaced_option_hint(key, flag, prefix)
        # a problem of the options together (a model validator's) has no name to go after the flag
        where = f"{flag} {key}" if key else flag
        raise ConfigError(f"{where}: {message} (provider {prefix}; options: {known})") from None
    provider = cls(model, options, context)
    provider.check_requests()
    return provider


def resumed_args(model_id: str, recorded: Mapping[str, Any], given: Mapping[str, Any]) -> dict[str, Any]:
    """The options of a resumed session of ``provider/model``: ``recorded`` with those ``given`` now in their place
    (see ``ProviderOptions.resumed``)."""
    if not given:
        return dict(recorded)
    return PROVIDERS.get(model_id.partition("/")[0]).Options.resumed(recorded, given)


__all__ = [
    "PROVIDERS",
    "Provider",
    "ProviderContext",
    "ProviderOptions",
    "create_provider",
    "estimate_tokens",
    "option_secrets",
    "register_provider",
    "resumed_args",
]
