"""Proof certificates: JSON, LaTeX and PDF renderings of a decision, checkable by
``absorb verify`` (:mod:`absorb.verify.checker`) without the decision engine."""

from absorb._lazy import lazy_exports

_EXPORTS = {
    "SCHEMA": "absorb.certificate.build",
    "SCHEMA_VERSION": "absorb.certificate.build",
    "Certificate": "absorb.certificate.build",
    "build_certificate": "absorb.certificate.build",
    "SUFFIXES": "absorb.certificate.write",
    "certificate_path": "absorb.certificate.write",
    "compile_pdf": "absorb.certificate.write",
    "write_certificate": "absorb.certificate.write",
    "render_latex": "absorb.certificate.latex",  # jinja2 is imported only when LaTeX is wanted
}

__all__ = sorted(_EXPORTS)


__getattr__, __dir__ = lazy_exports("absorb.certificate", _EXPORTS, globals())
