"""The whole error tree of eval-harness, in one place.

Every error a user can meet is an ``EvalHarnessError``; its message is printed verbatim on one line by
the CLI (no traceback) and its ``exit_code`` becomes the process exit code.

::

    EvalHarnessError                     exit 2 unless noted
    ├── ConfigError                      bad flags, .env, task spec or model argument
    │   ├── UnknownNameError             a registry lookup failed ("did you mean ...?")
    │   └── NotAvailableHereError        a scorer this machine cannot run: code execution not enabled, an extra
    │                                    not installed (validate-dataset notes it: the run may be meant elsewhere)
    ├── DatasetError                     the dataset cannot be used (carries the problems found)
    │   └── DatasetUnreadableError       the file cannot be opened or decoded at all
    ├── TemplateError                    a prompt template failed to load or render (names file:line)
    ├── ArtifactError                    a run directory cannot be read or written safely
    │   ├── RunLockedError               another process is writing this run
    │   ├── SchemaVersionError           an artifact of a version this build cannot read
    │   └── ResumeMismatchError          resume refused: dataset/template/scorers/model changed
    ├── AuthenticationError              401/403 from a provider: the run stops early
    │   ├── QuotaExhaustedError          the account's quota or spend limit is used up: the run stops too
    │   ├── ModelNotFoundError           404: no such model or endpoint (a typo, a wrong base_url): it stops too
    │   ├── ServerUnreachableError       no server at the base URL, or no longer (refusals in a row): it stops too
    │   └── ServerUntrustedError         TLS: the certificate is not trusted, or no TLS at that port: it stops too
    ├── GateFailedError                  exit 1: a --fail-below / --max-error-rate gate failed
    ├── ProviderError                    one generation call failed (recorded per sample, run goes on)
    │   ├── ProviderHTTPError            an HTTP error status with the provider's own message
    │   ├── ProviderResponseError        a body that is not the documented schema (HTML, bad JSON ...)
    │   ├── ProviderTimeoutError         connect/read timeout or the per-sample timeout
    │   ├── ProviderConnectionError      connection refused/reset
    │   └── ProviderContractError        a provider raised its own exception or returned no Completion (recorded
    │                                    under that exception's type)
    └── ScoringError                     a scorer failed on a sample (recorded, output kept)
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Literal, Self

RetryCause = Literal["rate_limit", "overloaded", "server_error", "timeout", "connection", "conflict", "other"]


class EvalHarnessError(Exception):
    """Base class; ``str(error)`` is the one line shown to the user."""

    exit_code: int = 2


class ConfigError(EvalHarnessError):
    """Bad flags, .env values, task spec or model arguments."""


class NotAvailableHereError(ConfigError):
    """A scorer this machine cannot run as configured (code execution the user has not enabled, an optional
    package not installed): a matter of the machine a run is on, not of the task (``validate-dataset`` notes it,
    run refuses)."""


class UnknownNameError(ConfigError):
    """A name was looked up in a registry (provider, scorer, task) and not found."""

    @classmethod
    def among(cls, kind: str, name: str, known: Iterable[str]) -> UnknownNameError:
        """``unknown <kind> 'name'; did you mean 'close'? (known: a, b)``: the one wording of every lookup."""
        import difflib  # only on this error path

        names = sorted(known)
        close = difflib.get_close_matches(name, names, n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        return cls(f"unknown {kind} {name!r}{hint} (known: {', '.join(names) or 'none'})")


class DatasetError(EvalHarnessError):
    """The dataset has problems; ``problems`` holds ``FILE:LINE: field: message`` strings."""

    def __init__(self, message: str, problems: list[str] | None = None) -> None:
        super().__init__(message)
        self.problems = problems or []


class DatasetUnreadableError(DatasetError):
    """The dataset file cannot be opened, or is not text at all."""


class TemplateError(EvalHarnessError):
    """A template could not be loaded or rendered; the message names the template file and line.

    ``sample_named`` is True when the message already names what caused it (the sample whose prompt rendered
    empty, or the few-shot example shown with every sample): a caller adding the sample it met would add nothing,
    or mislead. ``not_found`` is True when the template file itself is not there (a misspelt name in a spec,
    whose line a caller may add)."""

    def __init__(self, message: str, *, sample_named: bool = False, not_found: bool = False) -> None:
        super().__init__(message)
        self.sample_named = sample_named
        self.not_found = not_found


class ArtifactError(EvalHarnessError):
    """A run directory or one of its files cannot be read or written safely."""


class RunLockedError(ArtifactError):
    """Another live process holds the run directory's lock."""


