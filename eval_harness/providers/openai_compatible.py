"""``openai-compatible/<model>``: any server that speaks OpenAI's wire format (vLLM, llama.cpp's server,
Ollama, LM Studio, TGI).

``base_url`` is required (``--model-arg base_url=http://localhost:8000/v1``) and the key optional: give it
as ``api_key_env=NAME`` (the variable is read at run time and never recorded) or ``api_key=...``. The key of
the hosted OpenAI API is never sent to such a server. ``endpoint=completions`` uses the legacy
``/completions`` endpoint with a plain prompt (the template's turns joined), for base models.

Servers differ in what they return: llama.cpp adds a ``timings`` object (ignored) and reports the model
file as the model name; some servers omit ``usage`` (then the cost is unknown, never 0).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import ClassVar, Literal
from urllib.parse import parse_qs, quote, quote_plus, urlencode, urlsplit, urlunsplit

from pydantic import Field, field_validator, model_validator

from eval_harness.errors import ConfigError
from eval_harness.providers._http import KeyOptions, holds_secret
from eval_harness.providers.base import ProviderContext, ProviderOptions, register_provider
from eval_harness.providers.openai import Endpoint, OpenAIWire


class OpenAICompatibleOptions(KeyOptions):
    """Options of ``openai-compatible/<model>``."""

    # where the key travels changes no answer: a resume may move it for its session, as it may stream
    transport_only: ClassVar[frozenset[str]] = KeyOptions.transport_only | {"stream", "api_key_header", "api_key_query"}
    # the key goes in one place: either given to a resume unsets the run's other, which would be refused beside it
    replaces: ClassVar[Mapping[str, frozenset[str]]] = {
        "api_key_header": frozenset({"api_key_query"}),
        "api_key_query": frozenset({"api_key_header"}),
    }

    base_url: str | None = Field(default=None, description="The server's API root, e.g. http://127.0.0.1:8080/v1.")
    endpoint: Literal["chat", "completions", "responses"] = Field(
        default="chat",
        description="chat (/chat/completions), completions (legacy /completions, plain prompt) or responses "
        "(/responses, as vLLM's and llama.cpp's servers serve it).",
    )
    stream: bool = Field(default=False, description="Ask for server-sent events (usage via stream_options).")
    api_key_header: str | None = Field(
        default=None,
        description="Send the key in this header, as it is, instead of Authorization: Bearer (e.g. api-key, "
        "x-functions-key).",
    )
    api_key_query: str | None = Field(
        default=None,
        description="Send the key as this query parameter of every request (e.g. code, for Azure Functions); the "
        "recorded base_url never holds it.",
    )

    @field_validator("api_key_header")
    @classmethod
    def _header_name(cls, value: str | None) -> str | None:
        if value == "":  # given empty: the Bearer header, as when not given (a resume goes back to it so)
            return None
        if value is not None and not _HEADER_NAME.fullmatch(value):
            raise ValueError("must be an HTTP header name (letters, digits and - _ .)")
        if value is not None and value.lower() in _OWN_HEADERS:
            raise ValueError(
                f"{value} is a header eval-harness sets itself; name the one the server reads the key from"
            )
        return value

    @field_validator("api_key_query")
    @classmethod
    def _parameter_name(cls, value: str | None) -> str | None:
        if value == "":  # given empty: the Bearer header, as when not given (a resume goes back to it so)
            return None
        if value is not None and not _PARAMETER_NAME.fullmatch(value):
            raise ValueError("must be a query parameter name (letters, digits and - _ .)")
        return value

    @model_validator(mode="after")
    def _one_place_for_the_key(self) -> OpenAICompatibleOptions:
        if self.api_key_header is not None and self.api_key_query is not None:
            raise ValueError("give api_key_header or api_key_query, not both: the key is sent in one place")
        return self


_VARIABLE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_HEADER_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")
_PARAMETER_NAME = _HEADER_NAME
_OWN_HEADERS = frozenset(
    {"host", "content-type", "content-length", "accept", "accept-encoding", "user-agent", "connection",
     "transfer-encoding"}
)  # fmt: skip


@register_provider("openai-compatible")
class OpenAICompatibleProvider(OpenAIWire):
    """An OpenAI-style server of the user's choosing."""

    Options = OpenAICompatibleOptions
    max_tokens_field = "max_tokens"
    key_hint = "{flag} api_key_env=NAME (or api_key=...)"
    key_query_option = "{flag} api_key_query"

    def __init__(self, model: str, options: ProviderOptions, context: ProviderContext) -> None:
        super().__init__(model, options, context)
        assert isinstance(options, OpenAICompatibleOptions)
        self.compatible_options = options
        self._key: str | None = None
        if options.api_key is not None:
            self._key = options.api_key.get_secret_value()
        elif options.api_key_env is not None:
            name = options.api_key_env
            if not _VARIABLE_NAME.fullmatch(name):  # not echoed: a key given here by mistake would be shown
                raise ConfigError(
                    f"openai-compatible/{model}: api_key_env must be the name of an environment variable "
                    "(letters, digits and _), not the key itself"
                )
            value = os.environ.get(name)
            self._key = (value or "").strip()  # padded, it would be sent one way and redacted another
            if not self._key:
                state = "is not set" if value is None else "holds no key (it is blank)"
                raise ConfigError(f"openai-compatible/{model}: api_key_env={name} but that variable {state}")
        if self._key and holds_secret(self.base_url, [self._key]):  # the base URL is recorded in the manifest
            raise ConfigError(
                f"openai-compatible/{model}: base_url holds the API key, and the base_url is recorded in the "
                f"manifest; give the key through {context.options_flag} api_key_env=NAME only"
            )
        if options.api_key_query is not None and options.api_key_query in parse_qs(urlsplit(self.base_url).query):
            raise ConfigError(
                f"openai-compatible/{model}: base_url's query already has {options.api_key_query}=, which "
                f"api_key_query={options.api_key_query} would send twice (servers read the first)"
            )
        sent_in = options.api_key_header or options.api_key_query
        if sent_in is not None and not self._key and not context.offline:
            which = "api_key_header" if options.api_key_header else "api_key_query"
            raise ConfigError(
                f"openai-compatible/{model}: {which}={sent_in} but no key is given: give it through "
                f"{context.options_flag} api_key_env=NAME (or api_key=...)"
            )

    @property
    def auth_failure_hint(self) -> str:
        if not self._key:
            return self.key_source
        # the right key sent in another place than the server reads it from is refused all the same
        options, flag = self.compatible_options, self.context.options_flag
        if options.api_key_header is not None:
            sent = f" than the header {options.api_key_header}"
        elif options.api_key_query is not None:
            sent = f" than the query parameter {options.api_key_query}"
        else:
            sent = ""
        return (
            f"{self.key_source}; or the server reads its key elsewhere{sent}: {flag} api_key_header=NAME or "
            f"{flag} api_key_query=NAME"
        )

    @property
    def endpoint(self) -> Endpoint:
        return self.compatible_options.endpoint

    @property
    def streaming(self) -> bool:
        return self.compatible_options.stream and self.endpoint != "responses"

    @property
    def stream_asked(self) -> bool:
        return self.compatible_options.stream

    streamed_endpoints = "Chat Completions and completions"

    def auth_headers(self) -> dict[str, str]:
        options = self.compatible_options
        if not self._key or options.api_key_query is not None:
            return {}
        if options.api_key_header is not None:
            return {options.api_key_header.lower(): self._key}
        return {"authorization": f"Bearer {self._key}"}

    def sent_base_url(self) -> str:
        name = self.compatible_options.api_key_query
        if name is None or not self._key:
            return self.base_url
        parts = urlsplit(self.base_url)
        return urlunsplit(parts._replace(query="&".join(filter(None, [parts.query, urlencode({name: self._key})]))))

    def own_secrets(self) -> list[str]:
        if not self._key:
            return []
        # a server that echoes its URL shows the key in the query as it was sent (form-encoded) or encoded again
        # its own way: each common encoding is redacted
        encoded = [quote_plus(self._key), quote(self._key, safe=""), quote(self._key), quote_plus(self._key, safe="/")]
        encoded.append(quote(encoded[0], safe=""))  # encoded once more by a server that logs the query it received
        return list(dict.fromkeys([self._key, *encoded]))


__all__ = ["OpenAICompatibleOptions", "OpenAICompatibleProvider"]
