"""deploy/compose.yaml holds together: every file it mounts is in the repo, and each service's
config names the others by service name at the port they listen on (Prometheus scrapes
lagwatch's /metrics at the API port of the mounted Lagwatch config, and alerts
alertmanager:9093; Grafana's data source is prometheus:9090 and its dashboard folder is where the
dashboard is mounted). The Lagwatch config keeps every path inside the volume, and nothing is
published beyond the host's loopback.
"""

from __future__ import annotations

import tomllib
from pathlib import Path, PurePosixPath
from typing import Any

import pytest

from lagwatch.config import Config, parse_config
from lagwatch.config.network import is_loopback
from tests.deploy.yaml_files import load_yaml

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
#: The image's volume and default config path (Dockerfile: VOLUME, LAGWATCH_CONFIG).
VOLUME = PurePosixPath("/var/lib/lagwatch")
#: Where the official images listen and read their config.
PROMETHEUS_URL = "http://prometheus:9090"
PROMETHEUS_CONFIG = PurePosixPath("/etc/prometheus/prometheus.yml")
ALERTMANAGER = "alertmanager:9093"


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    return dict(load_yaml(DEPLOY / "compose.yaml"))


def service(compose: dict[str, Any], name: str) -> dict[str, Any]:
    assert name in compose["services"], f"compose.yaml has no service {name!r}"
    return dict(compose["services"][name])


def bind_mounts(spec: dict[str, Any]) -> dict[PurePosixPath, Path]:
    """Container path -> repo path, for each mount of a file or folder of the repo (not volumes)."""
    mounts = {}
    for entry in spec.get("volumes", []):
        source, target = entry.split(":")[:2]
        if source.startswith((".", "/")):
            mounts[PurePosixPath(target)] = (DEPLOY / source).resolve()
    return mounts


def mounted(spec: dict[str, Any], target: PurePosixPath) -> Path:
    """The repo file mounted at `target`, or the file under a mounted folder."""
    for container_path, repo_path in bind_mounts(spec).items():
        if target == container_path:
            return repo_path
        if target.is_relative_to(container_path):
            return repo_path / target.relative_to(container_path)
    raise AssertionError(f"nothing of the repo is mounted at {target}: {bind_mounts(spec)}")


@pytest.fixture(scope="module")
def lagwatch_config(compose: dict[str, Any]) -> Config:
    """The mounted Lagwatch config as the container reads it (its path, the compose environment)."""
    path = mounted(service(compose, "lagwatch"), VOLUME / "config.toml")
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    return parse_config(data, str(VOLUME / "config.toml"), environ={"LAGWATCH_BOOTSTRAP_SERVERS": "kafka1:9092"})


def test_every_mounted_file_and_the_build_context_are_in_the_repo(compose: dict[str, Any]) -> None:
    for name, spec in compose["services"].items():
        for target, source in bind_mounts(spec).items():
            assert source.exists(), f"service {name} mounts {source} at {target}: no such file in the repo"
    build = service(compose, "lagwatch")["build"]
    assert (DEPLOY / build["context"] / build["dockerfile"]).is_file()


def test_the_images_of_other_services_are_pinned_and_fully_qualified(compose: dict[str, Any]) -> None:
    for name, spec in compose["services"].items():
        if "build" in spec:
            continue
        image = spec["image"]
        assert image.startswith("docker.io/"), f"{name}: {image} (podman resolves only full names without a prompt)"
        assert ":" in image and not image.endswith(":latest"), f"{name}: {image} is not pinned to a release"


def test_the_lagwatch_config_keeps_the_lake_and_state_in_the_volume(
    compose: dict[str, Any], lagwatch_config: Config
) -> None:
    volumes = [entry.split(":") for entry in service(compose, "lagwatch")["volumes"]]
    assert [target for source, target, *_ in volumes if source in compose["volumes"]] == [str(VOLUME)]
    assert not lagwatch_config.embedded_broker, "LAGWATCH_BOOTSTRAP_SERVERS must set the cluster"
    written = {
        "lake.path": lagwatch_config.lake.path,
        "lake.duckdb_path": lagwatch_config.lake.duckdb_path,
        "spark.checkpoint_dir": lagwatch_config.spark.checkpoint_dir,
        "alerts.state_dir": lagwatch_config.alerts.state_dir,
        "state (lagwatch up)": "state",
    }
    for key, path in written.items():
        resolved = PurePosixPath(lagwatch_config.resolve_path(path))
        assert resolved.is_relative_to(VOLUME), f"{key} = {path} resolves to {resolved}, outside the volume"


def test_prometheus_scrapes_lagwatch_at_its_api_port_and_alerts_alertmanager(
    compose: dict[str, Any], lagwatch_config: Config
) -> None:
    spec = service(compose, "prometheus")
    prometheus = load_yaml(mounted(spec, PROMETHEUS_CONFIG))
    (job,) = [job for job in prometheus["scrape_configs"] if job["job_name"] == "lagwatch"]
    targets = [t for static in job["static_configs"] for t in static["targets"]]
    assert targets == [f"lagwatch:{lagwatch_config.api.port}"]
    assert job.get("metrics_path", "/metrics") == "/metrics"
    assert not is_loopback(lagwatch_config.api.host), "the API must listen beyond loopback for Prometheus"
    for rules in prometheus["rule_files"]:
        assert mounted(spec, PROMETHEUS_CONFIG.parent / rules).is_file(), f"rule file {rules} is not mounted"
    statics = [static for am in prometheus["alerting"]["alertmanagers"] for static in am["static_configs"]]
    assert [target for static in statics for target in static["targets"]] == [ALERTMANAGER]
    service(compose, ALERTMANAGER.split(":")[0])


def test_grafana_provisions_the_prometheus_service_and_the_mounted_dashboard(compose: dict[str, Any]) -> None:
    grafana = service(compose, "grafana")
    provisioning = mounted(grafana, PurePosixPath("/etc/grafana/provisioning"))
    (source,) = load_yaml(provisioning / "datasources" / "prometheus.yml")["datasources"]
    assert (source["type"], source["url"], source["isDefault"]) == ("prometheus", PROMETHEUS_URL, True)
    (provider,) = load_yaml(provisioning / "dashboards" / "lagwatch.yml")["providers"]
    folder = PurePosixPath(provider["options"]["path"])
    assert mounted(grafana, folder / "lagwatch.json") == (DEPLOY / "grafana" / "lagwatch.json").resolve()
    home = PurePosixPath(grafana["environment"]["GF_DASHBOARDS_DEFAULT_HOME_DASHBOARD_PATH"])
    assert mounted(grafana, home).is_file()


def test_only_the_dashboard_is_published_and_only_on_loopback(compose: dict[str, Any], lagwatch_config: Config) -> None:
    """The API and the dashboard run with allow_anonymous: the API stays on the compose network,
    the dashboard reaches the host's loopback alone (published further, it needs auth = oidc)."""
    port = lagwatch_config.dashboard.port
    assert service(compose, "lagwatch")["ports"] == [f"127.0.0.1:{port}:{port}"]
    for name, spec in compose["services"].items():
        for published in spec.get("ports", []):
            assert published.startswith("127.0.0.1:"), f"{name} publishes {published} beyond loopback"
