"""openshell-gateway's HTTP API against the real local driver: auth (admin
token, sandbox tokens limited to their own supervisor routes), strict request
validation with clear 4xx errors, resource versions, provider secrets never
visible in clear. Each refusal has a positive control beside it."""

import os
import stat

import pytest

from tests.lib import build
from tests.lib.gateway_util import Gateway, supervisors_for

pytestmark = build.needs("openshell-gateway", "openshell-supervisor")

SECRET = "s3cr3t-VALUE-7f1c9a2e55d0"


@pytest.fixture
def gw():
    g = Gateway().start()
    yield g
    g.cleanup()


def create(gw, name, **kw):
    body = {"name": name, "command": ["sleep", "300"], **kw}
    return gw.request("POST", "/v1/sandboxes", body)


def test_state_files_are_private(gw):
    for f in ("admin.token", "secrets.key", "gateway.db"):
        mode = stat.S_IMODE(os.stat(os.path.join(gw.state_dir, f)).st_mode)
        assert mode == 0o600, (f, oct(mode))


def test_missing_or_wrong_token_is_401_admin_token_is_accepted(gw):
    st, body = gw.request("GET", "/v1/sandboxes", token=None)
    assert st == 401 and body["error"] == "unauthenticated"
    assert "Authorization: Bearer" in body["message"]
    st, body = gw.request("GET", "/v1/sandboxes", token="0" * 64)
    assert st == 401 and body["error"] == "unauthenticated"
    st, body = gw.request("GET", "/v1/sandboxes")
    assert st == 200 and body == {"sandboxes": []}


def test_malformed_json_is_400(gw):
    st, body = gw.request("POST", "/v1/sandboxes", raw='{"name": "x",')
    assert st == 400 and body["error"] == "invalid_json"
    st, body = gw.request("POST", "/v1/sandboxes", raw='[1, 2]')
    assert st == 400 and "JSON object" in body["message"]
    st, body = gw.request("POST", "/v1/sandboxes", raw='{"name": "a", "name": "b"}')
    assert st == 400


def test_unknown_field_is_400_naming_it(gw):
    st, body = create(gw, "unk", colour="blue")
    assert st == 400 and body["error"] == "unknown_field"
    assert "colour" in body["message"]
    st, body = create(gw, "unk")
    assert st == 201 and body["name"] == "unk"


def test_oversize_body_is_413(gw):
    big = '{"name": "big", "policy": "' + "x" * (5 << 20) + '"}'  # GW_BODY_MAX is 4 MiB
    st, body = gw.request("POST", "/v1/sandboxes", raw=big)
    assert st == 413 and body["error"] == "body_too_large"


@pytest.mark.parametrize("name", ["Upper", "-lead", "trail-", "sp ace", "a" * 64, "dot.ted", ""])
def test_bad_names_are_400(gw, name):
    st, body = create(gw, name)
    assert st == 400 and "name" in body["message"], body


def test_bad_values_are_400_naming_the_field(gw):
    st, body = create(gw, "envbad", env={"HTTPS_PROXY": "http://evil"})
    assert st == 400 and "HTTPS_PROXY" in body["message"]
    st, body = create(gw, "cmdbad", command=[])
    assert st == 400 and "command" in body["message"]
    st, body = create(gw, "rcbad", runtime_class_name="kata")
    assert st == 400 and "runtime_class_name" in body["message"]
    st, body = create(gw, "provbad", providers=["nope"])
    assert st == 400 and "nope" in body["message"]


def test_invalid_policy_is_422(gw):
    st, body = create(gw, "badpol", policy="version: 1\nnetwork_policies: 7\n")
    assert st == 422 and "policy" in body["message"]
    assert gw.sandbox("badpol") is None


def test_duplicate_name_is_409(gw):
    assert create(gw, "dup")[0] == 201
    st, body = create(gw, "dup")
    assert st == 409 and "dup" in body["message"]


def test_unknown_sandbox_is_404(gw):
    st, body = gw.request("GET", "/v1/sandboxes/ghost")
    assert st == 404 and body["error"] == "not_found"


def test_stale_resource_version_is_409(gw):
    st, made = create(gw, "rv")
    assert st == 201
    gw.wait_phase("rv", "Ready")
    cur = gw.sandbox("rv")["resource_version"]
    st, body = gw.request("POST", "/v1/sandboxes/rv/stop", {"resource_version": cur - 1})
    assert st == 409 and body["error"] == "conflict"
    st, body = gw.request("POST", "/v1/sandboxes/rv/stop", {"resource_version": cur})
    assert st == 202 and body["phase"] == "Stopping"


