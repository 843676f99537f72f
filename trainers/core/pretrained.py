"""Pretrained causal language models with their own tokenizer, found without network (``ModelConfig.pretrained``).

``resolve_pretrained`` turns ``--model.pretrained PATH_OR_NAME`` into a local folder: a folder as given (a
``save_pretrained`` folder, or a checkpoint's ``lm/``), else a model name looked up in the local Hugging Face cache
(``huggingface_hub``'s ``HF_HUB_CACHE``, e.g. ``~/.cache/huggingface/hub``) with ``local_files_only``: nothing is
ever downloaded, whatever ``HF_HUB_OFFLINE`` says, and a model that is not there is a ``FileNotFoundError`` naming
the folder and the cache it looked in. ``pretrained_tokenizer`` reads the folder's ``AutoTokenizer`` (fast) into a
``rlds_lang.pretrained_tokenizer.PretrainedTokenizer``, the task's token view; ``pretrained_language_model`` loads
its ``AutoModelForCausalLM`` (float32) and grows its embedding table by the special tokens that view adds.
``task_tokenizer`` is what the training loop calls: that tokenizer when the config names a pretrained model, the
config's named tokenizer otherwise.

Example::

    from trainers.core.pretrained import pretrained_language_model, pretrained_tokenizer

    tok = pretrained_tokenizer("gpt2")                      # from the local cache, or a folder
    lm = pretrained_language_model("gpt2", tok.vocab_size, tok.pad_id, tok.bos_id, tok.eos_id)
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path
from typing import Any

#: the files that make a folder a model folder (a ``save_pretrained`` one holds ``config.json``).
MODEL_CONFIG = "config.json"
#: what a model name on the hub looks like (``gpt2``, ``openai-community/gpt2``); anything else is a folder path.
MODEL_NAME = re.compile(r"[A-Za-z0-9][\w.-]*(/[A-Za-z0-9][\w.-]*)?")


def hub_cache() -> str:
    """The Hugging Face hub cache a model name is looked up in (``HF_HUB_CACHE``, else ``HF_HOME/hub``)."""
    from huggingface_hub import constants

    return str(constants.HF_HUB_CACHE)


def resolve_pretrained(source: str) -> Path:
    """The local folder of ``source``: a folder with ``config.json``, or a model name (``gpt2``,
    ``openai-community/gpt2``) whose snapshot is in the local Hugging Face cache. Never uses the network; a clear
    ``FileNotFoundError`` saying where it looked when neither is found."""
    if not source:
        raise ValueError("ModelConfig.pretrained is empty: give a model folder or a model name in the local cache")
    folder = Path(source).expanduser()
    if folder.is_dir():
        if not (folder / MODEL_CONFIG).is_file():
            raise FileNotFoundError(f"--model.pretrained {source!r}: the folder {folder} has no {MODEL_CONFIG} "
                                    f"(a folder written by save_pretrained, or a checkpoint's lm/ folder)")
        return folder
    if not MODEL_NAME.fullmatch(source):
        raise FileNotFoundError(f"--model.pretrained {source!r}: no such folder ({folder.resolve()})")
    from huggingface_hub import snapshot_download
    from huggingface_hub.errors import LocalEntryNotFoundError

    try:
        return Path(snapshot_download(repo_id=source, local_files_only=True))
    except (LocalEntryNotFoundError, ValueError, OSError) as error:
        raise FileNotFoundError(
            f"--model.pretrained {source!r}: not a folder ({folder.resolve()}), and not in the local Hugging Face "
            f"cache {hub_cache()} (looked for models--{source.replace('/', '--')} there; nothing is downloaded). "
            f"Download it where there is network (huggingface-cli download {source}) into that cache, or give its "
            f"folder") from error


def pretrained_tokenizer(source: str) -> Any:
    """The tokenizer of the model at ``source`` (``resolve_pretrained``), read with ``AutoTokenizer`` (fast), as
    a ``PretrainedTokenizer``: its own special tokens where it has them, the token MDP's others added."""
    from transformers import AutoTokenizer

    from rlds_lang.pretrained_tokenizer import PretrainedTokenizer

    folder = resolve_pretrained(source)
    hf = AutoTokenizer.from_pretrained(folder, local_files_only=True, use_fast=True)
    backend = getattr(hf, "backend_tokenizer", None)
    if backend is None:
        raise ValueError(f"--model.pretrained {source!r}: {type(hf).__name__} in {folder} has no fast (Rust) tokenizer "
                         f"to tokenize with; save one there (tokenizer.json)")
    roles = {"bos": hf.bos_token, "eos": hf.eos_token, "pad": hf.pad_token, "unk": hf.unk_token}
    return PretrainedTokenizer(backend, roles, name=Path(source).name or source, source=source)


def pretrained_language_model(source: str, vocab_size: int, pad_id: int, bos_id: int | None = None,
                              eos_id: int | None = None) -> Any:
    """The causal LM at ``source`` (``AutoModelForCausalLM``, float32, from local files only), its embedding
    table resized to ``vocab_size`` (the tokenizer's, special tokens added; the pretrained rows are kept) and the
    token MDP's special ids written into its config."""
    import torch
    from transformers import AutoModelForCausalLM

    folder = resolve_pretrained(source)
    model = AutoModelForCausalLM.from_pretrained(folder, local_files_only=True, dtype=torch.float32)
    if model.get_input_embeddings().num_embeddings != vocab_size:
        model.resize_token_embeddings(vocab_size)
    model.config.pad_token_id, model.config.bos_token_id, model.config.eos_token_id = pad_id, bos_id, eos_id
    if getattr(model, "generation_config", None) is not None:
        model.generation_config.pad_token_id = pad_id
        model.generation_config.bos_token_id, model.generation_config.eos_token_id = bos_id, eos_id
    return model


def pretrained_architecture(folder: str | Path) -> Any:
    """A causal LM of the architecture that ``folder/config.json`` describes (written by ``config.save_pretrained``
    of a model built by ``pretrained_language_model``: its resized vocabulary and special ids included), with
    fresh float32 weights for the caller to load its own into. For checkpoints that keep the weights elsewhere
    (a reward model's ``weights.pt``); a folder without ``config.json`` is a ``FileNotFoundError`` naming it."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    folder = Path(folder)
    if not (folder / MODEL_CONFIG).is_file():
        raise FileNotFoundError(f"{folder}: no {MODEL_CONFIG} describing the pretrained model's architecture")
    config = AutoConfig.from_pretrained(folder, local_files_only=True)
    return AutoModelForCausalLM.from_config(config, dtype=torch.float32)


def task_tokenizer(config: Any) -> Any:
    """The token view a training config asks for: ``config.model.pretrained``'s own tokenizer when it names a
    pretrained model, else the tokenizer named by ``config.tokenizer`` (``rlds_lang.tokenizers.make_tokenizer``).
    A ``tokenizer`` other than the config's default beside a pretrained model is a ``ValueError``."""
    from rlds_lang.tokenizers import make_tokenizer

    source = getattr(getattr(config, "model", None), "pretrained", None)
    if not source:
        return make_tokenizer(config.tokenizer)
    default = {field.name: field.default for field in dataclasses.fields(config)}.get("tokenizer")
    if config.tokenizer != default:
        raise ValueError(f"tokenizer={config.tokenizer!r} and model.pretrained={source!r}: a pretrained model brings "
                         f"its own tokenizer; give one or the other")
    return pretrained_tokenizer(source)


__all__ = ["MODEL_CONFIG", "hub_cache", "resolve_pretrained", "pretrained_tokenizer", "pretrained_language_model",
           "pretrained_architecture", "task_tokenizer"]
