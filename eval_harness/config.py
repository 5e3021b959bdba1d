"""Run configuration: one frozen ``RunConfig`` built from flags, and ``Settings`` read from the environment.

``RunConfig`` is passed whole to the runner, never unpacked into keyword arguments. ``Settings`` holds
secrets as ``SecretStr`` so that printing or dumping it never shows a key.
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal
from urllib.parse import unquote, urlsplit, urlunsplit

from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError

from eval_harness.errors import ConfigError
from eval_harness.textfiles import home_expanded
from eval_harness.types import ScorerSpec, first_problem

DEFAULT_CONCURRENCY = 16
MAX_CONCURRENCY = 100_000
"""A worker coroutine each: more than any provider admits, and bounded so a typo cannot exhaust memory."""
MAX_EPOCHS = 1_000
"""Runs of each sample: memory and the resume point grow with it, so a typo must not reach the runner."""
MAX_COUNT = 2**63 - 1
"""Largest --limit: what a manifest can record (2^64 and above cannot be written to it at all). Not tighter: a
manifest is read back through this model, and a run recorded with a larger limit must stay resumable."""
MAX_RETRIES = 1_000
"""Most retries of one call: with backoff, far beyond any outage a run could wait out."""
DEFAULT_OUTPUT_DIR = Path("results")


class RunConfig(BaseModel):
    """Everything a run needs from the command line. Frozen: build a new one to change it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    task: str = Field(description="Task name (from tasks/) or a path to a task spec .toml.")
    model: str = Field(default="mock/default", description="provider/model, e.g. mock/strong or openai/gpt-4o.")
    model_args: dict[str, Any] = Field(
        default_factory=dict, description="--model-arg KEY=VALUE pairs (strings), or typed values from a manifest."
    )
    dataset: Path | None = Field(default=None, description="Dataset path overriding the task's own.")
    skip_invalid: bool = Field(default=False, description="Run the valid lines of a dataset that has problems.")
    output_dir: Path = Field(default=DEFAULT_OUTPUT_DIR, description="Parent directory of run directories.")
    run_id: str | None = Field(default=None, description="Run directory name; default timestamp + suffix.")
    concurrency: int = Field(
        default=DEFAULT_CONCURRENCY, ge=1, le=MAX_CONCURRENCY, description="Samples in flight at most."
    )
    epochs: int = Field(default=1, ge=1, le=MAX_EPOCHS, description="Times each sample is run.")
    limit: int | None = Field(default=None, ge=1, le=MAX_COUNT, description="Evaluate only the first N samples.")
    limit_per_axis: int | None = Field(
        default=None, ge=1, le=MAX_COUNT, description="Evaluate only the first N samples of each axis."
    )
    seed: int = Field(
        default=0,
        ge=-(2**63),
        lt=2**63,
        description="Seed of the mock provider's draws (64-bit); not sent to APIs (see [generation] seed).",
    )
    # inf would be written to the manifest as null, which no later command could read
    timeout_s: float = Field(
        default=120.0, gt=0, allow_inf_nan=False, description="Per-sample timeout, retries included."
    )
    max_retries: int = Field(
        default=5, ge=0, le=MAX_RETRIES, description="Retries per provider call after the first try."
    )
    rpm: float | None = Field(default=None, gt=0, description="Client-side requests-per-minute limit.")
    tpm: float | None = Field(default=None, gt=0, description="Client-side tokens-per-minute limit.")
    cache: bool = Field(default=False, description="Serve and store responses in the on-disk cache.")
    cache_dir: Path | None = Field(default=None, description="Response cache directory.")
    judge_model: str | None = Field(default=None, description="provider/model for judge scorers.")
    judge_args: dict[str, Any] = Field(
        default_factory=dict, description="--judge-arg KEY=VALUE pairs (strings), or typed values from a manifest."
    )
    generation: dict[str, Any] = Field(default_factory=dict, description="Overrides of the task's generation.")
    scorer_task: str | None = Field(default=None, description="Take scorers and pass threshold from this task.")
    scorers: list[ScorerSpec] | None = Field(default=None, description="Scorers to use instead of the task's.")
    source_run: Path | None = Field(default=None, description="Rescore: replay this run's outputs, call no model.")
    dry_run: bool = Field(default=False, description="Plan and render only; credentials are not required.")
    fsync_interval_s: float = Field(default=0.5, ge=0, description="Longest time a written record waits for fsync.")
    grace_s: float = Field(default=5.0, ge=0, description="On interrupt, how long in-flight samples may finish.")


