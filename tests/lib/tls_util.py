"""Throwaway PKI for the TLS tests (test_gateway_tls.py,
test_supervisor_session_tls.py): CAs and leaf certificates made with the
openssl command line in a temporary directory. Nothing leaves 127.0.0.1."""

import os
import ssl
import subprocess
import tempfile


def openssl(*args, cwd):
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


def make_ca(d, name):
    openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
            "-keyout", f"{name}.key", "-out", f"{name}.pem", "-days", "2", "-subj",
            f"/CN={name}", "-addext", "basicConstraints=critical,CA:TRUE",
            "-addext", "keyUsage=critical,keyCertSign,cRLSign", cwd=d)


def make_leaf(d, name, ca, ext):
    with open(os.path.join(d, f"{name}.ext"), "w") as f:
        f.write(ext)
    openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
            "-keyout", f"{name}.key", "-out", f"{name}.csr", "-subj", f"/CN={name}", cwd=d)
    openssl("x509", "-req", "-in", f"{name}.csr", "-CA", f"{ca}.pem", "-CAkey", f"{ca}.key",
            "-set_serial", str(int.from_bytes(os.urandom(8), "big")), "-days", "2",
            "-extfile", f"{name}.ext", "-out", f"{name}.pem", cwd=d)
    os.chmod(os.path.join(d, f"{name}.key"), 0o600)


SERVER_EXT = "subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n"
CLIENT_EXT = "extendedKeyUsage=clientAuth\n"


def make_pki(leaves):
    """leaves: {name: (ca, ext)}; the CAs "ca" and "other-ca" are always made.
    Returns {"NAME.pem"/"NAME.key": path, "dir": d}; remove_pki() cleans up."""
    d = tempfile.mkdtemp(prefix="ostls-", dir="/var/tmp")
    make_ca(d, "ca")
    make_ca(d, "other-ca")
    for name, (ca, ext) in leaves.items():
        make_leaf(d, name, ca, ext)
    names = ["ca", "other-ca", *leaves]
    paths = {f"{n}.pem": os.path.join(d, f"{n}.pem") for n in names}
    paths |= {f"{n}.key": os.path.join(d, f"{n}.key") for n in names}
    return paths | {"dir": d}


def remove_pki(pki):
    subprocess.run(["rm", "-rf", pki["dir"]])


def client_ctx(pki, cert=None):
    ctx = ssl.create_default_context(cafile=pki["ca.pem"])
    if cert:
        ctx.load_cert_chain(pki[f"{cert}.pem"], pki[f"{cert}.key"])
    return ctx


def tls_gateway_env(pki, server="server", client_ca=False):
    """Gateway environment: TLS on its TCP listener with this leaf (and mTLS
    with the "ca" CA when client_ca)."""
    env = {"OPENSHELL_GATEWAY_TLS_CERT_FILE": pki[f"{server}.pem"],
           "OPENSHELL_GATEWAY_TLS_KEY_FILE": pki[f"{server}.key"]}
    if client_ca:
        env["OPENSHELL_GATEWAY_TLS_CLIENT_CA_FILE"] = pki["ca.pem"]
    return env


def tls_env(g, **kw):
    """CLI environment for https:// to g; kw: ca=, cert=, key= paths (None: unset)."""
    e = {"OPENSHELL_GATEWAY": f"https://127.0.0.1:{g.port}"}
    for k, var in (("ca", "OPENSHELL_TLS_CA"), ("cert", "OPENSHELL_TLS_CERT"),
                   ("key", "OPENSHELL_TLS_KEY")):
        if kw.get(k):
            e[var] = kw[k]
    return e