class SchemaVersionError(ArtifactError):
    """An artifact carries a schema_version this build cannot read."""


class ResumeMismatchError(ArtifactError):
    """Resume was refused because what the fingerprint covers has changed."""


class AuthenticationError(EvalHarnessError):
    """The provider refused the account: its credentials (401/403) or, as ``QuotaExhaustedError``, its quota.
    Continuing would fail every sample, so the run stops at once with this one line."""


class QuotaExhaustedError(AuthenticationError):
    """The account's quota, billing limit or spend cap is used up (a 429 that waiting does not clear: OpenAI's
    ``insufficient_quota`` / ``billing_hard_limit_reached``, Anthropic's ``enforced_spend_limit_reached``)."""


class ModelNotFoundError(AuthenticationError):
    """HTTP 404 from a generation endpoint: the model name or the base URL is wrong. No sample's content can
    cause it, so every call would fail the same way; the run stops like a refused key (fix it, then resume)."""


class ServerUnreachableError(AuthenticationError):
    """No server answers at the base URL: no request of the session ever got a connection (not started, a wrong
    port), or requests in a row found none after it had answered (it went down). Every sample to come would
    fail the same way, each after its backoff (a 1,319-sample run took 24 minutes to record nothing but
    errors), so the run stops (see ``Gateway._stop_if_server_down``)."""


class ServerUntrustedError(AuthenticationError):
    """The TLS handshake failed in a way no retry changes: the server's certificate is not trusted (self-signed,
    a private CA's, a proxy's, another host's, expired) or the server does not speak TLS at that port (an
    http:// server behind an https:// base URL). Every sample would fail the same way, each after its backoff,
    so the run stops at once, saying which."""


class GateFailedError(EvalHarnessError):
    """A quality gate (--fail-below, --max-error-rate, --fail-on-regression) failed."""

    exit_code = 1


class ProviderError(EvalHarnessError):
    """One provider call failed. ``retry_cause`` is set when trying again may succeed; ``request_id`` is the
    provider's id of the failed request when it sent one (for support tickets); ``unreachable`` when no
    connection to the server could be made at all (refused, no such host, a connect timeout): what tells a
    server gone from one request's failure."""

    exit_code = 1
    unreachable: bool = False  # also for a plugin's subclass whose __init__ does not call this one
    wait_stated: bool = True
    """Whether ``retry_after`` is the server's stated wait (Retry-After), not one derived from a reset time."""

    def __init__(
        self,
        message: str,
        *,
        retry_cause: RetryCause | None = None,
        retry_after: float | None = None,
        wait_stated: bool = True,
        status_code: int | None = None,
        request_id: str | None = None,
        unreachable: bool = False,
    ) -> None:
        super().__init__(message)
        self.retry_cause = retry_cause
        self.retry_after = retry_after
        self.wait_stated = wait_stated
        self.status_code = status_code
        self.request_id = request_id
        self.unreachable = unreachable

    def with_message(self, message: str) -> Self:
        """A copy of this error with another message and every other attribute kept (a subclass's too)."""
        copied = type(self).__new__(type(self))  # not copy.copy: a subclass's __init__ may take other arguments
        copied.__dict__.update(self.__dict__)
        copied.args = (message,)
        return copied


class ReplayedError(ProviderError):
    """A source run's generation error, replayed by ``rescore``: recorded again with its own type and
    message (not as a ProviderError named "replayed ..."), so errors_by_type and inspect's groups stay the
    source's, however many times a run is rescored."""

    def __init__(self, recorded_type: str, message: str, request_id: str | None = None) -> None:
        super().__init__(message, request_id=request_id)
        self.recorded_type = recorded_type


