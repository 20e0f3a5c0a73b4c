"""Helpers of the images layer (tests/images/): build the archives with
scripts/build-images, check an archive against the OCI image-layout rules
(every blob re-hashed), unpack an image with umoci, and run a command inside
an unpacked rootfs with chroot in fresh namespaces: no container engine.
Never writes outside the temporary directories the caller hands it."""
import gzip, hashlib, io, json, os, re, shutil, signal, subprocess, tarfile

import pytest

from tests.lib import build, procfs

NAMES = ("pause", "test-agent", "supervisor", "gateway")
BUILD_IMAGES = os.path.join(build.REPO, "scripts", "build-images")
CHART = os.path.join(build.REPO, "deploy", "helm", "openshell", "Chart.yaml")
TOOLS = ("umoci", "skopeo", "tar", "patchelf", "readelf", "strip", "unshare", "chroot", "git", "jq")

MT_INDEX = "application/vnd.oci.image.index.v1+json"
MT_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
MT_CONFIG = "application/vnd.oci.image.config.v1+json"
MT_LAYER = "application/vnd.oci.image.layer.v1.tar+gzip"


def require_tools(*extra):
    """Skip (fail under CI=true) when a tool this layer drives is missing."""
    gone = [t for t in TOOLS + extra if not shutil.which(t)]
    why = None
    if gone:
        why = f"missing tools: {', '.join(gone)} (scripts/install-deps installs them)"
    elif os.geteuid() != 0:
        why = "not root: unpacking images with their owners and chroot need root"
    if why is None:
        return
    if build.in_ci():
        pytest.fail(f"{why}; CI=true: fails instead of skipping", pytrace=False)
    pytest.skip(why)


def app_version():
    with open(CHART) as f:
        m = re.search(r'^appVersion:\s*"?([^"\n]+)"?\s*$', f.read(), re.M)
    assert m, f"{CHART}: no appVersion"
    return m.group(1)


def refs(name):
    repo = f"docker.io/openshell/{name}"
    return (f"{repo}:{app_version()}", f"{repo}:dev")


def build_images(out, *names, env_extra=None):
    """scripts/build-images --out OUT NAMES...: {archive name: manifest digest}."""
    env = {**os.environ, "OPENSHELL_BUILD": build.BUILD, **(env_extra or {})}
    r = subprocess.run([BUILD_IMAGES, "--out", out, *names], env=env, capture_output=True,
                       text=True, timeout=900)
    assert r.returncode == 0, f"build-images failed ({r.returncode}):\n{r.stderr[-4000:]}"
    digests = {}
    for line in r.stdout.splitlines():
        m = re.match(r"image (\S+): .* (sha256:[0-9a-f]{64})$", line)
        if m:
            digests[m.group(1)] = m.group(2)
    return digests


class LayoutError(AssertionError):
    pass


def _check(cond, msg):
    if not cond:
        raise LayoutError(msg)


def _blob(files, desc, what):
    algo, _, hexd = desc["digest"].partition(":")
    _check(algo == "sha256" and re.fullmatch(r"[0-9a-f]{64}", hexd), f"{what}: digest {desc['digest']!r}")
    path = f"blobs/sha256/{hexd}"
    _check(path in files, f"{what}: blob {path} missing")
    data = files[path]
    _check(len(data) == desc["size"], f"{what}: {path} is {len(data)} bytes, descriptor says {desc['size']}")
    return data


