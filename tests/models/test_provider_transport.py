"""A provider's transport settings in ``models.json`` and ``[engine]``'s timeouts reach the
request: per-provider timeouts over the engine's, ``caFile`` relative to ``models.json``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fastagent_cli.definition.config import EngineSettings
from fastagent_cli.errors import ConfigError
from fastagent_cli.models.http_pool import model_pool
from fastagent_cli.models.registry import ModelRegistry


def registry(tmp_path: Path, **provider: object) -> ModelRegistry:
    raw = {
        "baseUrl": "https://gpu.internal/v1",
        "api": "openai-completions",
        "models": [{"id": "m"}],
        **provider,
    }
    path = tmp_path / "models.json"
    path.write_text(json.dumps({"providers": {"gpu": raw}}))
    return ModelRegistry(path)


def test_timeouts_and_ca_file_reach_the_model(tmp_path: Path) -> None:
    (tmp_path / "certs").mkdir()
    (tmp_path / "certs" / "ca.pem").write_text("-----BEGIN CERTIFICATE-----\n")
    model = registry(tmp_path, timeouts={"firstByte": 120, "connect": 2}, caFile="certs/ca.pem").resolve(
        "gpu/m"
    )
    assert dict(model.timeouts) == {"first_byte": 120.0, "connect": 2.0}
    assert model.ca_file == str(tmp_path / "certs" / "ca.pem")
    pool = model_pool(EngineSettings(first_byte_timeout=45, chunk_timeout=90))
    assert pool.timeouts(model.timeouts) == {
        "connect": 2.0,
        "first_byte": 120.0,
        "read": 90.0,
        "write": 60.0,
        "pool": 10.0,
    }
    assert pool.timeouts({"between_chunks": 7})["read"] == 7


@pytest.mark.parametrize(
    ("setting", "message"),
    [
        ({"caFile": "missing.pem"}, "providers.gpu: caFile '{dir}/missing.pem' does not exist"),
        ({"timeouts": {"firstByte": "60"}}, "providers.gpu: timeouts.firstByte must be a number of seconds"),
        ({"timeouts": [5]}, "providers.gpu: timeouts must be an object"),
    ],
)
def test_bad_transport_settings_name_the_provider(
    tmp_path: Path, setting: dict[str, object], message: str
) -> None:
    with pytest.raises(ConfigError) as caught:
        registry(tmp_path, **setting).resolve("gpu/m")
    assert message.format(dir=tmp_path) in caught.value.message
