"""docker-compose.yml, the Dockerfile and .env.example agree with each other and with the
settings. No Docker engine runs here: the structure is checked with PyYAML, and
`docker compose config` (or `docker-compose config`) validates the file when installed."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
SERVICES = {"postgres", "redis", "web", "worker", "beat"}
APP_SERVICES = ("web", "worker", "beat")


def _compose() -> dict[str, Any]:
    return yaml.safe_load((ROOT / "docker-compose.yml").read_text())


def _env_example() -> dict[str, str]:
    pairs = {}
    for line in (ROOT / ".env.example").read_text().splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            name, _, value = line.partition("=")
            pairs[name.strip()] = value.strip()
    return pairs


def _command(service: dict[str, Any]) -> str:
    command = service["command"]
    return command if isinstance(command, str) else " ".join(command)


def test_compose_has_the_five_services_with_pinned_major_versions():
    services = _compose()["services"]
    assert set(services) == SERVICES
    assert services["postgres"]["image"].split(":")[1].startswith("16")
    assert services["redis"]["image"].split(":")[1].startswith("7")


def test_every_service_has_a_health_check():
    for name, service in _compose()["services"].items():
        check = service.get("healthcheck")
        assert check and check.get("test"), f"{name} has no health check"
        assert check["test"][0] in ("CMD", "CMD-SHELL"), name


def test_app_services_build_the_image_and_read_env_file():
    services = _compose()["services"]
    for name in APP_SERVICES:
        service = services[name]
        assert service["build"]["dockerfile"] == "Dockerfile", name
        assert service["env_file"] in (".env", [".env"]), name
    assert "daphne -b 0.0.0.0 -p 8000 console.asgi:application" in _command(services["web"])
    assert re.search(r"migrate --noinput && exec daphne", _command(services["web"]))
    assert _command(services["worker"]).startswith("celery -A console worker")
    assert _command(services["beat"]).startswith("celery -A console beat")
    assert services["web"]["ports"] == ["8000:8000"]


def test_app_services_wait_for_healthy_dependencies():
    services = _compose()["services"]
    assert services["web"]["depends_on"] == {
        "postgres": {"condition": "service_healthy"},
        "redis": {"condition": "service_healthy"},
    }
    for name in ("worker", "beat"):
        # web runs the migrations: the others start once it answers its health check.
        assert services[name]["depends_on"]["web"] == {"condition": "service_healthy"}


def test_stateful_services_keep_their_data_on_named_volumes():
    compose = _compose()
    declared = set(compose["volumes"])
    used = set()
    for service in compose["services"].values():
        for volume in service.get("volumes", []):
            source = volume.split(":", 1)[0]
            assert not source.startswith((".", "/")), f"bind mount {volume}"
            used.add(source)
    assert used == declared
    mounts = {
        name: [v.split(":", 1)[1] for v in service.get("volumes", [])]
        for name, service in compose["services"].items()
    }
    assert mounts["postgres"] == ["/var/lib/postgresql/data"]
    assert mounts["redis"] == ["/data"]


def test_env_example_matches_compose_and_settings():
    env = _env_example()
    settings_source = (ROOT / "console" / "settings.py").read_text()
    read_by_settings = set(
        re.findall(r'env_(?:str|bool|int|list)\(\s*"([A-Z0-9_]+)"', settings_source)
    )
    for name in env:
        assert name in read_by_settings or name == "POSTGRES_PASSWORD", name
    assert {"DEBUG", "SECRET_KEY", "ALLOWED_HOSTS", "DATABASE_URL", "REDIS_URL"} <= set(env)
    assert env["DEBUG"] == "0"
    database = urlsplit(env["DATABASE_URL"])
    assert (database.hostname, database.port) == ("postgres", 5432)
    assert database.password == env["POSTGRES_PASSWORD"]
    postgres = _compose()["services"]["postgres"]["environment"]
    assert (database.username, database.path.lstrip("/")) == (
        postgres["POSTGRES_USER"],
        postgres["POSTGRES_DB"],
    )
    assert "${POSTGRES_PASSWORD" in postgres["POSTGRES_PASSWORD"]
    assert urlsplit(env["REDIS_URL"]).hostname == "redis"


def test_dockerfile_builds_the_console_on_python_313_slim():
    dockerfile = (ROOT / "Dockerfile").read_text()
    assert re.search(r"^FROM python:3\.13-slim$", dockerfile, re.M)
    assert re.search(r"apt-get install .*\bbubblewrap\b.*\bjq\b", dockerfile)
    assert "pip install -e ." in dockerfile
    assert "collectstatic --noinput" in dockerfile
    assert "daphne -b 0.0.0.0 -p 8000 console.asgi:application" in dockerfile
    assert re.search(r"^USER (?!root)", dockerfile, re.M)


def _compose_cli() -> list[str] | None:
    docker = shutil.which("docker")
    if docker:
        probe = subprocess.run([docker, "compose", "version"], capture_output=True, timeout=30)
        if probe.returncode == 0:
            return [docker, "compose"]
    legacy = shutil.which("docker-compose")
    return [legacy] if legacy else None


def test_compose_cli_accepts_the_file(tmp_path):
    cli = _compose_cli()
    if cli is None:
        pytest.skip("neither `docker compose` nor `docker-compose` is installed")
    shutil.copy(ROOT / "docker-compose.yml", tmp_path / "docker-compose.yml")
    shutil.copy(ROOT / "Dockerfile", tmp_path / "Dockerfile")
    shutil.copy(ROOT / ".env.example", tmp_path / ".env")
    result = subprocess.run(
        [*cli, "config"], cwd=tmp_path, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    resolved = yaml.safe_load(result.stdout)
    assert set(resolved["services"]) == SERVICES
    assert resolved["services"]["postgres"]["environment"]["POSTGRES_PASSWORD"] == "console"
