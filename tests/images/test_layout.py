# The archives `make images` writes, as files: valid OCI image layouts (every
# blob re-hashed, media types, diff_ids, refs), readable and copyable by the
# real skopeo, identical across two builds of one checkout, and with the
# image configuration each component needs (user, entrypoint, labels).
import datetime, io, json, os, re, shutil, subprocess, tarfile, tempfile

import pytest

from tests.lib import build
from tests.lib import image_util as iu

ARCHIVES = [f"openshell-{n}.tar" for n in iu.NAMES]


def git(*args):
    return subprocess.run(["git", "-C", build.REPO, *args], capture_output=True, text=True,
                          check=True).stdout.strip()


def commit_time():
    return int(git("log", "-1", "--format=%ct", "HEAD"))


@pytest.mark.parametrize("name", iu.NAMES)
def test_archive_is_an_oci_layout_with_both_tags(built, name):
    out, digests = built
    archive = os.path.join(out, f"openshell-{name}.tar")
    lay = iu.read_layout(archive)
    assert set(lay["images"]) == set(iu.refs(name)), lay["index"]
    got = {i["digest"] for i in lay["images"].values()}
    assert got == {digests[f"openshell-{name}.tar"]}, "both tags name the reported manifest"
    # Readers that stream the archive find the layout files first.
    assert lay["members"][:3] == ["oci-layout", "index.json", "manifest.json"]
    # Layers: sorted names, the commit time on every entry, fixed owners.
    when = int(os.environ.get("SOURCE_DATE_EPOCH") or commit_time())
    user = lay["images"][iu.refs(name)[1]]["config"]["config"]["User"]
    for i, layer in enumerate(lay["images"][iu.refs(name)[1]]["layers"]):
        members = layer.getmembers()
        assert members, f"layer {i} is empty"
        for m in members:
            assert m.mtime == when, f"layer {i} {m.name}: mtime {m.mtime}, not the commit's {when}"
            owner = f"{m.uid}:{m.gid}"
            assert owner in ("0:0", user), f"layer {i} {m.name}: owner {owner}"
            assert m.issym() or not (m.mode & 0o002) or m.mode & 0o1000, f"{m.name}: world-writable"
        for parent in {os.path.dirname(m.name.rstrip("/")) for m in members}:
            names = [m.name.rstrip("/") for m in members if os.path.dirname(m.name.rstrip("/")) == parent]
            assert names == sorted(names), f"layer {i}: entries of {parent or '/'} not sorted"


def test_the_validator_catches_a_corrupted_blob(built, scratch):
    """Control for the test above: one flipped byte in a layer is caught."""
    src = os.path.join(built[0], "openshell-pause.tar")
    bad = os.path.join(scratch, "corrupt-pause.tar")
    with tarfile.open(src) as t, tarfile.open(bad, "w", format=tarfile.USTAR_FORMAT) as o:
        members = t.getmembers()
        biggest = max((m for m in members if m.isfile()), key=lambda m: m.size)
        for m in members:
            data = t.extractfile(m).read() if m.isfile() else None
            if m is biggest:
                data = bytes([data[0] ^ 1]) + data[1:]
            o.addfile(m, None if data is None else io.BytesIO(data))
    with pytest.raises(iu.LayoutError, match="does not hash to its name"):
        iu.read_layout(bad)


