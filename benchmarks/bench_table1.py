"""Table 1 of the OS paper (000): LCP dimensions of NMC, MC, RMC and OS for the dual-arm robot.

000 Sec. 3-6 and Table 1: the dual-arm platform (n = 26 links, N = 26 DoF, no loop closures,
nb = 0 loop-closure rows), nu = 4 contacts and nf = 4 friction directions give LCPs of size
NMC 6n + nb + nu (nf + 2) = 310 (its nb counts the 5n hinge-constraint rows, i.e. 6n - N here),
MC N + nb + nu (nf + 2) = 50, RMC nu (nf + 2) = 24 and OS nb + nu (nf + 2) = 24. NMC/OS (Sec. 8,
hinges as constraints with the OS elimination) is (6n - N) + nb + nu (nf + 2) = 154.

This script builds the state of :func:`mbsim.samples.dual_arm.table1_scenario_toml` (the
``dual-arm`` sample holding the wheel, which is static there, fingers 1-2 of each hand on the
rim: exactly 4 contacts), takes one step with each formulation through ``mbsim.Simulator`` and
prints, per formulation, the size from the formulas (``formulations.base.lcp_dimension`` with
the model's n, N), the size of the LCP the step actually solved (``StepReport.lcp_size``) and
the paper's number. It exits with status 1 if any of them disagree.

Run:  .venv/bin/python benchmarks/bench_table1.py [--markdown]
"""

from __future__ import annotations

import argparse
import sys

from mbsim.io.scenario import load_scenario_text
from mbsim.samples.catalog import bundled_dir
from mbsim.samples.dual_arm import table1_scenario_toml
from mbsim.simcore.formulations import lcp_dimension
from mbsim.simulator import Simulator

#: 000 Table 1, "Dual-arm LCP dimension" (NMC/OS, Sec. 8, is not in Table 1: None).
PAPER = {"nmc": 310, "mc": 50, "rmc": 24, "os": 24, "nmc-os": None}
FORMULATIONS = ("nmc", "mc", "rmc", "os", "nmc-os")
NF = 4


def measure(formulation: str, nf: int = NF) -> dict:
    """One step of the Table 1 state with ``formulation``: the model's n and N, the number of
    contacts, the LCP size from the formulas and from the step, and the paper's size."""
    scenario = load_scenario_text(
        table1_scenario_toml(formulation, nf),
        source=bundled_dir() / "table1.toml",  # names it; relative URDF paths resolve there
    )
    sim = Simulator(scenario)
    m = sim.model
    report = sim.step()
    return {
        "formulation": formulation,
        "n": m.nb,
        "N": m.nv,
        "nu": report.n_contacts,
        "formula": lcp_dimension(formulation, m.nb, m.nv, 0, report.n_contacts, nf),
        "step": report.lcp_size,
        "paper": PAPER[formulation] if PAPER[formulation] is not None else "-",
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--markdown", action="store_true", help="print a markdown table")
    args = parser.parse_args(argv)
    rows = [measure(f) for f in FORMULATIONS]
    n, N, nu = rows[0]["n"], rows[0]["N"], rows[0]["nu"]
    print(f"dual-arm: n = {n} links, N = {N} DoF, nb = 0, nu = {nu} contacts, nf = {NF}")
    if args.markdown:
        print("| formulation | LCP size (formula) | LCP size (step) | 000 Table 1 |")
        print("|---|---|---|---|")
        for r in rows:
            name = r["formulation"].upper().replace("-", "/")
            print(f"| {name} | {r['formula']} | {r['step']} | {r['paper']} |")
    else:
        print(f"{'formulation':<12}{'formula':>9}{'step':>7}{'paper':>7}")
        for r in rows:
            print(f"{r['formulation']:<12}{r['formula']:>9}{r['step']:>7}{r['paper']:>7}")
    bad = [
        r["formulation"]
        for r in rows
        if r["formula"] != r["step"] or r["paper"] not in ("-", r["step"])
    ]
    if bad or nu != 4 or n != 26 or N != 26:
        print(f"MISMATCH: {', '.join(bad) or 'state'}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
