"""Packages the client matrix installs, built by the test from nothing (no
download): a pure-Python wheel behind a PEP 503 simple index for pip, and a
tarball behind npm registry metadata for npm, both laid out as static files
for tests/integration/package_index_server.py.

Each package's module says where it was served from (WHERE), so an install
that worked shows it; each index page or document names its artifact by an
absolute URL, which lets a test put an allowed package's metadata beside a
denied artifact path."""
import base64
import hashlib
import io
import json
import os
import tarfile
import zipfile


def _b64(digest):
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def wheel(name, version, where):
    """(file name, bytes) of a py3-none-any wheel of module NAME (underscores)
    whose WHERE is the given text."""
    dist = f"{name}-{version}.dist-info"
    files = {
        f"{name}/__init__.py": f"WHERE = {where!r}\n".encode(),
        f"{dist}/METADATA": (f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"
                             "Summary: client matrix test package\n").encode(),
        f"{dist}/WHEEL": (b"Wheel-Version: 1.0\nGenerator: openshell-tests\n"
                          b"Root-Is-Purelib: true\nTag: py3-none-any\n"),
    }
    record = "".join(f"{p},sha256={_b64(hashlib.sha256(b).digest())},{len(b)}\n"
                     for p, b in files.items()) + f"{dist}/RECORD,,\n"
    files[f"{dist}/RECORD"] = record.encode()
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
        for p, b in files.items():
            z.writestr(p, b)
    return f"{name}-{version}-py3-none-any.whl", out.getvalue()


def add_pip_package(root, index_path, files_path, base_url, name, where):
    """The wheel at ROOT/FILES_PATH/, its project page at
    ROOT/INDEX_PATH/<normalised name>/ (PEP 503: one anchor, the sha256 in
    the fragment)."""
    fname, data = wheel(name, "1.0", where)
    _write(root, f"{files_path}/{fname}", data)
    project = name.lower().replace("_", "-")
    href = f"{base_url}{files_path}/{fname}#sha256={hashlib.sha256(data).hexdigest()}"
    page = (f"<!DOCTYPE html>\n<html><body><a href=\"{href}\">{fname}</a></body></html>\n")
    _write(root, f"{index_path}/{project}/index.html", page.encode())
    return project


def npm_tarball(name, version, where):
    """An npm package tarball (package/package.json, package/index.js)."""
    files = {
        "package/package.json": json.dumps({"name": name, "version": version,
                                            "main": "index.js"}).encode(),
        "package/index.js": f"module.exports = {json.dumps(where)};\n".encode(),
    }
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz") as t:
        for p, b in files.items():
            info = tarfile.TarInfo(p)
            info.size, info.mode = len(b), 0o644
            t.addfile(info, io.BytesIO(b))
    return out.getvalue()


def add_npm_package(root, registry_path, tarball_path, base_url, name, where):
    """The tarball at ROOT/TARBALL_PATH/, the package document at
    ROOT/REGISTRY_PATH/NAME/ (what `npm install NAME` reads first)."""
    data = npm_tarball(name, "1.0.0", where)
    fname = f"{name}-1.0.0.tgz"
    _write(root, f"{tarball_path}/{fname}", data)
    doc = {"name": name, "dist-tags": {"latest": "1.0.0"},
           "versions": {"1.0.0": {
               "name": name, "version": "1.0.0", "main": "index.js",
               "dist": {"tarball": f"{base_url}{tarball_path}/{fname}",
                        "shasum": hashlib.sha1(data).hexdigest(),
                        "integrity": "sha512-" + base64.b64encode(
                            hashlib.sha512(data).digest()).decode()}}}}
    _write(root, f"{registry_path}/{name}/index.json", json.dumps(doc).encode())


def _write(root, rel, data):
    path = os.path.join(root, rel.lstrip("/"))
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)