@pytest.mark.parametrize("name", iu.NAMES)
def test_skopeo_inspects_and_copies_each_tag(built, scratch, name):
    out, digests = built
    archive = os.path.join(out, f"openshell-{name}.tar")
    for ref in iu.refs(name):
        r = subprocess.run(["skopeo", "inspect", f"oci-archive:{archive}:{ref}"], capture_output=True,
                           text=True, timeout=120)
        assert r.returncode == 0, r.stderr
        info = json.loads(r.stdout)
        assert info["Digest"] == digests[f"openshell-{name}.tar"]
        assert info["Os"] == "linux" and info["Labels"]["org.opencontainers.image.version"] == iu.app_version()
    # What an operator does to push (docs/helm.md), into a local layout here.
    dest = os.path.join(scratch, f"copy-{name}")
    r = subprocess.run(["skopeo", "copy", "--quiet", f"oci-archive:{archive}:{iu.refs(name)[0]}",
                        f"oci:{dest}:pushed"], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    with open(os.path.join(dest, "index.json")) as f:
        copied = json.load(f)["manifests"][0]["digest"]
    assert copied == digests[f"openshell-{name}.tar"], "skopeo copy kept the manifest byte for byte"
    shutil.rmtree(dest)


@pytest.mark.parametrize("name", iu.NAMES)
def test_podman_loads_both_tags(built, scratch, name):
    iu.require_tools("podman")
    # Its own store, never the machine's; podman wants a short runroot path.
    store = tempfile.mkdtemp(prefix="openshell-images-pm", dir="/tmp")
    podman = ["podman", "--root", f"{store}/root", "--runroot", f"{store}/run", "--storage-driver", "vfs",
              "--events-backend", "none", "--cgroup-manager", "cgroupfs"]
    archive = os.path.join(built[0], f"openshell-{name}.tar")
    try:
        r = subprocess.run([*podman, "load", "-i", archive], capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, r.stderr
        r = subprocess.run([*podman, "images", "--format", "json"], capture_output=True, text=True,
                           timeout=60, check=True)
        loaded = json.loads(r.stdout)
        # One image (podman's id is the config digest) under both names.
        config = iu.read_layout(archive)["images"][iu.refs(name)[1]]["manifest"]["config"]["digest"]
        assert {i["Id"] for i in loaded} == {config.split(":")[1]}, loaded
        assert {n for i in loaded for n in i["Names"]} == set(iu.refs(name)), loaded
    finally:
        shutil.rmtree(store, ignore_errors=True)


def test_two_builds_of_one_checkout_are_identical(built, rebuilt):
    (a, da), (b, db) = built, rebuilt
    assert da == db
    for name in ARCHIVES:
        with open(os.path.join(a, name), "rb") as fa, open(os.path.join(b, name), "rb") as fb:
            assert fa.read() == fb.read(), f"{name}: the archives differ byte-wise"


def test_the_timestamp_reaches_the_digest(built, scratch):
    """Control for the reproducibility test: another SOURCE_DATE_EPOCH gives
    another digest, so equal digests are not an accident of the inputs."""
    other = iu.build_images(os.path.join(scratch, "epoch"), "pause",
                            env_extra={"SOURCE_DATE_EPOCH": str(commit_time() - 86400)})
    assert other["openshell-pause.tar"] != built[1]["openshell-pause.tar"]


def chart_value(path, key):
    with open(os.path.join(build.REPO, path)) as f:
        return re.search(rf"{key}:\s*(\S+)", f.read()).group(1)


def header_value(name):
    with open(os.path.join(build.REPO, "src/drivers/kubernetes/k8s_render.h")) as f:
        return re.search(rf"#define {name} (\S+)", f.read()).group(1)


# name -> (User, Entrypoint, Cmd); users match what runs them: the chart's
# gateway securityContext, the driver's supervisor uid, the chart's sandbox uid.
EXPECTED = {
    "pause": ("65535:65535", ["/pause"], None),
    "test-agent": ("1000:1000", None, ["/bin/sh"]),
    "supervisor": ("65532:65532", ["/opt/openshell/bin/openshell-supervisor"], None),
    "gateway": ("65532:65532", ["/usr/local/bin/openshell-gateway"],
                ["--config", "/etc/openshell/gateway.toml"]),
}


def test_expected_users_are_the_ones_the_chart_and_driver_use():
    dep = "deploy/helm/openshell/templates/deployment.yaml"
    assert EXPECTED["gateway"][0] == f"{chart_value(dep, 'runAsUser')}:{chart_value(dep, 'runAsGroup')}"
    assert EXPECTED["supervisor"][0].split(":")[0] == header_value("K8S_SUPERVISOR_UID")
    assert EXPECTED["test-agent"][0].split(":")[0] == chart_value("deploy/helm/openshell/values.yaml",
                                                                    "sandboxUid")


@pytest.mark.parametrize("name", iu.NAMES)
def test_config_user_entrypoint_and_labels(built, name):
    lay = iu.read_layout(os.path.join(built[0], f"openshell-{name}.tar"))
    cfg = lay["images"][iu.refs(name)[1]]["config"]
    c = cfg["config"]
    user, entrypoint, cmd = EXPECTED[name]
    assert c["User"] == user and not c["User"].startswith("0")
    assert c.get("Entrypoint") == entrypoint and c.get("Cmd") == cmd
    labels = c["Labels"]
    head = git("rev-parse", "HEAD")
    assert labels["org.opencontainers.image.version"] == iu.app_version()
    assert labels["org.opencontainers.image.revision"] in (head, head + "-dirty")
    assert labels["org.opencontainers.image.source"]
    when = int(os.environ.get("SOURCE_DATE_EPOCH") or commit_time())
    stamp = datetime.datetime.fromtimestamp(when, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    assert cfg["created"] == stamp and all(h["created"] == stamp for h in cfg["history"])
    assert cfg["architecture"] and cfg["os"] == "linux"
    if name == "gateway":
        assert list(c["Volumes"]) == ["/var/lib/openshell"]
        assert list(c["ExposedPorts"]) == [f"{chart_value('deploy/helm/openshell/values.yaml', 'port')}/tcp"]
