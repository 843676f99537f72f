"""The ``--device`` and ``--precision`` options of the commands that compute (their names, choices and help),
apart from what they mean (``trainers.core.device``, which imports PyTorch) so that a command's ``--help`` is
built without it.

Example::

    import argparse
    from trainers.core.device_options import add_device_arguments

    parser = argparse.ArgumentParser()
    add_device_arguments(parser)
    args = parser.parse_args(["--device", "cpu", "--precision", "bf16"])
"""

from __future__ import annotations

import argparse


#: the config fields that say where a run computes, not what it computes (left out where a page lists a config).
RUNTIME_FIELDS = ("device", "precision")
#: the ``--precision`` values.
PRECISIONS = ("auto", "fp32", "tf32", "bf16")
#: what ``--device`` takes, for help texts and errors.
DEVICE_FORMS = "auto, cpu, cuda or cuda:N"
#: ``--device``'s help.
DEVICE_HELP = ("where to compute: auto (CUDA when present, else the CPU), cpu, cuda (cuda:LOCAL_RANK under "
               "torchrun) or cuda:N")
#: ``--precision``'s help.
PRECISION_HELP = ("numeric precision: auto (fp32 unless the command chose), fp32, tf32 (CUDA matmuls in TF32) or "
                  "bf16 (autocast to bfloat16; on the CPU allowed but usually slower)")


def add_device_arguments(parser: argparse.ArgumentParser) -> None:
    """Adds ``--device`` and ``--precision`` (defaults ``auto``) to a command that is not a config's parser."""
    parser.add_argument("--device", default="auto", help=DEVICE_HELP)
    parser.add_argument("--precision", default="auto", choices=PRECISIONS, help=PRECISION_HELP)


__all__ = ["RUNTIME_FIELDS", "PRECISIONS", "DEVICE_FORMS", "DEVICE_HELP", "PRECISION_HELP", "add_device_arguments"]
