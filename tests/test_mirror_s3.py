"""A `cudaenv mirror` in an S3-compatible bucket: the redist mirror is uploaded as
`aws s3 sync` would (one object per file, keys as the relative paths) to a real S3
API server on loopback (moto's server, from PyPI), and installs read it over the
bucket's path-style URL with the upstream stopped. A corrupted object is refused."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from httpserver import closed_port, serve_process
from test_mirror import BOTH, cli, pypi_cli, rel_path_of, upstream, wheel_index  # noqa: F401 - fixtures

boto3 = pytest.importorskip("boto3", reason="boto3 (with moto's server, in the test extra) is not installed")
pytest.importorskip("moto.server", reason="moto's S3 server (moto[server], in the test extra) is not installed")


def public_read(bucket: str) -> str:
    """docs/guides/mirror.md's bucket policy: anonymous read of the objects and of the listing."""
    return json.dumps({
        "Version": "2012-10-17",
        "Statement": [
            {"Effect": "Allow", "Principal": "*", "Action": "s3:GetObject", "Resource": f"arn:aws:s3:::{bucket}/*"},
            {"Effect": "Allow", "Principal": "*", "Action": "s3:ListBucket", "Resource": f"arn:aws:s3:::{bucket}"},
        ],
    })


class S3Server:
    """moto's S3 API server in its own process, path-style URLs on 127.0.0.1."""

    def __init__(self):
        self.port = closed_port()
        self.proc = serve_process([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(self.port)],
                                  self.port, "moto's S3 server")
        self.endpoint = f"http://127.0.0.1:{self.port}"
        self.client = boto3.client("s3", endpoint_url=self.endpoint, region_name="us-east-1",
                                   aws_access_key_id="test", aws_secret_access_key="test")

    def bucket(self, name: str, directory: Path, public: bool = True) -> str:
        """A bucket holding `directory` as `aws s3 sync` leaves it; its path-style URL."""
        self.client.create_bucket(Bucket=name)
        if public:
            self.client.put_bucket_policy(Bucket=name, Policy=public_read(name))
        assert sync(self.client, directory, name) > 3
        return f"{self.endpoint}/{name}/"

    def stop(self):
        self.proc.terminate()
        self.proc.wait(timeout=10)


def sync(client, directory: Path, bucket: str) -> int:
    """What `aws s3 sync DIR s3://bucket/` leaves: an object per file, keyed by its relative path."""
    n = 0
    for dirpath, _, filenames in os.walk(directory):
        for name in filenames:
            path = Path(dirpath) / name
            client.upload_file(str(path), bucket, path.relative_to(directory).as_posix())
            n += 1
    return n


def test_mirror_in_an_s3_bucket_installs_with_upstream_stopped(tmp_path, upstream):  # noqa: F811
    mirror = tmp_path / "mirror"
    r = cli(tmp_path, "admin", "mirror", "create", str(mirror), "13.0", "--platform", BOTH, url=upstream.url)
    assert r.returncode == 0, r.stderr
    upstream.stop()
    s3 = S3Server()
    try:
        url = s3.bucket("cuda-mirror", mirror, public=False)
        # A private bucket: cudaenv sends no credentials, and says what the server answered.
        r = cli(tmp_path, "user0", "install", "13.0", "--source", "redist", "-q", url=url)
        assert r.returncode != 0 and "403" in r.stderr and "redistrib_13.0.2.json" in r.stderr, r.stderr
        s3.client.put_bucket_policy(Bucket="cuda-mirror", Policy=public_read("cuda-mirror"))
        r = cli(tmp_path, "user1", "install", "13.0", "--source", "redist", "-q", url=url)
        assert r.returncode == 0, r.stderr
        nvcc = tmp_path / "user1" / "root" / "versions" / "13.0.2" / "bin" / "nvcc"
        assert "release 13.0" in subprocess.run([nvcc, "--version"], capture_output=True, text=True).stdout

        # One object replaced by corrupted bytes of the same size: refused, nothing installed.
        state = json.loads((mirror / "mirror.json").read_text())
        victim = rel_path_of(state, "13.0.2", "cuda_cudart", "linux-x86_64")
        data = bytearray((mirror / victim).read_bytes())
        data[len(data) // 2] ^= 0xFF
        s3.client.put_object(Bucket="cuda-mirror", Key=victim, Body=bytes(data))
        r = cli(tmp_path, "user2", "install", "13.0", "--source", "redist", "-q", url=url)
        assert r.returncode != 0 and "sha256 mismatch" in r.stderr and victim in r.stderr, r.stderr
        assert not (tmp_path / "user2" / "root" / "versions" / "13.0.2").exists()
    finally:
        s3.stop()


def test_wheel_mirror_in_an_s3_bucket_installs_with_the_index_stopped(tmp_path, wheel_index):  # noqa: F811
    """A PEP 503 tree in a bucket: the REST endpoint maps no `simple/<project>/` to its
    index.html, so the PyPI source asks for the page by name after the 404."""
    mirror = tmp_path / "wheels"
    r = pypi_cli(tmp_path, "admin", "mirror", "create", str(mirror), "13.0", "--source", "pypi",
                 "--platform", BOTH, url=wheel_index.url)
    assert r.returncode == 0, r.stderr
    wheel_index.close()
    s3 = S3Server()
    try:
        url = s3.bucket("cuda-wheels", mirror) + "simple/"
        r = pypi_cli(tmp_path, "user1", "install", "13.0", "--source", "pypi", "-q", url=url)
        assert r.returncode == 0, r.stderr
        assert (tmp_path / "user1" / "root" / "versions" / "13.0.2" / "bin" / "nvcc").is_file()
    finally:
        s3.stop()
