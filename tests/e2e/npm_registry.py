"""A tiny npm registry on localhost: serves one package (a package.json and an index.js) and logs
every request, so a test can tell whether a CLI went to the registry."""

from __future__ import annotations

import base64
import hashlib
import http.server
import io
import json
import tarfile
import threading


def tarball(name: str, version: str) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        data = json.dumps({"name": name, "version": version, "main": "index.js"}).encode()
        for fname, body in (("package/package.json", data), ("package/index.js", b"module.exports = {};\n")):
            info = tarfile.TarInfo(fname)
            info.size, info.mode = len(body), 0o644
            tar.addfile(info, io.BytesIO(body))
    return buf.getvalue()


class NpmRegistry:
    def __init__(self, name: str, versions: list[str]) -> None:
        self.name, self.versions = name, versions
        self.hits: list[str] = []
        self.tgz = {v: tarball(name, v) for v in versions}
        registry = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                registry.hits.append(self.path)
                body, ctype = registry.answer(self.path)
                self.send_response(200 if body else 404)
                self.send_header("content-type", ctype)
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def answer(self, path: str) -> tuple[bytes, str]:
        if path.endswith(".tgz"):
            version = path.rsplit("-", 1)[1][:-4]
            return self.tgz.get(version, b""), "application/octet-stream"
        versions = {v: {"name": self.name, "version": v, "dist": {
            "tarball": f"{self.url}{self.name}/-/package-{v}.tgz",
            "shasum": hashlib.sha1(self.tgz[v]).hexdigest(),
            "integrity": "sha512-" + base64.b64encode(hashlib.sha512(self.tgz[v]).digest()).decode(),
        }} for v in self.versions}
        doc = {"name": self.name, "dist-tags": {"latest": self.versions[-1]}, "versions": versions}
        return json.dumps(doc).encode(), "application/json"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