def _read_env_file(env_file: Path) -> dict[str, str | None]:
    """The variables of ``env_file``; a line python-dotenv cannot parse is an error naming it (dotenv itself only
    logs "could not parse statement starting at line N", unnamed and even under --quiet, and drops the line,
    so a key on it would be missing without a word)."""
    import logging

    from dotenv import dotenv_values

    unparsed: list[object] = []

    class _Collect(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            unparsed.append(record.args[0] if isinstance(record.args, tuple) and record.args else "?")

    logger = logging.getLogger("dotenv.main")
    handler, propagate = _Collect(), logger.propagate
    logger.addHandler(handler)
    logger.propagate = False
    try:
        values = dotenv_values(env_file)
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{env_file}: not UTF-8 text (byte {exc.start}); fix or remove the file") from None
    except OSError as exc:  # unreadable (permissions), a directory, a dangling link
        raise ConfigError(f"{env_file}: cannot read it: {exc.strerror or exc}; fix or remove the file") from None
    finally:
        logger.removeHandler(handler)
        logger.propagate = propagate
    if unparsed:
        raise ConfigError(f"{env_file}:{unparsed[0]}: python-dotenv cannot parse this line; fix or remove it")
    return values


class Settings(BaseModel):
    """Provider settings from the environment and ``.env``. Secrets are ``SecretStr``."""

    model_config = ConfigDict(frozen=True)

    openai_api_key: SecretStr | None = None
    openai_base_url: str | None = None
    openai_organization: str | None = None
    openai_project: str | None = None
    anthropic_api_key: SecretStr | None = None
    anthropic_base_url: str | None = None
    cache_dir: Path | None = None

    @classmethod
    def load(cls, env_file: Path | None = Path(".env")) -> Settings:
        """Read ``.env`` (if present) under the real environment, which wins."""
        values: dict[str, str | None] = {}
        if env_file is not None and env_file.is_file():
            values.update(_read_env_file(env_file))
        values.update(os.environ)

        def pick(*names: str) -> str | None:
            for name in names:
                value = values.get(name)
                if value:
                    return value
            return None

        def secret(name: str) -> SecretStr | None:
            # A header loses its outer whitespace on the wire, so servers echo the stripped key: kept padded,
            # it would be sent one way and redacted another. Blank is unset (CI templates export empty keys).
            key = (pick(name) or "").strip()
            return SecretStr(key) if key else None

        cache_dir = pick("EVAL_HARNESS_CACHE_DIR")
        return cls(
            openai_api_key=secret("OPENAI_API_KEY"),
            openai_base_url=pick("OPENAI_BASE_URL"),
            openai_organization=pick("OPENAI_ORG_ID", "OPENAI_ORGANIZATION"),
            openai_project=pick("OPENAI_PROJECT_ID", "OPENAI_PROJECT"),
            anthropic_api_key=secret("ANTHROPIC_API_KEY"),
            anthropic_base_url=pick("ANTHROPIC_BASE_URL"),
            # a .env line is not a shell's: "~/x" there made a directory named "~" in the working directory
            cache_dir=home_expanded(cache_dir) if cache_dir else None,
        )

    def secrets(self) -> list[str]:
        """Every secret value, for redaction of messages."""
        return [s.get_secret_value() for s in (self.openai_api_key, self.anthropic_api_key) if s is not None]


def invalid_config(error: ValidationError, flags: Mapping[str, str], where: str) -> ConfigError:
    """The first problem of a configuration, named by the flag that set the field (``flags``: field -> flag)
    or, for a field no flag set, by ``where`` (e.g. the manifest it came from) and the field."""
    location, message = first_problem(error)
    name = flags.get(location.split(".")[0], f"{where}: {location}") if location else where
    return ConfigError(f"{name}: {message}")


def _ordinal(number: int) -> str:
    suffix = "th" if 10 <= number % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(number % 10, "th")
    return f"{number}{suffix}"


def parse_key_values(pairs: list[str], flag: str) -> dict[str, str]:
    """Parse repeated ``KEY=VALUE`` flags, rejecting malformed ones with the flag's name."""
    parsed: dict[str, str] = {}
    for number, pair in enumerate(pairs, 1):
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            # not echoed: a key pasted in the wrong place ("Authorization: Bearer sk-...") would be shown
            what = "has no '='" if not sep else "has no key before '='"
            raise ConfigError(
                f"{flag} expects KEY=VALUE; the {_ordinal(number)} {flag} {what} (not shown: it may hold a key)"
            )
        parsed[key.strip()] = value.strip()
    return parsed


def redact(text: str, secrets: Sequence[str]) -> str:
    """Replace every secret in ``text``, padded or stripped, so it can be shown or stored; and, for a secret of
    16 characters or more, any part of it that starts or ends it and holds at least half of it (at least 12
    characters), in any case: a server that cuts its message inside the key, or upper-cases it, shows it.

    Every form of every secret is looked for in the text as given, and what they find is replaced at once: one
    form replaced first would cut another's match (a key's percent-encoded form, matching up to its first
    ``%2F``, left the rest of the same key echoed with ``/`` for its plain form to miss)."""
    forms, long_forms = _forms(tuple(secrets))
    spans = [span for form in forms if form in text for span in _occurrences(text, form)]
    if long_forms:
        # the parts left once the whole forms are blanked (same length: the positions hold), so a text of many
        # whole keys is not searched again for each one's halves
        rest = _replaced(text, spans, blank=True) if spans else text
        folded = rest.lower()  # once: every answer of a run with a key passes here, and almost none holds one
        for form in long_forms:
            head, tail = _halves(form)  # any part to redact holds the key's first or last half
            if head in folded or tail in folded:
                spans += _partial_spans(rest, form)
    return _replaced(text, spans) if spans else text


@functools.lru_cache(maxsize=64)
def _forms(secrets: tuple[str, ...]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The forms of ``secrets`` to look for (each as given and stripped: a server echoes a key as it arrived,
    without the padding a header loses; none under 4 characters), and those long enough to be found in part."""
    given = [form for secret in secrets for form in dict.fromkeys((secret, secret.strip())) if len(form) >= 4]
    # and as JSON text that escapes "/" shows it (PHP's encoder, and servers that echo a body unparsed)
    forms = tuple(dict.fromkeys([*given, *(form.replace("/", "\\/") for form in given if "/" in form)]))
    return forms, tuple(form for form in forms if len(form) >= 16)


def _occurrences(text: str, form: str) -> list[tuple[int, int]]:
    """Where ``form`` occurs in ``text``, exactly, as (start, end) spans."""
    spans, start = [], text.find(form)
    while start != -1:
        spans.append((start, start + len(form)))
        start = text.find(form, start + len(form))
    return spans


@functools.lru_cache(maxsize=64)
def _halves(secret: str) -> tuple[str, str]:
    """The first and the last half of ``secret`` (at least 12 characters each), lower-cased."""
    half = max(12, len(secret) // 2)
    return secret[:half].lower(), secret[-half:].lower()


def _partial_spans(text: str, secret: str) -> list[tuple[int, int]]:
    """Where each long part of ``secret`` from either end is in ``text``: its first half and as much of the rest
    as follows, or its last half and as much of the rest as comes before, in any case. Found by the fixed half,
    then extended a character at a time: a pattern of nested optional groups ("longest prefix of this string",
    which ``re`` lacks) nests once per character, and a 2,000-character token overflows its parser."""
    half = max(12, len(secret) // 2)
    head, tail = secret[:half], secret[-half:]
    spans = []
    for found in re.finditer(re.escape(head), text, re.IGNORECASE):
        end, rest = found.end(), secret[half:]
        size = 0
        while size < len(rest) and end + size < len(text) and text[end + size].lower() == rest[size].lower():
            size += 1
        spans.append((found.start(), end + size))
    for found in re.finditer(re.escape(tail), text, re.IGNORECASE):
        start, before = found.start(), secret[:-half]
        size = 0
        while size < min(len(before), start) and text[start - size - 1].lower() == before[-size - 1].lower():
            size += 1
        spans.append((start - size, found.end()))
    return spans


def _replaced(text: str, spans: list[tuple[int, int]], *, blank: bool = False) -> str:
    """``text`` with each of ``spans`` (overlapping or touching ones as one) replaced by ``[REDACTED]``, or, with
    ``blank``, by as many NUL characters (which no key holds) as it is long."""
    merged: list[list[int]] = []
    for start, end in sorted(spans):
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    pieces, last = [], 0
    for start, end in merged:
        pieces += [text[last:start], "\0" * (end - start) if blank else "[REDACTED]"]
        last = end
    return "".join(pieces) + text[last:]


def redact_shown(
    text: str,
    secrets: Sequence[str],
    limit: int,
    *,
    keep: Literal["head", "tail"] = "head",
    one_line: bool = False,
) -> str:
    """``text`` as a message or a record may hold it: every secret redacted in the whole text first, then (with
    ``one_line``) each run of whitespace made one space, then cut to at most ``limit`` characters, keeping its
    start or its end (``keep``) with "…" where it was cut.

    Always in this order: a key straddling the cut, cut first, would lose the part that lets ``redact``
    recognise it, and the rest of it would be kept."""
    text = redact(text, secrets)
    if one_line:
        text = " ".join(text.split())
    if len(text) <= limit:
        return text
    if limit < 1:
        return ""
    return text[: limit - 1] + "…" if keep == "head" else "…" + text[len(text) - limit + 1 :]


_CREDENTIAL_NAMES = frozenset({"sig", "code", "auth", "authorization", "bearer", "passwd"})
_CREDENTIAL_ENDINGS = ("key", "token", "secret", "signature", "password", "credential", "credentials")
"""Query parameters (lower case, without - _ . or spaces) that carry a credential: ``?key=`` (Google),
``?api-key=``, ``?subscription-key=`` (Azure API Management), ``?code=`` (Azure Functions), ``?sig=`` and
``?X-Amz-Signature=`` (signed URLs), ``?access_token=``, ``?hf_token=``... A query of other names stays allowed
(Azure's ``?api-version=...``)."""
_QUERY_SEPARATORS = re.compile(r"[&;]")


def _credential_named(item: str) -> str | None:
    """The parameter of a query's ``name=value`` item when its name is a credential's, else None."""
    parameter = unquote(item.partition("=")[0])
    name = re.sub(r"[-_.\s]", "", parameter.lower())
    return parameter if name and (name in _CREDENTIAL_NAMES or name.endswith(_CREDENTIAL_ENDINGS)) else None


def credential_parameter(url: str) -> str | None:
    """The first parameter of ``url``'s query (or of its fragment) named for a credential; None when it has none
    (or is no URL)."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return None
    for text in (parts.query, parts.fragment):
        for item in _QUERY_SEPARATORS.split(text):
            if (parameter := _credential_named(item)) is not None:
                return parameter
    return None


def without_credentials(url: str) -> str:
    """``url`` without user info and without the parameters of its query and fragment named for a credential;
    the others (Azure's ``api-version``) kept. For a URL that is recorded, not called: a rescore's."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return url
    if credential_parameter(url) is None and "@" not in parts.netloc:
        return url

    def kept(text: str) -> str:
        return "&".join(item for item in _QUERY_SEPARATORS.split(text) if item and _credential_named(item) is None)

    return urlunsplit(
        (parts.scheme, parts.netloc.rpartition("@")[2], parts.path, kept(parts.query), kept(parts.fragment))
    )


def shown_url(url: str) -> str:
    """``url`` as messages may name it: without user info, query or fragment, which can carry credentials."""
    parts = urlsplit(url)
    host = parts.netloc.rpartition("@")[2]
    return urlunsplit((parts.scheme, host, parts.path, "", ""))


def shown_without_credentials(value: str) -> str:
    """``value`` as a message may show it: a URL with a credential in its query or fragment without them."""
    if credential_parameter(value) is None:
        return value
    return shown_url(value) + " (its query left out)"


__all__ = [
    "DEFAULT_CONCURRENCY",
    "DEFAULT_OUTPUT_DIR",
    "MAX_CONCURRENCY",
    "MAX_EPOCHS",
    "RunConfig",
    "Settings",
    "credential_parameter",
    "invalid_config",
    "parse_key_values",
    "redact",
    "redact_shown",
    "shown_url",
    "shown_without_credentials",
    "without_credentials",
]