def read_layout(archive):
    """Validates ARCHIVE as an OCI image layout and returns {"index", "images":
    {ref: {"digest", "manifest", "config", "layers": [TarFile]}}}. Every blob
    is re-hashed against its name; every descriptor's size and media type,
    each layer's diff_id and the refs are checked; LayoutError says what failed."""
    files = {}
    with tarfile.open(archive) as t:
        for m in t.getmembers():
            if m.isfile():
                files[m.name] = t.extractfile(m).read()
    _check(json.loads(files.get("oci-layout", b"{}")).get("imageLayoutVersion") == "1.0.0",
           "oci-layout: imageLayoutVersion is not 1.0.0")
    for path, data in files.items():
        if path.startswith("blobs/sha256/"):
            _check(hashlib.sha256(data).hexdigest() == path.rsplit("/", 1)[1],
                   f"{path}: content does not hash to its name")
        else:
            _check(path in ("oci-layout", "index.json", "manifest.json"), f"unexpected file {path}")
    index = json.loads(files["index.json"])
    _check(index.get("schemaVersion") == 2, "index.json: schemaVersion is not 2")
    images, used = {}, set()
    for d in index["manifests"]:
        _check(d["mediaType"] == MT_MANIFEST, f"index entry media type {d['mediaType']}")
        ref = d.get("annotations", {}).get("org.opencontainers.image.ref.name")
        _check(ref, f"index entry {d['digest']} has no ref.name")
        manifest = json.loads(_blob(files, d, ref))
        _check(manifest.get("schemaVersion") == 2, f"{ref}: manifest schemaVersion")
        _check(manifest.get("mediaType", MT_MANIFEST) == MT_MANIFEST, f"{ref}: manifest media type")
        _check(manifest["config"]["mediaType"] == MT_CONFIG, f"{ref}: config media type")
        config = json.loads(_blob(files, manifest["config"], f"{ref} config"))
        diff_ids, layers = config["rootfs"]["diff_ids"], []
        _check(config["rootfs"]["type"] == "layers", f"{ref}: rootfs.type")
        _check(len(diff_ids) == len(manifest["layers"]), f"{ref}: diff_ids do not match the layers")
        for i, ld in enumerate(manifest["layers"]):
            _check(ld["mediaType"] == MT_LAYER, f"{ref}: layer {i} media type {ld['mediaType']}")
            raw = gzip.decompress(_blob(files, ld, f"{ref} layer {i}"))
            _check("sha256:" + hashlib.sha256(raw).hexdigest() == diff_ids[i],
                   f"{ref}: layer {i} does not match its diff_id")
            layers.append(tarfile.open(fileobj=io.BytesIO(raw)))
            used.add(ld["digest"])
        used |= {d["digest"], manifest["config"]["digest"]}
        images[ref] = {"digest": d["digest"], "manifest": manifest, "config": config, "layers": layers}
    # manifest.json (docker save's index, for podman 4): the same blobs, every ref.
    docker = json.loads(files.get("manifest.json", b"null"))
    _check(isinstance(docker, list) and len(docker) == 1, "manifest.json: not one entry")
    only = {i["digest"] for i in images.values()}
    _check(len(only) == 1, "the refs name different manifests")
    m = next(iter(images.values()))["manifest"]
    blob_path = lambda d: "blobs/sha256/" + d["digest"].split(":")[1]  # noqa: E731
    _check(docker[0].get("Config") == blob_path(m["config"]), "manifest.json: Config is not the config blob")
    _check(docker[0].get("Layers") == [blob_path(l) for l in m["layers"]],
           "manifest.json: Layers are not the layer blobs in order")
    _check(sorted(docker[0].get("RepoTags", [])) == sorted(images), "manifest.json: RepoTags are not the refs")
    stray = {p for p in files if p.startswith("blobs/")} - {"blobs/sha256/" + u.split(":")[1] for u in used}
    _check(not stray, f"blobs no manifest refers to: {sorted(stray)}")
    return {"index": index, "images": images, "members": list(files)}


def unpack(archive, ref, dest):
    """umoci unpack of REF from ARCHIVE under DEST; returns (rootfs, config)."""
    layout = os.path.join(dest, "layout")
    os.makedirs(layout)
    with tarfile.open(archive) as t:
        t.extractall(layout, filter="tar") if hasattr(tarfile, "data_filter") else t.extractall(layout)
    bundle = os.path.join(dest, "bundle")
    subprocess.run(["umoci", "unpack", "--image", f"{layout}:{ref}", bundle], check=True,
                   capture_output=True, timeout=300)
    config = read_layout(archive)["images"][ref]["config"]
    return os.path.join(bundle, "rootfs"), config


def image_env(config, **extra):
    env = dict(e.split("=", 1) for e in config["config"].get("Env", []))
    env.update(extra)
    return env


# What a container runtime gives every container and an image never ships:
# /proc of the container's PID namespace and a few device nodes (shells
# open /dev/null for background jobs). Mounted in the private mount
# namespace only, on the unpacked (temporary) rootfs.
_SETUP = """set -e
root=$1 user=$2; shift 2
$MKDIR -p "$root/proc" "$root/dev"
$MOUNT -t proc proc "$root/proc"
$MOUNT -t tmpfs -o mode=0755,nosuid tmpfs "$root/dev"
for n in null zero full random urandom; do
	: >"$root/dev/$n"
	$MOUNT --bind "/dev/$n" "$root/dev/$n"
done
exec $CHROOT --userspec="$user" "$root" "$@"
"""


def chroot_argv(rootfs, argv, user, private_net=True):
    """unshare (fresh mount, PID, IPC, UTS and, unless told, network
    namespaces) + /proc and /dev as a runtime provides + chroot as USER."""
    ns = ["--mount", "--propagation", "private", "--pid", "--ipc", "--uts", "--fork", "--kill-child"]
    if private_net:
        ns.append("--net")
    # Absolute paths: the environment given is the image's (its PATH).
    tools = " ".join(f"{k}={shutil.which(k.lower())}" for k in ("MKDIR", "MOUNT", "CHROOT"))
    return [shutil.which("unshare"), *ns, "--", "/bin/sh", "-c", f"{tools}\n{_SETUP}", "setup",
            rootfs, user, *argv]


def run_in(rootfs, argv, user, env, timeout=60, private_net=True):
    return subprocess.run(chroot_argv(rootfs, argv, user, private_net), env=env,
                          capture_output=True, text=True, timeout=timeout)


def start_in(rootfs, argv, user, env, log, private_net=True):
    return subprocess.Popen(chroot_argv(rootfs, argv, user, private_net), env=env,
                            stdout=log, stderr=subprocess.STDOUT)


def ns_init_pid(unshare_pid):
    """Host PID of the process unshare --fork started (PID 1 of its namespace)."""
    path = f"/proc/{unshare_pid}/task/{unshare_pid}/children"
    with open(path) as f:
        kids = f.read().split()
    return int(kids[0]) if kids else None


def children_of(pid):
    """[(pid, state)] of PID's children, from /proc."""
    return [(p, f[0]) for p, f in procfs.stat_all() if int(f[1]) == pid]


def stop(proc, sig=signal.SIGTERM, timeout=20):
    if proc.poll() is None:
        proc.send_signal(sig)
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)
    return proc.returncode
