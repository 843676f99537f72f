"""``docs/gpu.md``: the trainers measured on a GPU, generated from a JSON of figures (``docs/gpu.json``).

``rlds-lang results gpu --figures FILE ...`` merges the figures files the benchmarks write into ``docs/gpu.json``
and writes the page; without ``--figures`` it rewrites the page from ``docs/gpu.json`` as it is. Until figures
measured on a CUDA device are there, the page says that the trainers have not been run on a GPU yet (and shows
nothing else measured). Each figures file is a JSON object whose ``kind`` says what it holds:

- ``train_throughput`` (``bench/train_throughput.py --json``): one run's device, precision, reference matrix
  product and ``rows`` of tokens/s, FLOP/s and their ratio to the matrix product, per setting and row. Runs on
  several devices or precisions are kept side by side (keyed by device and precision);
- ``device_agreement`` (``bench/device_agreement.py --json``): per row the losses of the first steps on the CPU and
  on the device in fp32, and the tolerance; the page computes whether each row agrees;
- ``trained_rows``: rows trained and played on the device, ``{"kind", "device", "device_name", "precision",
  "setting", "model", "rows": [{"name", "steps", "train_minutes", "games", "mean_reward", "stderr",
  "win_rate"}]}`` (how the rows were trained is said in ``setting``, e.g. LMRL-Gym's BC and ILQL at a size that
  fits the GPU's time); the page lists them as given.

Example::

    rlds-lang results gpu --figures /tmp/throughput.json /tmp/agreement.json    # merge and write docs/gpu.md
    rlds-lang results gpu                                                      # rewrite it from docs/gpu.json
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from trainers.core.provenance import command_line, generated_by, repository_path

#: the figures' kinds, in the order the page shows them.
KINDS = ("train_throughput", "device_agreement", "trained_rows")
#: the JSON of figures the page is written from (relative to the repository's root, where the command runs).
FIGURES = Path("docs") / "gpu.json"
#: the page.
PAGE = Path("docs") / "gpu.md"


def read_figures(path: Path) -> dict[str, list[dict[str, Any]]]:
    """The figures of ``path`` by kind (every kind present, empty when the file does not exist)."""
    merged: dict[str, list[dict[str, Any]]] = {kind: [] for kind in KINDS}
    if path.is_file():
        try:
            saved = json.loads(path.read_text())
        except json.JSONDecodeError as error:
            raise ValueError(f"{path}: not JSON ({error})") from None
        for kind in KINDS:
            merged[kind] = list(saved.get(kind, []))
    return merged


def merge(figures: dict[str, list[dict[str, Any]]], path: Path) -> None:
    """Adds the figures file ``path`` to ``figures``, replacing an earlier entry of its kind on the same device and
    precision; a file of no known kind is an error naming it."""
    try:
        entry = json.loads(path.read_text())
    except json.JSONDecodeError as error:
        raise ValueError(f"{path}: not JSON ({error})") from None
    kind = entry.get("kind") if isinstance(entry, dict) else None
    if kind not in KINDS:
        raise ValueError(f"{path}: field 'kind' is {kind!r}, expected one of {', '.join(KINDS)}")
    for field in ("device", "rows"):
        if field not in entry:
            raise ValueError(f"{path}: a {kind} figures file needs the field {field!r}")
    figures[kind] = [e for e in figures[kind] if entry_key(e) != entry_key(entry)] + [entry]


def reader_workers(entry: dict[str, Any]) -> int:
    """The DataLoader processes that decoded an entry's training batches (0: the training process; files written
    before the figure existed name none)."""
    return int(entry.get("reader_workers", next((r.get("reader_workers", 0) for r in entry.get("rows", [])), 0)))


def entry_key(entry: dict[str, Any]) -> tuple[str, Any, int]:
    """What a newer figures file of the same kind replaces: an entry of the same device, precision and reader
    processes (runs that differ in one of them stay side by side)."""
    return entry["device"], entry.get("precision"), reader_workers(entry)


def on_gpu(figures: dict[str, list[dict[str, Any]]]) -> bool:
    """Whether any figure was measured on a CUDA device."""
    return any(str(entry["device"]).startswith("cuda") for entries in figures.values() for entry in entries)


def _throughput(entries: list[dict[str, Any]]) -> str:
    lines = ["| device | precision | setting | row | tokens/s | FLOP per token | achieved GFLOP/s | "
             "matrix product GFLOP/s | achieved / matrix product | waiting for data | reader processes |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for entry in entries:
        where = f"{entry['device_name']} ({entry['device']})"
        for row in entry["rows"]:
            lines.append(f"| {where} | {entry['precision']} | {row['setting']} | {row['row']} | "
                         f"{row['tokens_per_second']:,.0f} | {row['flops_per_token']:,.0f} | "
                         f"{row['flops_per_second'] / 1e9:,.1f} | {entry['matmul']['flops_per_second'] / 1e9:,.1f} | "
                         f"{row['matmul_ratio']:.1%} | {row['data_wait_share']:.1%} | "
                         f"{row.get('reader_workers', 0)} |")
    return "\n".join(lines)


def agreement_verdict(entry: dict[str, Any]) -> list[tuple[str, bool]]:
    """``(row, agrees)`` per row of a ``device_agreement`` entry: its largest relative difference of a step's loss
    at most the entry's tolerance."""
    return [(row["row"], row["max_relative_difference"] <= entry["tolerance"]) for row in entry["rows"]]


