"""Model providers: one file per provider, each a ``Provider`` subclass registered by name.

``create_provider("mock/strong", {...}, context)`` looks the prefix up in the registry; built-in and
third-party providers register the same way (an entry point in ``eval_harness.providers``).
"""

from eval_harness.providers.base import (
    PROVIDERS,
    Provider,
    ProviderContext,
    ProviderOptions,
    create_provider,
    register_provider,
)

__all__ = ["PROVIDERS", "Provider", "ProviderContext", "ProviderOptions", "create_provider", "register_provider"]
