"""Write a certificate as ``.json``, ``.tex`` or ``.pdf`` — atomically.

The suffix of the output path picks the format; anything else is bad usage (one line, exit
2). The file is written to a temporary file in the same directory and renamed over the
target only when complete, so a failure (pdflatex missing or failing, disk full, Ctrl-C)
leaves no half-written certificate behind.

The PDF is produced by a real ``pdflatex`` run (``-interaction=nonstopmode
-halt-on-error -no-shell-escape``) in a private temporary directory, with a timeout.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import stat
import subprocess
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from absorb._errors import AbsorbError, InvalidInput

if TYPE_CHECKING:  # the CLI imports this module for certificate_path(); keep it light
    from absorb.certificate.build import Certificate
    from absorb.engine.verdict import Decision
    from absorb.model.block import Block, Stack

SUFFIXES = (".json", ".tex", ".pdf")
PDFLATEX_TIMEOUT = 120.0
"""Seconds one pdflatex run may take (a certificate compiles in well under a second)."""


class CertificateError(AbsorbError):
    """The certificate could not be produced (pdflatex missing or failing, unwritable path)."""

    def __init__(self, message: str) -> None:
        super().__init__(" ".join(str(message).split()))


def _check_suffix(path: str) -> str:
    suffix = Path(path).suffix.lower()
    if suffix not in SUFFIXES:
        raise InvalidInput(
            f"--certificate {path}: unknown format {suffix or '(no suffix)'!r}; "
            "the file name must end in .json, .tex or .pdf"
        )
    return suffix


def certificate_path(text: str) -> str:
    """argparse ``type=`` for ``--certificate OUT``: the suffix must be .json, .tex or .pdf."""
    try:
        _check_suffix(text)
    except InvalidInput as exc:
        raise argparse.ArgumentTypeError(str(exc).removeprefix("--certificate ")) from None
    return text


def compile_pdf(tex: str, *, timeout: float = PDFLATEX_TIMEOUT) -> bytes:
    """Compile a LaTeX document with ``pdflatex`` and return the PDF bytes.

    Raises :class:`CertificateError` with one line when pdflatex is missing (naming the
    Debian package ``texlive-latex-base``), times out, or fails (with the first LaTeX error).
    """
    exe = shutil.which("pdflatex")
    if exe is None:
        raise CertificateError(
            "pdflatex not found on PATH; install it (Debian/Ubuntu: apt-get install "
            "texlive-latex-base) "
            "or write a .tex or .json certificate instead"
        )
    with tempfile.TemporaryDirectory(prefix="absorb-cert-") as tmp:
        src = Path(tmp) / "certificate.tex"
        src.write_text(tex, encoding="utf-8")
        cmd = [exe, "-interaction=nonstopmode", "-halt-on-error", "-no-shell-escape", src.name]
        try:
            proc = subprocess.run(cmd, cwd=tmp, capture_output=True, timeout=timeout, stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            raise CertificateError(
                f"pdflatex did not finish within {timeout:g} s; write a .tex certificate and compile it yourself"
            ) from None
        pdf = Path(tmp) / "certificate.pdf"
        if proc.returncode != 0 or not pdf.is_file():
            log = Path(tmp) / "certificate.log"
            text = log.read_text(encoding="latin-1") if log.is_file() else proc.stdout.decode("latin-1")
            raise CertificateError(f"pdflatex failed: {first_latex_error(text)}")
        return pdf.read_bytes()


def first_latex_error(log: str) -> str:
    """The first ``! …`` error line of a LaTeX log, with its ``l.N`` line number if present."""
    lines = log.splitlines()
    for i, line in enumerate(lines):
        if line.startswith("!"):
            where = next((m.group(0) for m in (re.match(r"l\.\d+", x) for x in lines[i + 1 : i + 12]) if m), "")
            return line[1:].strip() + (f" (certificate.tex {where})" if where else "")
    return "no error line in the log (exit status nonzero)"


def output_target(path: str | os.PathLike[str], option: str = "--certificate") -> Path:
    """Where writing ``path`` lands: the path itself or, for a symbolic link (or a chain of them),
    the path it finally names. Bad input (naming ``option``) for a loop of links, a link to a
    folder (a target ending in ``/``, which need not exist yet), or a special file there (a
    device, FIFO or socket: the atomic rename would replace it — /dev/null, say)."""
    p = Path(path)
    for _ in range(40):  # (the kernel's own limit on a chain of links)
        if not p.is_symlink():
            if p.exists() and not p.is_file() and not p.is_dir():
                raise InvalidInput(f"{option} {path}: is not a regular file (a device, FIFO or socket); give a file name")
            return p
        target = os.readlink(p)
        if os.path.basename(target) in ("", ".", ".."):  # "dir/", "dir/." (pathlib would drop the "/.")
            raise InvalidInput(f"{option} {path}: is a link to a folder ({target}); give a file name")
        p = p.parent / target
    raise InvalidInput(f"{option} {path}: is a loop (or a chain of over 40) of symbolic links; give a file name")


def _atomic_write(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` whole or not at all (a temporary file renamed over it). At a
    symbolic link the file it points to is replaced and the link kept, as ``open(path, "w")``
    would keep it, and an existing file's permission bits are kept (its other hard links, if any,
    keep the old contents: the rename gives the name a new file); a special file (a device, FIFO
    or socket) is refused, never replaced."""
    asked, path = path, output_target(path)
    parent = path.parent if str(path.parent) else Path(".")
    if not parent.is_dir():
        raise InvalidInput(f"--certificate {path}: directory {parent} does not exist; create it first")
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=parent)
    except OSError as exc:  # named by the path asked for, not by a temporary file's
        raise OSError(exc.errno, exc.strerror, str(asked)) from None
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        try:  # mkstemp makes the file 0600; give it the permissions open() would: the existing file's
            mode = stat.S_IMODE(path.stat().st_mode)
        except FileNotFoundError:  # a new file: 0666 less the umask
            umask = os.umask(0)
            os.umask(umask)
            mode = 0o666 & ~umask
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException as exc:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        if isinstance(exc, OSError) and exc.filename in (tmp, None):  # named by the path asked for (a full disk names none)
            raise OSError(exc.errno, exc.strerror, str(asked)) from None
        raise


def render(cert: Certificate, suffix: str) -> bytes:
    """The bytes of ``cert`` in the format named by ``suffix`` (``.json``/``.tex``/``.pdf``)."""
    if suffix == ".json":
        return cert.dumps().encode("utf-8")
    from absorb.certificate.latex import render_latex

    tex = render_latex(cert)
    if suffix == ".tex":
        return tex.encode("utf-8")
    return compile_pdf(tex)


def write_certificate(
    decision: Decision,
    model: Block | Stack | Iterable[Block] | None,
    out: str | os.PathLike[str],
    *,
    seed: int,
    activation: str | None = None,
    method: str = "auto",
    timeout: float | None = None,
    entries: list[dict[str, Any]] | None = None,
    checkpoint: dict[str, Any] | None = None,
) -> Certificate:
    """Build the certificate of ``decision`` and write it to ``out`` (format from the suffix);
    ``entries`` and ``checkpoint`` as in :func:`~absorb.certificate.build.build_certificate`.

    Nothing is written unless the whole file could be produced. Returns the certificate.
    """
    path = Path(out)
    suffix = _check_suffix(str(path))
    from absorb.certificate.build import build_certificate

    cert = build_certificate(
        decision,
        model,
        seed=seed,
        activation=activation,
        method=method,
        timeout=timeout,
        entries=entries,
        checkpoint=checkpoint,
    )
    _atomic_write(path, render(cert, suffix))
    return cert