def sandbox_token(gw, sid):
    with open(os.path.join(gw.sandbox_dir(sid), "token")) as f:
        return f.read().strip()


def test_sandbox_token_only_reaches_its_own_supervisor_routes(gw):
    pol = "version: 1\n"
    a = create(gw, "tok-a", policy=pol)[1]
    b = create(gw, "tok-b", policy=pol)[1]
    ta = sandbox_token(gw, a["id"])
    mode = stat.S_IMODE(os.stat(os.path.join(gw.sandbox_dir(a["id"]), "token")).st_mode)
    assert mode == 0o600
    # Positive control: its own policy.
    st, body = gw.request("GET", f"/v1/supervisor/sandboxes/{a['id']}/policy", token=ta)
    assert st == 200 and body["policy"] == pol
    # Another sandbox's route, and admin routes: refused.
    st, body = gw.request("GET", f"/v1/supervisor/sandboxes/{b['id']}/policy", token=ta)
    assert st == 403
    for method, path in [("GET", "/v1/sandboxes"), ("GET", "/v1/providers"),
                         ("DELETE", "/v1/sandboxes/tok-b"), ("GET", "/v1/gateway/status")]:
        st, body = gw.request(method, path, token=ta)
        assert st == 403 and body["error"] == "forbidden", (path, body)
    # The admin token is not a supervisor token either.
    st, _ = gw.request("GET", f"/v1/supervisor/sandboxes/{a['id']}/policy")
    assert st == 403
    assert gw.sandbox("tok-b") is not None


def test_provider_secrets_never_appear_in_clear(gw):
    st, body = gw.request("POST", "/v1/providers", {
        "name": "gh", "credentials": {"GITHUB_TOKEN": SECRET}, "endpoints": ["api.github.com:443"]})
    assert st == 201 and body["credential_keys"] == ["GITHUB_TOKEN"]
    answers = [body]
    answers.append(gw.request("GET", "/v1/providers")[1])
    answers.append(gw.request("GET", "/v1/providers/gh")[1])
    st, sb = create(gw, "withcred", providers=["gh"])
    assert st == 201
    answers.append(sb)
    answers.append(gw.request("GET", "/v1/sandboxes/withcred")[1])
    for a in answers:
        assert SECRET not in str(a)
    # Positive control: the secret is delivered to the sandbox's supervisor (0600 file).
    cred = os.path.join(gw.sandbox_dir(sb["id"]), "credentials.json")
    assert SECRET in open(cred).read()
    assert stat.S_IMODE(os.stat(cred).st_mode) == 0o600
    # Never in the database (any of its files) or the gateway's log.
    for f in os.listdir(gw.state_dir):
        if f.startswith("gateway.db"):
            assert SECRET.encode() not in open(os.path.join(gw.state_dir, f), "rb").read(), f
    assert SECRET not in gw.log_text()
    # A provider in use cannot be deleted; once unused it can.
    st, body = gw.request("DELETE", "/v1/providers/gh")
    assert st == 409 and "withcred" in body["message"]


def test_inference_api_key_is_never_returned(gw):
    st, body = gw.request("PUT", "/v1/inference", {"provider": "openai", "base_url":
                                                   "http://127.0.0.1:9", "model": "m",
                                                   "api_key": SECRET})
    assert st == 200 and body["api_key_set"] is True and SECRET not in str(body)
    st, body = gw.request("GET", "/v1/inference")
    assert st == 200 and body["model"] == "m" and SECRET not in str(body)
    for f in os.listdir(gw.state_dir):
        if f.startswith("gateway.db"):
            assert SECRET.encode() not in open(os.path.join(gw.state_dir, f), "rb").read()
    st, body = gw.request("PUT", "/v1/inference", {"provider": "x", "base_url": "http://a",
                                                   "model": "m"})
    assert st == 400 and "provider" in body["message"]


def test_delete_stops_the_supervisor_and_removes_the_directory(gw):
    sid = create(gw, "del")[1]["id"]
    gw.wait_phase("del", "Ready")
    assert supervisors_for(sid)
    st, body = gw.request("DELETE", "/v1/sandboxes/del")
    assert st == 202 and body["phase"] == "Deleting"
    from tests.lib.gateway_util import wait_for
    wait_for(lambda: gw.sandbox("del") is None, 30, what="sandbox gone")
    assert not supervisors_for(sid)
    assert not os.path.exists(gw.sandbox_dir(sid))
