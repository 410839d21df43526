"""The model registry: the built-in catalog (``data/catalog.json``) plus an agent's ``models.json``.

``models.json`` uses pi's schema and is additive::

    {"providers": {"vllm": {"baseUrl": "http://gpu:8000/v1", "api": "openai-completions",
                            "apiKey": "$VLLM_KEY", "models": [{"id": "qwen3-32b"}]},
                   "openai": {"baseUrl": "https://proxy.internal/v1"}}}

A new provider needs ``baseUrl``, ``api`` and ``models``; naming a built-in provider with only
``baseUrl`` re-targets all its models; a ``models`` array upserts by ``id``. A malformed file is
a :class:`~fastagent_cli.errors.ConfigError` naming the file.

Specs are ``provider/modelId`` with an optional ``:thinking`` suffix (``anthropic/claude-sonnet-4-5:high``);
a bare model id is looked up across providers. ``scripted/<name>`` is the offline test model.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from functools import cache
from pathlib import Path
from typing import Any, cast

from fastagent_cli.errors import ConfigError, ModelError
from fastagent_cli.models.provider_transport import parse_ca_file, parse_timeouts
from fastagent_cli.models.types import THINKING_LEVELS, ModelInfo, ThinkingLevel

__all__ = ["SUPPORTED_APIS", "ModelRegistry", "ProviderInfo", "parse_spec"]

SUPPORTED_APIS = ("openai-completions", "openai-responses", "anthropic-messages")
SCRIPTED = "scripted"
_MODEL_DEFAULTS: dict[str, Any] = {"contextWindow": 128_000, "maxTokens": 16_384}


@dataclass(slots=True)
class ProviderInfo:
    name: str
    title: str
    base_url: str
    api: str
    api_key_env: tuple[str, ...] = ()
    api_key: str | None = None
    headers: dict[str, str] = field(default_factory=dict)
    compat: dict[str, Any] = field(default_factory=dict)
    default_model: str | None = None
    models: dict[str, ModelInfo] = field(default_factory=dict)
    custom: bool = False
    oauth: bool = False
    """A subscription login exists for it (``fastagent login <name>``)."""
    key_optional: bool = False
    """A key is used when set but not needed (the catalog's ``local`` server)."""
    timeouts: dict[str, float] = field(default_factory=dict)
    ca_file: str | None = None

    @property
    def needs_key(self) -> bool:
        return bool(self.api_key_env) or self.api_key is not None


@cache
def _catalog() -> dict[str, Any]:
    text = (Path(__file__).resolve().parent.parent / "data" / "catalog.json").read_text(encoding="utf-8")
    return cast(dict[str, Any], json.loads(text))


def _model(provider: ProviderInfo, raw: Mapping[str, Any]) -> ModelInfo:
    spec = {**_MODEL_DEFAULTS, **raw}
    compat = {**provider.compat, **(spec.get("compat") or {})}
    return ModelInfo(
        provider=provider.name,
        id=str(spec["id"]),
        api=str(spec.get("api") or provider.api),
        base_url=str(spec.get("baseUrl") or provider.base_url),
        name=str(spec.get("name") or spec["id"]),
        reasoning=bool(spec.get("reasoning", False)),
        input=tuple(spec.get("input") or ("text",)),
        context_window=int(spec["contextWindow"]),
        max_tokens=int(spec["maxTokens"]),
        cost={k: float(v) for k, v in (spec.get("cost") or {}).items()},
        headers={**provider.headers, **(spec.get("headers") or {})},
        compat=compat,
        api_key_env=provider.api_key_env,
        api_key=provider.api_key,
        oauth=provider.oauth,
        key_optional=provider.key_optional,
        timeouts=dict(provider.timeouts),
        ca_file=provider.ca_file,
    )


def _check_model_types(raw: Mapping[str, Any]) -> None:
    """Types as written, never coerced: ``"reasoning": "no"`` must not turn reasoning on."""
    if "reasoning" in raw and not isinstance(raw["reasoning"], bool):
        raise ValueError(f"reasoning must be true or false, not {json.dumps(raw['reasoning'])}")
    for key in ("contextWindow", "maxTokens"):
        value = raw.get(key)
        if key in raw and (isinstance(value, bool) or not isinstance(value, int) or value <= 0):
            raise ValueError(f"{key} must be a positive integer, not {json.dumps(value)}")
    cost = raw.get("cost")
    if "cost" in raw and not (
        isinstance(cost, dict)
        and all(isinstance(v, int | float) and not isinstance(v, bool) for v in cost.values())
    ):
        raise ValueError("cost must be an object of numbers ($ per million tokens)")
    kinds = raw.get("input")
    if "input" in raw and not (isinstance(kinds, list) and set(kinds) <= {"text", "image"}):
        raise ValueError('input must be a list of "text" and "image"')


def _builtin_providers() -> dict[str, ProviderInfo]:
    out: dict[str, ProviderInfo] = {}
    for name, raw in _catalog()["providers"].items():
        provider = ProviderInfo(
            name=name,
            title=raw.get("name", name),
            base_url=raw["baseUrl"],
            api=raw["api"],
            api_key_env=tuple(raw.get("apiKeyEnv") or ()),
            headers=dict(raw.get("headers") or {}),
            compat=dict(raw.get("compat") or {}),
            default_model=raw.get("defaultModel"),
            oauth=bool(raw.get("oauth", False)),
            key_optional=bool(raw.get("keyOptional", False)),
        )
        provider.models = {m["id"]: _model(provider, m) for m in raw["models"]}
        out[name] = provider
    return out


def parse_spec(spec: str) -> tuple[str, ThinkingLevel | None]:
    """Split a ``:thinking`` suffix off a spec, only when it names a valid level."""
    head, sep, tail = spec.rpartition(":")
    if sep and tail in THINKING_LEVELS:
        level: ThinkingLevel = tail  # checked against THINKING_LEVELS above
        return head, level
    return spec, None


class ModelRegistry:
    def __init__(self, models_json: Path | None = None) -> None:
        self.providers = _builtin_providers()
        self.models_json = models_json if models_json is not None and models_json.is_file() else None
        if self.models_json is not None:
            _apply_models_json(self.providers, self.models_json)

    def resolve(self, spec: str) -> ModelInfo:
        """The model a spec names (thinking suffix ignored; use :func:`parse_spec` for it)."""
        base, _ = parse_spec(spec.strip())
        if not base:
            raise ModelError("empty model spec")
        provider_name, slash, model_id = base.partition("/")
        if provider_name == SCRIPTED:
            if not model_id:
                raise ModelError('scripted model needs a name: "scripted/<name>"')
            info = ModelInfo(provider=SCRIPTED, id=model_id, api=SCRIPTED, name=model_id, reasoning=True)
            return replace(info, input=("text", "image"))  # a test model takes whatever it is sent
        provider = (
            (self.providers.get(provider_name) or self.providers.get(provider_name.lower()))
            if slash
            else None
        )
        if provider is not None:
            if not model_id:
                raise ModelError(f'model spec "{spec}" names no model: use "{provider_name}/<model>"')
            found = provider.models.get(model_id) or _casefold_get(provider.models, model_id)
            if found is None and provider.custom:
                raise ModelError(_not_listed(provider, model_id))
            return found or _model(provider, {"id": model_id})
        matches = [
            m for p in self.providers.values() for m in p.models.values() if m.id.lower() == base.lower()
        ]
        if len(matches) == 1:
            return matches[0]
        if len(matches) > 1:
            names = ", ".join(sorted(m.spec for m in matches))
            raise ModelError(f'model "{base}" is offered by several providers: {names}. Name one.')
        if slash:
            known = ", ".join(sorted(self.providers))
            close = _closest(provider_name, [*self.providers, SCRIPTED])
            hint = f' Did you mean "{close}/{model_id}"?' if close else ""
            raise ModelError(
                f'unknown provider "{provider_name}" in model "{spec}".{hint} Known providers: {known}, '
                "scripted (add your own endpoint in models.json next to fastagent.toml)"
            )
        raise ModelError(f'unknown model "{spec}": use provider/model (see `fastagent models`)')

    def unlisted_warning(self, spec: str) -> str | None:
        """For a catalog provider that takes ids it does not list: a warning when ``spec``'s id is
        not listed (a typo fails later on something else), with the closest listed id. ``None``
        when it is listed, or the provider lists nothing; a models.json provider's unlisted id is
        :meth:`resolve`'s error instead."""
        base, _ = parse_spec(spec.strip())
        provider_name, slash, model_id = base.partition("/")
        provider = self.providers.get(provider_name) or self.providers.get(provider_name.lower())
        if not slash or provider is None or provider.custom or not provider.models or not model_id:
            return None
        if model_id in provider.models or _casefold_get(provider.models, model_id) is not None:
            return None
        close = _closest(model_id, list(provider.models))
        hint = f'did you mean "{provider.name}/{close}"? ' if close else ""
        return (
            f'model "{base}" is not in the catalog: {hint}(it is sent as written; '
            f"`fastagent models {provider.name}` lists the known ones)"
        )

    def specs(self, search: str | None = None) -> list[str]:
        """Sorted ``provider/modelId`` lines, filtered by case-insensitive substring."""
        needle = (search or "").lower()
        out = [m.spec for p in self.providers.values() for m in p.models.values()]
        return sorted(s for s in out if needle in s.lower())


def _closest(name: str, choices: list[str]) -> str | None:
    import difflib

    by_lower = {c.lower(): c for c in choices}
    found = difflib.get_close_matches(name.lower(), list(by_lower), n=1, cutoff=0.75)
    return by_lower[found[0]] if found else None


def _not_listed(provider: ProviderInfo, model_id: str) -> str:
    listed = list(provider.models)
    close = _closest(model_id, listed)
    hint = f' Did you mean "{provider.name}/{close}"?' if close else ""
    shown = ", ".join(listed[:8]) + (", ..." if len(listed) > 8 else "")
    return (
        f'model "{model_id}" is not among the models of provider "{provider.name}" in models.json '
        f"(providers.{provider.name}.models: {shown}).{hint} Add it there, or pick a listed one"
    )


def _casefold_get(models: Mapping[str, ModelInfo], model_id: str) -> ModelInfo | None:
    lowered = model_id.lower()
    return next((m for key, m in models.items() if key.lower() == lowered), None)


_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


def _apply_models_json(providers: dict[str, ProviderInfo], path: Path) -> None:
    def bad(message: str) -> ConfigError:
        return ConfigError(f"{path}: {message}")

    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise bad(f"invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}") from None
    except OSError as exc:
        raise bad(f"cannot read: {exc.strerror or exc}") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("providers"), dict):
        raise bad('expected {"providers": {"<name>": {...}}}')
    for name, raw in doc["providers"].items():
        if not isinstance(raw, dict):
            raise bad(f"providers.{name} must be an object")
        if name == SCRIPTED or not _NAME.match(name):
            raise bad(f'"{name}" is not a usable provider name')
        unknown = set(raw) - {
            "baseUrl",
            "api",
            "apiKey",
            "headers",
            "authHeader",
            "compat",
            "models",
            "modelOverrides",
            "name",
            "timeouts",
            "caFile",
        }
        if unknown:
            raise bad(f"providers.{name}: unknown key {sorted(unknown)[0]!r}")
        api = raw.get("api")
        if api is not None and api not in SUPPORTED_APIS:
            raise bad(
                f'providers.{name}.api "{api}" is not supported (use one of: {", ".join(SUPPORTED_APIS)})'
            )
        for key in ("baseUrl", "apiKey"):
            if key in raw and not isinstance(raw[key], str):
                raise bad(f"providers.{name}.{key} must be a string")
        for key in ("headers", "compat", "modelOverrides"):
            if key in raw and not isinstance(raw[key], dict):
                raise bad(f"providers.{name}.{key} must be an object")
        models = raw.get("models", [])
        if not isinstance(models, list) or not all(
            isinstance(m, dict) and isinstance(m.get("id"), str) for m in models
        ):
            raise bad(f'providers.{name}.models must be a list of objects with a string "id"')
        provider = providers.get(name)
        if provider is None:
            if not raw.get("baseUrl") or not api or not models:
                raise bad(f"providers.{name}: a new provider needs baseUrl, api and models")
            provider = ProviderInfo(
                name=name, title=raw.get("name", name), base_url=raw["baseUrl"], api=api, custom=True
            )
            providers[name] = provider
        provider.base_url = raw.get("baseUrl", provider.base_url)
        provider.api = api or provider.api
        provider.headers.update(raw.get("headers") or {})
        provider.compat.update(raw.get("compat") or {})
        if "apiKey" in raw:
            provider.api_key = raw["apiKey"]
        try:
            if "timeouts" in raw:
                provider.timeouts.update(parse_timeouts(raw["timeouts"]))
            if "caFile" in raw:
                provider.ca_file = parse_ca_file(raw["caFile"], path.parent)
        except ValueError as exc:
            raise bad(f"providers.{name}: {exc}") from None
        existing = dict(provider.models)
        provider.models = {}
        for model_id, info in existing.items():
            provider.models[model_id] = replace(
                _model(provider, {"id": model_id}),
                name=info.name,
                reasoning=info.reasoning,
                input=info.input,
                context_window=info.context_window,
                max_tokens=info.max_tokens,
                cost=info.cost,
            )
        for raw_model in models:
            try:
                _check_model_types(raw_model)
                provider.models[raw_model["id"]] = _model(provider, raw_model)
            except (TypeError, ValueError) as exc:
                raise bad(f"providers.{name}.models[{raw_model['id']}]: {exc}") from None
        for model_id, override in (raw.get("modelOverrides") or {}).items():
            if model_id in provider.models and isinstance(override, dict):
                current = provider.models[model_id]
                merged = {
                    "id": model_id,
                    "name": current.name,
                    "reasoning": current.reasoning,
                    "input": list(current.input),
                    "contextWindow": current.context_window,
                    "maxTokens": current.max_tokens,
                    "cost": dict(current.cost),
                    **override,
                }
                try:
                    _check_model_types(override)
                except ValueError as exc:
                    raise bad(f"providers.{name}.modelOverrides[{model_id}]: {exc}") from None
                provider.models[model_id] = _model(provider, merged)
        if not provider.default_model and provider.models:
            provider.default_model = next(iter(provider.models))
