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
from typing import ClassVar, Literal

from pydantic import Field

from eval_harness.errors import ConfigError
from eval_harness.providers._http import KeyOptions, holds_secret
from eval_harness.providers.base import ProviderContext, ProviderOptions, register_provider
from eval_harness.providers.openai import Endpoint, OpenAIWire


class OpenAICompatibleOptions(KeyOptions):
    """Options of ``openai-compatible/<model>``."""

    transport_only: ClassVar[frozenset[str]] = KeyOptions.transport_only | {"stream"}

    base_url: str | None = Field(default=None, description="The server's API root, e.g. http://127.0.0.1:8080/v1.")
    endpoint: Literal["chat", "completions"] = Field(
        default="chat", description="chat (/chat/completions) or completions (legacy /completions, plain prompt)."
    )
    stream: bool = Field(default=False, description="Ask for server-sent events (usage via stream_options).")


_VARIABLE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@register_provider("openai-compatible")
class OpenAICompatibleProvider(OpenAIWire):
    """An OpenAI-style server of the user's choosing."""

    Options = OpenAICompatibleOptions
    max_tokens_field = "max_tokens"
    key_hint = "{flag} api_key_env=NAME (or api_key=...)"

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
            self._key = os.environ.get(name, "").strip()  # padded, it would be sent one way and redacted another
            if not self._key:
                raise ConfigError(f"openai-compatible/{model}: api_key_env={name} but that variable is not set")
        if self._key and holds_secret(self.base_url, [self._key]):  # the base URL is recorded in the manifest
            raise ConfigError(
                f"openai-compatible/{model}: base_url holds the API key, and the base_url is recorded in the "
                "manifest; give the key through --model-arg api_key_env=NAME only"
            )

    @property
    def endpoint(self) -> Endpoint:
        return self.compatible_options.endpoint

    @property
    def streaming(self) -> bool:
        return self.compatible_options.stream

    def auth_headers(self) -> dict[str, str]:
        return {"authorization": f"Bearer {self._key}"} if self._key else {}

    def own_secrets(self) -> list[str]:
        return [self._key] if self._key else []


__all__ = ["OpenAICompatibleOptions", "OpenAICompatibleProvider"]