def _agreement(entries: list[dict[str, Any]]) -> str:
    lines = ["| device | row | steps | losses on the CPU | losses on the device | largest relative difference | "
             "tolerance | verdict |", "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for entry in entries:
        verdicts = dict(agreement_verdict(entry))
        for row in entry["rows"]:
            shown = [", ".join(f"{x:.6f}" for x in row[key]) for key in ("cpu_losses", "device_losses")]
            lines.append(f"| {entry['device_name']} ({entry['device']}) | {row['row']} | {entry['steps']} | "
                         f"{shown[0]} | {shown[1]} | {row['max_relative_difference']:.2g} | {entry['tolerance']:g} | "
                         f"{'agree' if verdicts[row['row']] else 'differ'} |")
    return "\n".join(lines)


def _trained(entries: list[dict[str, Any]]) -> str:
    parts = []
    for entry in entries:
        lines = [f"{entry.get('setting', '')} On {entry['device_name']} ({entry['device']}), {entry['precision']}, "
                 f"model {entry.get('model', '')}.", "",
                 "| row | steps | training minutes | games | mean return ± SE | win rate | published | "
                 "difference (SE) |", "| --- | --- | --- | --- | --- | --- | --- | --- |"]
        for r in entry["rows"]:
            published = r.get("published_mean_reward")
            versus = ("| |" if published is None else
                      f"| {published:.3f} | {r['mean_reward'] - published:+.3f} ({shortfall(r):+.1f}) |")
            lines.append(f"| {r['name']} | {r['steps']:,} | {r['train_minutes']:.1f} | {r['games']:,} | "
                         f"{r['mean_reward']:.3f} ± {r['stderr']:.3f} | {r['win_rate']:.3f} {versus}")
        parts.append("\n".join(lines))
    return "\n\n".join(parts)


def shortfall(row: dict[str, Any]) -> float:
    """A trained row's mean return minus its published one, in standard errors of the row's mean."""
    return (row["mean_reward"] - row["published_mean_reward"]) / max(row["stderr"], 1e-12)


def summary(figures: dict[str, list[dict[str, Any]]]) -> str:
    """The page's computed verdicts: the CPU/GPU agreement and the trained rows against their published returns
    (a row more than 2 SE below its published return did not reach it)."""
    lines = []
    for entry in figures["device_agreement"]:
        verdicts = agreement_verdict(entry)
        agreeing = [row for row, agrees in verdicts if agrees]
        lines.append(f"- CPU and {entry['device_name']}: {len(agreeing)} of {len(verdicts)} rows agree in fp32 "
                     f"within {entry['tolerance']:g} relative ({', '.join(agreeing) or 'none'}).")
    for entry in figures["trained_rows"]:
        rows = [r for r in entry["rows"] if r.get("published_mean_reward") is not None]
        short = [r for r in rows if shortfall(r) < -2]
        if rows:
            verdict = ("**not reached**" if short else "reached")
            lines.append(f"- Published returns {verdict} on {entry['device_name']}: {len(short)} of {len(rows)} "
                         f"played rows are more than 2 SE below their published mean return "
                         f"({', '.join(r['name'] for r in short) or 'none'}).")
    return "\n".join(lines)


def render(figures: dict[str, list[dict[str, Any]]], command: str, source: str = FIGURES.as_posix()) -> str:
    """The page (see the module); ``source``: the figures file it is written from, as the page names it."""
    head = (f"# The trainers on a GPU\n\n{generated_by(command)} from `{source}`; do not edit by hand. "
            f"How to run every results page on a GPU: [the GPU guide](guides/gpu.md).\n")
    if not on_gpu(figures):
        return head + f"""
**Not run on a GPU yet.** `{source}` holds no figures measured on a CUDA device: the development machines
have none. The figures this page is for come from the benchmarks run on a GPU machine and merged here with
`rlds-lang results gpu --figures FILE ...`:

- `bench/train_throughput.py --device cuda --json FILE`: tokens/s and achieved FLOP/s of BC and ILQL at the results
  pages' sizes, beside a large matrix product timed in the same run;
- `bench/device_agreement.py --device cuda --json FILE`: the losses of the first steps of BC and ILQL on the CPU and
  on the GPU in fp32, and whether they agree within the stated tolerance;
- rows trained and played on the GPU (`trained_rows`, see `trainers.experiments.gpu`).
"""
    sections = [head + ("\n" + summary(figures) if summary(figures) else "")]
    if figures["train_throughput"]:
        sections.append("## Throughput\n\nBC and ILQL at the results pages' sizes (`bench/train_throughput.py`): "
                        "tokens/s of the training loop, the FLOPs a step computes per token times that, and the "
                        "ratio to a large matrix product timed in the same run on the same device.\n\n"
                        + _throughput(figures["train_throughput"]))
    if figures["device_agreement"]:
        sections.append("## The same losses on the CPU and the GPU\n\nThe first steps of BC and ILQL from the same "
                        "seed and batches in fp32 (TF32 off) on the CPU and on the GPU "
                        "(`bench/device_agreement.py`).\n\n" + _agreement(figures["device_agreement"]))
    if figures["trained_rows"]:
        sections.append("## Rows trained and played on the GPU\n\n" + _trained(figures["trained_rows"]))
    return "\n\n".join(sections) + "\n"


def run_gpu_page(args: argparse.Namespace) -> Path:
    """``rlds-lang results gpu``: merges ``--figures`` into ``--json`` (written only then) and writes ``--out`` from
    it; returns the page."""
    store, out = Path(args.json), Path(args.out)
    figures = read_figures(store)
    for path in args.figures:
        merge(figures, Path(path))
    if args.figures:
        store.parent.mkdir(parents=True, exist_ok=True)
        store.write_text(json.dumps(figures, indent=2) + "\n")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(render(figures, command_line(None, "rlds-lang results gpu"), repository_path(store)))
    print(f"results -> {out}" + ("" if on_gpu(figures) else " (no GPU figures yet)"))
    return out


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``rlds-lang results gpu``."""
    parser.add_argument("--figures", nargs="*", default=[], metavar="FILE",
                        help="figures files of the benchmarks to merge into --json first (see trainers.experiments.gpu)")
    parser.add_argument("--json", default=str(FIGURES), help=f"the figures the page is written from (default: {FIGURES})")
    parser.add_argument("--out", default=str(PAGE), help=f"the page (default: {PAGE})")


__all__ = ["KINDS", "FIGURES", "PAGE", "read_figures", "merge", "on_gpu", "agreement_verdict", "render",
           "run_gpu_page", "add_arguments"]
