"""The files of ``deploy/`` beyond what the balancer tests run: the Kubernetes sketch
is valid YAML of the kinds it promises and carries the same HAProxy configuration,
and ``local.sh`` refuses what it cannot do, saying why."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from .cluster import LOCAL_SH, ROOT, require_haproxy

KUBERNETES = ROOT / "deploy" / "kubernetes"
HAPROXY_CFG = ROOT / "deploy" / "haproxy.cfg"


def documents(path: Path) -> list[dict[str, Any]]:
    return [doc for doc in yaml.safe_load_all(path.read_text(encoding="utf-8")) if doc]


def by_kind(kind: str) -> list[dict[str, Any]]:
    found = [doc for path in KUBERNETES.glob("*.yaml") for doc in documents(path)]
    return [doc for doc in found if doc["kind"] == kind]


def test_the_sketch_is_yaml_of_the_kinds_it_promises() -> None:
    kinds = sorted(doc["kind"] for path in KUBERNETES.glob("*.yaml") for doc in documents(path))
    assert kinds == [
        "ConfigMap",
        "Deployment",
        "Deployment",
        "Service",
        "Service",
        "Service",
        "StatefulSet",
    ]
    assert all({"apiVersion", "kind", "metadata"} <= set(doc) for doc in by_kind("Deployment"))


def test_the_grace_period_outlasts_the_drain_deadline() -> None:
    (servers,) = [doc for doc in by_kind("Deployment") if doc["metadata"]["name"] == "code-mode"]
    pod = servers["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    args = container["args"]
    deadline = float(args[args.index("--drain-deadline") + 1])
    assert pod["terminationGracePeriodSeconds"] > deadline
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"
    # The balancer reaches draining pods too: their addresses stay in DNS.
    (headless,) = [doc for doc in by_kind("Service") if doc["metadata"]["name"] == "code-mode"]
    assert headless["spec"]["clusterIP"] == "None"
    assert headless["spec"]["publishNotReadyAddresses"] is True


def test_the_servers_share_the_redis_of_the_sketch() -> None:
    (servers,) = [doc for doc in by_kind("Deployment") if doc["metadata"]["name"] == "code-mode"]
    (container,) = servers["spec"]["template"]["spec"]["containers"]
    store = container["args"][container["args"].index("--store") + 1]
    (redis,) = by_kind("StatefulSet")
    (service,) = [doc for doc in by_kind("Service") if doc["metadata"]["name"] == "code-mode-redis"]
    assert store.startswith("redis://:$(REDIS_PASSWORD)@code-mode-redis:6379")
    assert service["spec"]["selector"] == redis["spec"]["selector"]["matchLabels"]


def test_the_balancer_of_the_sketch_is_deploy_haproxy_cfg(tmp_path: Path) -> None:
    (config_map,) = by_kind("ConfigMap")
    config = config_map["data"]["haproxy.cfg"]
    # The same file, with the lines that find the pods appended to its last section.
    assert config.startswith(HAPROXY_CFG.read_text(encoding="utf-8")), (
        "copy deploy/haproxy.cfg into the ConfigMap of deploy/kubernetes/balancer.yaml"
    )
    assert "server-template" in config.removeprefix(HAPROXY_CFG.read_text(encoding="utf-8"))
    haproxy = require_haproxy()
    path = tmp_path / "haproxy.cfg"
    path.write_text(config, encoding="utf-8")
    env = {
        **os.environ,
        "CODE_MODE_BALANCER_BIND": "127.0.0.1:8080",
        "CODE_MODE_BALANCER_STATS": str(tmp_path / "haproxy.sock"),
    }
    checked = subprocess.run(
        [haproxy, "-c", "-f", str(path)], env=env, capture_output=True, text=True, check=False
    )
    assert checked.returncode == 0, checked.stderr


@pytest.mark.parametrize("args", [[], ["3"], ["0", "8000"], ["three", "8000"], ["2", "65535"]])
def test_local_sh_refuses_bad_arguments(args: list[str]) -> None:
    ran = subprocess.run(
        ["bash", str(LOCAL_SH), *args], capture_output=True, text=True, check=False
    )
    assert ran.returncode == 2
    assert "usage: deploy/local.sh N PORT" in ran.stderr or "at most 65535" in ran.stderr


def test_local_sh_names_the_install_when_haproxy_is_missing() -> None:
    env = {**os.environ, "HAPROXY": "haproxy-that-is-not-installed"}
    ran = subprocess.run(
        ["bash", str(LOCAL_SH), "1", "18000"], capture_output=True, text=True, env=env, check=False
    )
    assert ran.returncode == 127
    assert "apt-get install -y haproxy" in ran.stderr
