"""Proof certificates: JSON, LaTeX and PDF renderings of a decision, checkable by
``absorb verify`` (:mod:`absorb.verify.checker`) without the decision engine."""

from absorb.certificate.build import SCHEMA, SCHEMA_VERSION, Certificate, build_certificate
from absorb.certificate.write import SUFFIXES, certificate_path, compile_pdf, write_certificate

__all__ = ["SCHEMA", "SCHEMA_VERSION", "SUFFIXES", "Certificate", "build_certificate", "certificate_path", "compile_pdf",
           "render_latex", "write_certificate"]


def __getattr__(name: str) -> object:
    if name == "render_latex":  # jinja2 is imported only when LaTeX is wanted
        from absorb.certificate.latex import render_latex

        return render_latex
    raise AttributeError(name)
