"""deploy/kubernetes/: every manifest is valid against the Kubernetes schemas, and says what the app needs.

No cluster runs here: kubernetes-validate checks each object against the API's own JSON schemas,
which it ships (no network at test time).
"""

from __future__ import annotations

import json
from typing import Any

import kubernetes_validate
import pytest
import yaml

from app.config import Settings
from app.web.learner import COOKIE
from tests.support.appserver import ROOT

MANIFESTS = ROOT / "deploy" / "kubernetes"
# The oldest Kubernetes the manifests are written for (securityContext.appArmorProfile is 1.30's), and
# the newest the installed validator knows.
VERSIONS = ["1.30.0", kubernetes_validate.utils.latest_version()]


def documents() -> list[tuple[str, dict[str, Any]]]:
    found = []
    for path in sorted(MANIFESTS.glob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            if doc is not None:
                found.append((path.name, doc))
    return found


def objects(kind: str) -> list[dict[str, Any]]:
    return [doc for _, doc in documents() if doc["kind"] == kind]


def the(kind: str, name: str | None = None) -> dict[str, Any]:
    matching = [doc for doc in objects(kind) if name is None or doc["metadata"]["name"] == name]
    assert len(matching) == 1, f"expected one {kind} {name or ''}"
    return matching[0]


def container() -> dict[str, Any]:
    return the("Deployment")["spec"]["template"]["spec"]["containers"][0]


@pytest.mark.parametrize("version", VERSIONS)
def test_every_manifest_is_valid_against_the_kubernetes_schemas(version: str) -> None:
    docs = documents()
    assert {doc["kind"] for _, doc in docs} >= {"Namespace", "ConfigMap", "Secret", "Deployment", "Service",
                                                "Ingress"}  # fmt: skip
    for name, doc in docs:
        try:
            kubernetes_validate.validate(doc, version, strict=True)
        except kubernetes_validate.ValidationError as exc:
            raise AssertionError(f"{name}: {doc['kind']} {doc['metadata']['name']}: {exc.message}") from exc


def test_everything_is_in_the_namespace_that_admits_the_sandbox() -> None:
    namespace = the("Namespace")
    assert namespace["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "privileged"
    for _, doc in documents():
        if doc["kind"] != "Namespace":
            assert doc["metadata"]["namespace"] == namespace["metadata"]["name"]


def test_probes_ask_healthz_on_the_port_the_app_serves() -> None:
    app = container()
    assert app["args"][-4:] == ["--host", "0.0.0.0", "--port", str(app["ports"][0]["containerPort"])]
    for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
        assert app[probe]["httpGet"] == {"path": "/healthz", "port": app["ports"][0]["name"]}


def test_the_container_gets_what_the_docs_say_the_sandbox_needs() -> None:
    hosting = (ROOT / "docs" / "hosting.md").read_text()
    context = container()["securityContext"]
    # docs/hosting.md, "In a container": root, SYS_ADMIN, our seccomp profile, AppArmor unconfined.
    assert "--cap-add SYS_ADMIN" in hosting and "SYS_ADMIN" in context["capabilities"]["add"]
    assert "ALL" not in context["capabilities"].get("drop", [])
    assert context["runAsUser"] == 0 and context["privileged"] is False
    assert "seccomp=deploy/seccomp.json" in hosting
    assert context["seccompProfile"]["type"] == "Localhost"
    assert context["seccompProfile"]["localhostProfile"].endswith("seccomp.json")
    assert "apparmor=unconfined" in hosting and context["appArmorProfile"] == {"type": "Unconfined"}
    assert the("Deployment")["spec"]["template"]["spec"]["automountServiceAccountToken"] is False


def test_settings_name_real_settings_and_include_the_shared_ones() -> None:
    names = set(the("ConfigMap")["data"]) | set(the("Secret")["stringData"])
    fields = {f"PLAYGROUND_{name.upper()}" for name in Settings.model_fields}
    assert names <= fields, f"not settings of the app: {sorted(names - fields)}"
    assert {"PLAYGROUND_DATABASE_URL", "PLAYGROUND_COOKIE_SECRET", "PLAYGROUND_INSTRUCTOR_TOKEN"} <= set(
        the("Secret")["stringData"]
    )
    env_from = container()["envFrom"]
    assert {"configMapRef": {"name": the("ConfigMap")["metadata"]["name"]}} in env_from
    assert {"secretRef": {"name": the("Secret")["metadata"]["name"]}} in env_from
    values = {  # each value parses as the app reads it (lists are JSON)
        name.removeprefix("PLAYGROUND_").lower(): json.loads(value) if value.startswith("[") else value
        for name, value in the("ConfigMap")["data"].items()
    }
    settings = Settings(**values)
    assert settings.trusted_proxies and "*" not in settings.trusted_proxies


def test_ingress_hashes_pages_by_the_learner_cookie_and_endpoints_by_path() -> None:
    pod_labels = the("Deployment")["spec"]["template"]["metadata"]["labels"]
    services = {svc["metadata"]["name"]: svc for svc in objects("Service")}
    for svc in services.values():  # every Service reaches the app's pods on the app's port
        assert svc["spec"]["selector"].items() <= pod_labels.items()
        assert svc["spec"]["ports"][0]["targetPort"] == container()["ports"][0]["name"]

    routes: dict[str, tuple[str, dict[str, str]]] = {}
    for ingress in objects("Ingress"):
        annotations = ingress["metadata"]["annotations"]
        for rule in ingress["spec"]["rules"]:
            for path in rule["http"]["paths"]:
                service = path["backend"]["service"]["name"]
                assert service in services and path["backend"]["service"]["port"] == {"name": "http"}
                routes[path["path"]] = (service, annotations)

    cookie_hash = f"$cookie_{COOKIE}"
    for path in ("/", "/resume/", "/join/"):
        assert routes[path][1]["nginx.ingress.kubernetes.io/upstream-hash-by"] == cookie_hash
        assert "nginx.ingress.kubernetes.io/affinity" not in routes[path][1]  # it would set its own cookie
    endpoints, mcp = routes["/mcp/"]
    assert mcp["nginx.ingress.kubernetes.io/upstream-hash-by"] == "$uri"
    assert mcp["nginx.ingress.kubernetes.io/proxy-buffering"] == "off"
    assert int(mcp["nginx.ingress.kubernetes.io/proxy-read-timeout"]) >= 3600
    # A hash setting belongs to a backend: the path-hashed one has a Service of its own.
    assert all(service != endpoints for path, (service, _) in routes.items() if path != "/mcp/")
    for path in ("/mcp/", "/resume/", "/join/"):  # secrets in the URL: no access log
        assert routes[path][1]["nginx.ingress.kubernetes.io/enable-access-log"] == "false"
    assert int(routes["/"][1]["nginx.ingress.kubernetes.io/proxy-read-timeout"]) >= 3600  # WebSockets


def test_a_broken_manifest_is_caught() -> None:
    """The schema check has teeth: a misspelt field and a wrong type both fail."""
    deployment = the("Deployment")
    spec = deployment["spec"]["template"]["spec"]
    broken = {**deployment, "spec": {**deployment["spec"], "replicas": "two"}}
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(broken, VERSIONS[-1], strict=True)
    misspelt = {**deployment, "spec": {**deployment["spec"], "template": {
        "metadata": deployment["spec"]["template"]["metadata"],
        "spec": {**spec, "containers": [{**spec["containers"][0], "securityContex": {}}]}}}}  # fmt: skip
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(misspelt, VERSIONS[-1], strict=True)
