"""The cost of σ's analysis in an end-to-end ``absorb check`` of a tiny block.

    python benchmarks/bench_sigma.py [--repeat 3] [--builtin-only]

Prints, from one run (each time the best of ``--repeat`` fresh processes, after an untimed
one; the children may write bytecode, as an installed package has it): the start-up of
``python -c pass``, of ``python -m absorb --version`` (the baseline) and of
``absorb check --help`` (targets ≤ 0.3 s each); ``absorb check`` of a 6×24 GELU block (a
built-in activation, whose properties are read from the shipped facts table), as seconds and
as a ratio to the baseline; and, for each custom ``expr:`` activation used in docs/ and
counterexamples/ (and Mish), the same block's check time and the time it adds over the
built-in run (wall and CPU seconds: on a busy machine compare the CPU), twice: ``cold`` (an empty analysis cache: the expression is proved real and
finite and analysed in budgeted child processes) and ``warm`` (its analysis read from the
cache a previous run filled, as on every run after the first); then, in this process, the analysis alone (``analyse``, and ``prepare`` with
its budgeted child process) of each custom expression against reading the built-in table.
Targets: ``--version`` and ``check --help`` ≤ 0.3 s; the built-in block ≤ 0.6 s end to end;
each custom expression adds ≤ 0.5 s.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time

CUSTOM = (
    "x*(1+erf(x/sqrt(2)))/2",  # GELU as a user expression (docs)
    "Max(0,x)**3",  # docs
    "1-0**Max(0,x)",  # a step (docs)
    "(1-0**Max(0,x)+0**Max(0,-x))/2",  # docs
    "x**2",  # counterexamples/square_biased_g.npz
    "Max(0, x) + Min(0, exp(x) - 1)",  # ELU, counterexamples/elu_biased_generic.npz
    "x*tanh(log(1+exp(x)))",  # Mish (issue 24's example)
)


def _run(args: list[str], repeat: int, cache: str = "off") -> tuple[float, float, int]:
    """Best wall seconds and best CPU seconds (user + system: on a busy machine the wall time
    includes waiting for a core, the CPU time much less so) of ``repeat`` fresh processes,
    after one untimed run, and the exit code. The children may write bytecode
    (``PYTHONDONTWRITEBYTECODE`` is dropped from their environment), as an installed package
    has it: otherwise every run would compile absorb's sources again.

    ``cache``: the analysis cache of expr: activations each run sees: ``off``, ``cold`` (a new
    empty directory for every run) or ``warm`` (one directory, filled by the untimed run)."""
    import resource

    def cpu() -> float:
        r = resource.getrusage(resource.RUSAGE_CHILDREN)
        return r.ru_utime + r.ru_stime

    best, best_cpu, rc = float("inf"), float("inf"), 0
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    scratch = tempfile.TemporaryDirectory()
    env["ABSORB_CACHE_DIR"] = "off" if cache == "off" else scratch.name
    for k in range(repeat + 1):
        if cache == "cold":
            env["ABSORB_CACHE_DIR"] = tempfile.mkdtemp(dir=scratch.name)
        t, c = time.perf_counter(), cpu()
        rc = subprocess.run([sys.executable, *args], cwd=root, env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL).returncode
        if k:
            best, best_cpu = min(best, time.perf_counter() - t), min(best_cpu, cpu() - c)
    scratch.cleanup()
    return best, best_cpu, rc


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3, help="fresh processes per measurement (the best counts)")
    ap.add_argument("--builtin-only", action="store_true", help="stop after the built-in block (no custom expressions)")
    args = ap.parse_args()
    import numpy as np

    rng = np.random.default_rng(0)
    d, n = 6, 24
    U, D = rng.standard_normal((n, d)) / np.sqrt(d), rng.standard_normal((d, n)) / np.sqrt(n)
    with tempfile.TemporaryDirectory() as tmp:
        def block(act: str) -> str:
            path = os.path.join(tmp, f"b{abs(hash(act))}.npz")
            np.savez(path, W_up=U, W_down=D, activation=np.array(act))
            return path

        bare, bare_cpu, _ = _run(["-c", "pass"], args.repeat)
        print(f"python:   python -c pass                        {bare:7.3f} s  cpu {bare_cpu:6.3f} s")
        base, base_cpu, _ = _run(["-m", "absorb", "--version"], args.repeat)
        print(f"baseline: python -m absorb --version            {base:7.3f} s  cpu {base_cpu:6.3f} s  (target <= 0.3 s)")
        t_help, help_cpu, _ = _run(["-m", "absorb", "check", "--help"], args.repeat)
        print(f"start-up: python -m absorb check --help         {t_help:7.3f} s  cpu {help_cpu:6.3f} s  (target <= 0.3 s)")
        t_gelu, gelu_cpu, rc = _run(["-m", "absorb", "check", block("gelu")], args.repeat)
        print(f"built-in: absorb check 6x24 gelu                {t_gelu:7.3f} s  cpu {gelu_cpu:6.3f} s  ({t_gelu / base:5.2f}x "
              f"baseline, exit {rc}; target <= 0.6 s)")
        for expr in () if args.builtin_only else CUSTOM:
            for cache in ("cold", "warm"):
                t, t_cpu, rc = _run(["-m", "absorb", "check", block("expr:" + expr)], args.repeat, cache=cache)
                print(f"custom {cache}: expr:{expr:33s} {t:7.3f} s  cpu {t_cpu:6.3f} s  adds {t - t_gelu:+6.3f} s, "
                      f"cpu {t_cpu - gelu_cpu:+6.3f} s ({t / t_gelu:5.2f}x built-in, exit {rc}; target adds <= 0.5 s)")
    if args.builtin_only:
        return
    # In this process: the symbolic analysis alone (imports already paid), against reading the
    # built-in table. prepare() runs a user's analyses in a budgeted child process.
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    os.environ["ABSORB_CACHE_DIR"] = "off"  # the analysis itself, every time (and nothing written to the user's cache)
    from absorb.model.activations import get_activation
    from absorb.symbolic import properties as props

    def timed(fn) -> float:
        best = float("inf")
        for _ in range(args.repeat):
            props.clear_cache()
            t = time.perf_counter()
            fn()
            best = min(best, time.perf_counter() - t)
        return best

    gelu = get_activation("gelu")
    t_table = timed(lambda: [props._get(gelu, k) for k, _ in props.ANALYSES])
    print(f"in-process: every property of built-in gelu (table)   {t_table:7.3f} s")
    for expr in CUSTOM:
        act = get_activation("expr:" + expr)
        t_an = timed(lambda act=act: props.analyse(act.expr))
        t_prep = timed(lambda act=act: props.prepare(act))
        print(f"in-process: expr:{expr:33s} analyse {t_an:7.3f} s, prepare (child process) {t_prep:7.3f} s "
              f"({t_prep / max(t_table, 1e-6):8.0f}x the table)")


if __name__ == "__main__":
    main()
