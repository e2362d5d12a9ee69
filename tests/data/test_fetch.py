"""icml24.data.fetch and ``icml24 data``: downloads from a local HTTP server on 127.0.0.1 that each test starts.

No test reaches any other address: the fetcher is pointed at the server through the mirror
(``<mirror>/<data set>/<relative path>``), and the offline case uses a closed port on 127.0.0.1.
"""

from __future__ import annotations

import argparse
import ast
import gzip
import hashlib
import http.server
import json
import re
import socket
import threading
from pathlib import Path

import pytest

from icml24.data import fetch as F
from icml24.data.cli import register
from icml24.errors import DataError, DataUnavailable, InputError

SHARED_DATA = Path(__file__).resolve().parents[3] / "shared" / "data"


# --------------------------------------------------------------------------------------------- the server
class _Handler(http.server.BaseHTTPRequestHandler):
    """GET of files under the server's folder, with ``Range: bytes=N-``; a switch truncates responses."""

    def do_GET(self):  # noqa: N802 - http.server's name
        srv = self.server
        srv.requests.append((self.path, self.headers.get("Range")))
        path = srv.folder / self.path.lstrip("/")
        if not path.is_file():
            self.send_error(404)
            return
        data = path.read_bytes()
        start, code = 0, 200
        m = re.fullmatch(r"bytes=(\d+)-", self.headers.get("Range") or "")
        if m and srv.ranges:
            start, code = int(m.group(1)), 206
            if start >= len(data):
                self.send_error(416)
                return
        body = data[start:]
        self.send_response(code)
        self.send_header("Content-Length", str(len(body)))
        if code == 206:
            self.send_header("Content-Range", f"bytes {start}-{len(data) - 1}/{len(data)}")
        self.end_headers()
        if srv.truncate is not None:  # announce everything, send part of it, hang up
            body = body[: srv.truncate]
        self.wfile.write(body)
        self.wfile.flush()

    def log_message(self, *args):
        pass


@pytest.fixture
def server(tmp_path):
    """A ThreadingHTTPServer on 127.0.0.1 serving ``tmp_path/served``; ``.url`` is the mirror to use."""
    folder = tmp_path / "served"
    folder.mkdir()
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    srv.folder, srv.requests, srv.truncate, srv.ranges = folder, [], None, True
    srv.url = f"http://127.0.0.1:{srv.server_address[1]}"
    thread = threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    yield srv
    srv.shutdown()
    srv.server_close()
    thread.join()


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _sha(b: bytes) -> str:
    return hashlib.sha256(b).hexdigest()


GOOD = bytes(range(256)) * 64  # 16 kB
OTHER = b"b" * 5000