class ProviderContractError(ProviderError):
    """A provider's ``generate`` raised an exception that is not an ``EvalHarnessError`` (a vendor SDK's own
    error class, a bug) or returned something other than a ``Completion``. Like any ``ProviderError`` it is that
    sample's generation error and the run goes on; it is recorded under ``recorded_type`` (the exception's class
    name, or ``TypeError`` for a wrong return value), and not retried: only the provider can tell a transient
    failure, by raising ``ProviderError`` with a ``retry_cause``."""

    def __init__(self, recorded_type: str, message: str) -> None:
        super().__init__(message)
        self.recorded_type = recorded_type


class ProviderHTTPError(ProviderError):
    """The provider answered with an HTTP error status."""


class ProviderResponseError(ProviderError):
    """The provider's body did not follow its documented schema."""


class ProviderTimeoutError(ProviderError):
    """The call timed out (``unreachable``: connecting did, so no server answered at all)."""


class ProviderConnectionError(ProviderError):
    """The connection could not be made (``unreachable``: refused, or the host name does not resolve) or was
    dropped."""


class ScoringError(EvalHarnessError):
    """A scorer raised on one sample; the generated output is kept in the record."""

    exit_code = 1


def shortened(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters, the last one an ellipsis when it was cut (a value quoted in a message)."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def named_briefly(names: Sequence[str], shown: int = 3) -> str:
    """``a, b, c``, or the first ``shown`` names and how many more: for a one-line message (a name that would act on
    the terminal or break the line shown escaped)."""
    listed = ", ".join(repr(name) if not name.isprintable() else name for name in names[:shown])
    return listed + (f" and {len(names) - shown} more" if len(names) > shown else "")


def json_type_name(value: object) -> str:
    """What a parsed JSON value is, in JSON's words, for error messages: "null", "an integer", "an array"..."""
    names = {type(None): "null", bool: "a boolean", int: "an integer", float: "a number", str: "a string"}
    return names.get(type(value), "an array" if isinstance(value, list) else "an object")


def as_written(pattern: str) -> str:
    """A regular expression quoted as the spec writes it (``'^(\\w+)\\.csv$'``), not as Python's repr doubles
    its backslashes (``'^(\\\\w+)\\\\.csv$'``), which a user would copy back wrong; only a control character
    (a newline) is escaped, and the quote is the one the pattern does not hold."""
    quote = "'" if "'" not in pattern or '"' in pattern else '"'
    shown = "".join(ch if ch.isprintable() else repr(ch)[1:-1] for ch in pattern)
    return quote + (shown.replace(quote, "\\" + quote) if quote in pattern else shown) + quote


def undecodable_shown(text: str) -> str | None:
    """``text`` as a message may show it when it is not UTF-8 — each byte of another encoding, which Python hands
    over as a lone surrogate, written ``\\xff`` — or None when it is UTF-8 throughout (JSON can hold it)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    return None


def spoken_duration(seconds: float) -> str:
    """``1e9`` → '11,574 days', ``7200`` → '2.0 hours', ``900`` → '15 minutes'."""
    if seconds >= 2 * 86_400:
        return f"{seconds / 86_400:,.0f} days" if seconds < 1e15 else "for ever"
    if seconds >= 2 * 3_600:
        return f"{seconds / 3_600:.1f} hours"
    minutes = f"{seconds / 60:.0f}"
    return f"{minutes} minute{'' if minutes == '1' else 's'}"


__all__ = [
    "ArtifactError",
    "AuthenticationError",
    "ConfigError",
    "DatasetError",
    "DatasetUnreadableError",
    "EvalHarnessError",
    "GateFailedError",
    "ModelNotFoundError",
    "NotAvailableHereError",
    "ProviderConnectionError",
    "ProviderContractError",
    "ProviderError",
    "ProviderHTTPError",
    "ProviderResponseError",
    "ProviderTimeoutError",
    "QuotaExhaustedError",
    "ReplayedError",
    "ResumeMismatchError",
    "RetryCause",
    "RunLockedError",
    "SchemaVersionError",
    "ScoringError",
    "ServerUnreachableError",
    "ServerUntrustedError",
    "TemplateError",
    "UnknownNameError",
    "as_written",
    "json_type_name",
    "named_briefly",
    "shortened",
    "spoken_duration",
    "undecodable_shown",
]
