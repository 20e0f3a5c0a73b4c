"""admin_token_file (the Helm chart's Secret): the gateway takes its admin
token from the operator's file instead of making STATE_DIR/admin.token, and
refuses to start, naming the file, when it is readable by others, missing,
or not a token."""
import os, subprocess, tempfile

from tests.lib.gateway_util import GATEWAY, Gateway, free_port

TOKEN = "ab" * 32


def write(d, name, text, mode):
    p = os.path.join(d, name)
    with open(p, "w") as f:
        f.write(text)
    os.chmod(p, mode)
    return p


def test_the_operators_token_file_is_the_admin_token(tmp_path):
    path = write(str(tmp_path), "token", TOKEN + "\n", 0o600)
    g = Gateway(extra_env={"OPENSHELL_GATEWAY_ADMIN_TOKEN_FILE": path}).start()
    try:
        assert g.request("GET", "/v1/sandboxes", token=TOKEN)[0] == 200
        assert g.request("GET", "/v1/sandboxes", token="cd" * 32)[0] == 401
        # Nothing was made in the state dir in its place.
        assert not os.path.exists(os.path.join(g.state_dir, "admin.token"))
    finally:
        g.cleanup()


def test_a_bad_token_file_stops_the_gateway_naming_it(tmp_path):
    d = str(tmp_path)
    cases = [(write(d, "loose", TOKEN, 0o644), "(is 644)"),
             (os.path.join(d, "missing"), "No such file"),
             (write(d, "short", "abc\n", 0o600), "not a token"),
             (write(d, "upper", TOKEN.upper(), 0o600), "not a token")]
    for path, word in cases:
        sd = tempfile.mkdtemp(prefix="osgw-", dir="/var/tmp")
        try:
            r = subprocess.run([GATEWAY, "--state-dir", sd, "--listen", f"127.0.0.1:{free_port()}"],
                               env=dict(os.environ, OPENSHELL_GATEWAY_ADMIN_TOKEN_FILE=path),
                               capture_output=True, text=True, timeout=20)
        finally:
            subprocess.run(["rm", "-rf", sd])
        assert r.returncode != 0, (path, r.stderr)
        assert path in r.stderr and word in r.stderr and "admin token" in r.stderr, r.stderr