@pytest.fixture
def fake(server, monkeypatch, tmp_path):
    """A tiny registry served by ``server``: good, corrupt (wrong sha), gz (recompressed copy), absent (404)."""
    gz_content = b"idx" * 3000
    upstream_gz = gzip.compress(gz_content, mtime=1)
    served_gz = gzip.compress(gz_content, compresslevel=1, mtime=2)  # other bytes, same content
    files = {
        "good/a/one.bin": GOOD,
        "good/a/two.bin": OTHER,
        "corrupt/c.bin": b"not what was recorded",
        "gz/g.gz": served_gz,
    }
    for rel, data in files.items():
        (server.folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (server.folder / rel).write_bytes(data)

    def ds(name, *fs, **kw):
        return F.Dataset(name, f"{name} test set", "CC0", "nowhere", tuple(fs), **kw)

    reg = {
        "good": ds(
            "good",
            F.DataFile("a/one.bin", None, _sha(GOOD), len(GOOD)),
            F.DataFile("a/two.bin", None, _sha(OTHER), len(OTHER)),
        ),
        "corrupt": ds("corrupt", F.DataFile("c.bin", None, _sha(b"x" * 21), 21)),
        "gz": ds(
            "gz",
            F.DataFile("g.gz", None, _sha(upstream_gz), len(upstream_gz), _sha(gz_content), len(gz_content)),
        ),
        "absent": ds("absent", F.DataFile("nothing.bin", None, _sha(b"z"), 1)),
        "nosum": ds("nosum", F.DataFile("n.bin", "http://127.0.0.1:9/n.bin", None, None), fetchable=False),
    }
    monkeypatch.setattr(F, "DATASETS", reg)
    monkeypatch.setenv(F.MIRROR_ENV, server.url)
    root = tmp_path / "root"
    return root


# ------------------------------------------------------------------------------------------------ fetching
def test_fetch_good_writes_checked_files_and_then_nothing(fake, server):
    assert not F.is_present("good", fake)
    assert F.status("good", fake) == {"a/one.bin": False, "a/two.bin": False}
    got = F.fetch("good", fake, progress=False)
    assert got == [fake / "a/one.bin", fake / "a/two.bin"]
    assert (fake / "a/one.bin").read_bytes() == GOOD and (fake / "a/two.bin").read_bytes() == OTHER
    assert F.is_present("good", fake) and not list(fake.rglob("*.part"))
    assert [p for p, _ in server.requests] == ["/good/a/one.bin", "/good/a/two.bin"]
    assert F.fetch(["good"], fake, progress=False, verify=True) == []  # present: nothing downloaded
    assert len(server.requests) == 2


def test_fetch_shows_a_progress_bar_when_asked(fake, capsys):
    F.fetch("good", fake, progress=True)
    assert "good" in capsys.readouterr().err


def test_checksum_mismatch_deletes_the_part_and_names_file_expected_and_got(fake):
    with pytest.raises(DataError) as exc:
        F.fetch("corrupt", fake, progress=False)
    line = exc.value.one_line()
    assert "c.bin" in line and _sha(b"x" * 21) in line and _sha(b"not what was recorded") in line
    assert "\n" not in str(exc.value)
    assert not (fake / "c.bin").exists() and not (fake / "c.bin.part").exists()


def test_gz_passes_on_its_content_and_counts_present_by_its_trailer(fake):
    F.fetch("gz", fake, progress=False)
    assert F.is_present("gz", fake)  # other size than upstream's .gz, same decompressed size
    assert F.verify("gz", fake) == [fake / "g.gz"]
    (fake / "g.gz").write_bytes(gzip.compress(b"idx" * 2999 + b"xyz"))  # same size, other content
    with pytest.raises(DataError, match="decompressed"):
        F.verify("gz", fake)
    assert (fake / "g.gz").exists()  # verify never deletes a user's file


def test_404_is_unavailable_naming_the_data_set_and_url(fake, server):
    with pytest.raises(DataUnavailable) as exc:
        F.fetch("absent", fake, progress=False)
    line = exc.value.one_line()
    assert "absent" in line and f"{server.url}/absent/nothing.bin" in line and "404" in line
    assert "icml24 data fetch absent" in line
    assert not fake.exists()  # nothing written, not even a folder


def test_offline_is_unavailable_in_one_line_and_writes_nothing(fake, monkeypatch):
    url = f"http://127.0.0.1:{_closed_port()}"
    monkeypatch.setenv(F.MIRROR_ENV, url)
    with pytest.raises(DataUnavailable) as exc:
        F.fetch("good", fake, progress=False, timeout=5)
    assert "cannot reach" in exc.value.one_line() and url in exc.value.one_line()
    assert not fake.exists()


def test_truncated_download_keeps_the_part_then_resumes_with_a_range(fake, server):
    server.truncate = 1000
    with pytest.raises(DataUnavailable, match="stopped at 1000 of 16384 bytes") as exc:
        F.fetch("good", fake, progress=False)
    assert "resume" in exc.value.one_line()
    part = fake / "a/one.bin.part"
    assert part.read_bytes() == GOOD[:1000]
    assert not (fake / "a/one.bin").exists()  # never anything under the final name
    server.truncate = None
    F.fetch("good", fake, progress=False)
    assert ("/good/a/one.bin", "bytes=1000-") in server.requests
    assert (fake / "a/one.bin").read_bytes() == GOOD and not part.exists()


def test_a_server_that_ignores_range_restarts_from_zero(fake, server):
    server.ranges = False
    (fake / "a").mkdir(parents=True)
    (fake / "a/one.bin.part").write_bytes(b"junk that is not a prefix")
    F.fetch("good", fake, progress=False)
    assert ("/good/a/one.bin", "bytes=25-") in server.requests  # asked, got 200: started again
    assert (fake / "a/one.bin").read_bytes() == GOOD


def test_a_part_longer_than_the_file_is_discarded(fake, server):
    (fake / "a").mkdir(parents=True)
    (fake / "a/two.bin.part").write_bytes(b"x" * (len(OTHER) + 1))
    F.fetch("good", fake, progress=False)
    assert ("/good/a/two.bin", None) in server.requests
    assert (fake / "a/two.bin").read_bytes() == OTHER


def test_a_read_only_root_fails_in_one_line_before_any_request(fake, server):
    fake.mkdir()
    fake.chmod(0o555)
    try:
        with pytest.raises(DataUnavailable, match="not writable") as exc:
            F.fetch("good", fake, progress=False)
        assert "\n" not in str(exc.value)
        assert server.requests == [] and list(fake.iterdir()) == []
    finally:
        fake.chmod(0o755)


def test_unknown_and_unfetchable_names(fake, monkeypatch):
    with pytest.raises(InputError, match="unknown data set"):
        F.fetch("nope", fake)
    monkeypatch.delenv(F.MIRROR_ENV)
    assert not F.can_fetch("nosum") and not F.can_fetch("good")  # no URL, no mirror
    with pytest.raises(DataUnavailable, match="cannot be downloaded"):
        F.fetch("nosum", fake)


def test_missing_lists_what_is_not_present(fake):
    assert F.missing(fake) == ["good", "corrupt", "gz", "absent", "nosum"]
    F.fetch(["good", "gz"], fake, progress=False)
    assert F.missing(fake) == ["corrupt", "absent", "nosum"]


# ------------------------------------------------------------------------------------------- command line
def _cli(argv):
    """Parse as the core does and run the handler (the core prints ICML24Error as one line, exit 2)."""
    p = argparse.ArgumentParser(prog="icml24")
    register(p.add_subparsers(dest="command"), [])
    args = p.parse_args(argv)
    return args.func(args)


def test_cli_fetch_names_prints_one_line_each(fake, capsys):
    assert _cli(["data", "fetch", "good", "--root", str(fake)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out == [f"good: fetched 2 of 2 files in {fake / 'a'}"]
    assert _cli(["data", "fetch", "good", "--root", str(fake), "--verify"]) == 0
    assert capsys.readouterr().out.strip() == f"good: present, checked in {fake / 'a'}"


def test_cli_fetch_errors_are_icml24_errors(fake, monkeypatch):
    with pytest.raises(InputError):
        _cli(["data", "fetch", "--root", str(fake)])
    with pytest.raises(InputError):
        _cli(["data", "fetch", "nope", "--root", str(fake)])
    with pytest.raises(DataError):
        _cli(["data", "fetch", "corrupt", "--root", str(fake)])
    monkeypatch.setenv(F.MIRROR_ENV, f"http://127.0.0.1:{_closed_port()}")
    with pytest.raises(DataUnavailable):
        _cli(["data", "fetch", "good", "--root", str(fake), "--timeout", "5"])


def test_cli_fetch_missing_offline_is_one_line_and_exit_0(fake, monkeypatch, capsys):
    monkeypatch.setattr(F, "DATASETS", {k: F.DATASETS[k] for k in ("good", "nosum")})
    monkeypatch.setenv(F.MIRROR_ENV, f"http://127.0.0.1:{_closed_port()}")
    assert _cli(["data", "fetch", "--missing", "--root", str(fake), "--timeout", "5"]) == 0
    captured = capsys.readouterr()
    assert captured.out == "" and len(captured.err.strip().splitlines()) == 1 and "cannot reach" in captured.err


def test_cli_fetch_missing_fetches_then_is_silent_and_never_writes_when_complete(fake, monkeypatch, capsys):
    monkeypatch.setattr(F, "DATASETS", {k: F.DATASETS[k] for k in ("good", "gz", "nosum")})
    assert _cli(["data", "fetch", "--missing", "--root", str(fake)]) == 0
    assert F.is_present("good", fake) and F.is_present("gz", fake)
    assert capsys.readouterr() == ("", "")
    fake.chmod(0o555)  # a read-only root with nothing (fetchable) missing: no write, no message
    try:
        assert _cli(["data", "fetch", "--missing", "--verify", "--root", str(fake)]) == 0
        assert capsys.readouterr() == ("", "")
    finally:
        fake.chmod(0o755)


def test_cli_list_table_and_json(fake, capsys):
    F.fetch("good", fake, progress=False)
    assert _cli(["data", "list", "--root", str(fake), "--json"]) == 0
    table = {r["name"]: r for r in json.loads(capsys.readouterr().out)}
    assert table["good"]["present"] is True and table["absent"]["present"] is False
    assert table["good"]["size"] == len(GOOD) + len(OTHER) and table["good"]["folder"] == str(fake / "a")
    assert table["nosum"]["fetchable"] is False
    assert _cli(["data", "list", "--root", str(fake)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split()[:5] == ["name", "what", "licence", "size", "present"]
    assert any(line.startswith("good ") and " yes " in line for line in lines)


def test_core_cli_runs_data(fake, capsys):
    from icml24 import cli

    assert cli.main(["data", "fetch", "good", "--root", str(fake)]) == 0
    assert cli.main(["data", "fetch", "corrupt", "--root", str(fake)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: corrupt:")


# ---------------------------------------------------------------------------------------- the registry
def test_every_fetchable_file_has_a_sha256_and_a_size():
    hexa = re.compile(r"[0-9a-f]{64}")
    names = set()
    for name, ds in F.DATASETS.items():
        assert name == ds.name and ds.description and ds.licence and ds.source
        for f in ds.files:
            assert f.path not in names and not f.path.startswith("/")
            names.add(f.path)
            if ds.fetchable:
                assert hexa.fullmatch(f.sha256) and isinstance(f.size, int) and f.size > 0, f.path
                assert f.url and f.url.startswith(("https://", "http://")), f.path
            if f.content_sha256 is not None:
                assert hexa.fullmatch(f.content_sha256) and f.content_size > 0
        if not ds.fetchable:
            assert ds.hint and ds.checksum_note
    assert len(F.DATASETS["mutag"].files) == 189 and len(F.DATASETS["fashion-mnist"].files) == 4


def test_registry_matches_what_the_loaders_read():
    from icml24.data.tabular import _FASHION_FILES
    from icml24.data.text import AUSTEN_NOVELS

    # planetoid.py imports PyG (seconds): read its two constants from the source instead
    tree = ast.parse(Path(F.__file__).with_name("planetoid.py").read_text())
    consts = {
        node.targets[0].id: ast.literal_eval(node.value)
        for node in tree.body
        if isinstance(node, ast.Assign)
        and isinstance(node.targets[0], ast.Name)
        and node.targets[0].id in ("NAMES", "_SUFFIXES")
    }
    paths = {f.path for ds in F.DATASETS.values() for f in ds.files}
    for key, proper in consts["NAMES"].items():
        assert {f"planetoid/{proper}/raw/ind.{key}.{s}" for s in consts["_SUFFIXES"]} <= paths
    assert {f"fashion-mnist/FashionMNIST/raw/{n}" for n in _FASHION_FILES} <= paths
    assert {f"austen/{n}.txt" for n in AUSTEN_NOVELS} <= paths


def test_loaders_name_the_fetch_command(tmp_path):
    from icml24.data.text import tiny_shakespeare

    with pytest.raises(DataUnavailable, match="icml24 data fetch tinyshakespeare"):
        tiny_shakespeare(root=tmp_path)


@pytest.mark.skipif(not SHARED_DATA.is_dir(), reason="shared/data is not here")
def test_local_copies_are_present_and_match_their_sha256(monkeypatch):
    monkeypatch.setenv("ICML24_DATA", str(SHARED_DATA))
    local = [n for n, ds in F.DATASETS.items() if (SHARED_DATA / ds.folder).is_dir()]
    assert {"fashion-mnist", "cora", "mutag", "tinyshakespeare", "austen"} <= set(local)
    for name in local:
        assert F.is_present(name), name
    checked = F.verify(local)  # hashes every file: the proof that the literals are right
    assert len(checked) == sum(len(F.DATASETS[n].files) for n in local)
    assert F.missing() == [n for n in F.DATASETS if n not in local]
