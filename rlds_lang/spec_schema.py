"""The schema of any ``dm_env.Environment``, read from its specs: what a recorded episode holds, field by field.

``describe_environment(env)`` turns an environment's observation, action, reward and discount specs into a plain,
JSON-serialisable description; ``loggers.record`` stores it with the logs (``SPECS_KEY`` in the log folder's
dataset-level metadata), and the generic TFDS builder (``rlds_lang_datasets.rlds_logs``) reads it back to declare
its features, so a dataset of one's own environment needs no hand-written builder. A field is one of:

* text -- ``{"kind": "text", "string_type": "str" | "bytes", "shape": [...]}``: a ``dm_env.specs.StringArray``
  (or any spec of dtype ``object``, EnvLogger's reading of one). Stored as TFDS ``Text`` (scalars) or string
  tensors, byte for byte; ``str`` is stored as its UTF-8 bytes.
* number -- ``{"kind": "number", "dtype": "float64", "shape": [...]}``: any ``specs.Array`` of a bool, integer or
  float dtype (bounded and discrete arrays included). ``float64`` is stored as its raw bytes, so it comes back
  exactly; the other dtypes are stored as themselves.
* dict -- ``{"kind": "dict", "fields": {name: field, ...}}``: a dict of specs, nested at will.

Anything else (tuples or lists of specs, complex numbers, a spec that is not a ``dm_env`` spec) is an
``UnsupportedSpecError`` naming the field, raised before anything is recorded. ``conform`` checks a recorded value
against its field (an error names the episode, step and field) and returns what TFDS stores. TensorFlow Datasets
is imported only by ``tfds_feature`` and ``dataset_config``.

Example::

    import dm_env
    from dm_env import specs

    class Echo(dm_env.Environment):  # text in, text out
        def reset(self): return dm_env.restart("say hi")
        def step(self, action): return dm_env.termination(float(action == "hi"), "")
        def observation_spec(self): return specs.StringArray((), str, name="observation")
        def action_spec(self): return specs.StringArray((), str, name="action")

    describe_environment(Echo())["action"]   # {'kind': 'text', 'string_type': 'str', 'shape': []}
"""

from __future__ import annotations

import json
from typing import Any, Mapping

import numpy as np
from dm_env import specs

#: the key of the dataset-level log metadata that holds an environment's description (a JSON string).
SPECS_KEY = "rlds_lang_specs"
#: the four specs of a ``dm_env.Environment``, by the RLDS step field each describes.
SPEC_FIELDS = ("observation", "action", "reward", "discount")

Field = dict[str, Any]


class UnsupportedSpecError(TypeError):
    """A spec (or a value) no dataset field can hold losslessly; the message names the field."""


class ValueMismatchError(ValueError):
    """A recorded value does not fit its field (wrong type, shape or a dtype it cannot take exactly)."""


def text_field(string_type: type = str, shape: tuple[int, ...] = ()) -> Field:
    """The description of a text field (``str`` or ``bytes``) of ``shape``."""
    return {"kind": "text", "string_type": "bytes" if string_type is bytes else "str", "shape": list(shape)}


def number_field(dtype: Any, shape: tuple[int, ...] = ()) -> Field:
    """The description of a numeric field of ``dtype`` and ``shape``."""
    return {"kind": "number", "dtype": np.dtype(dtype).name, "shape": [int(n) for n in shape]}


def describe_spec(spec: Any, path: str) -> Field:
    """The description of one spec (or dict of specs) at ``path`` (used in errors, e.g. ``observation/board``)."""
    if isinstance(spec, Mapping):
        if not all(isinstance(key, str) for key in spec):
            raise UnsupportedSpecError(f"{path}: a dict of specs needs string keys, got {sorted(map(repr, spec))}")
        return {"kind": "dict", "fields": {key: describe_spec(value, f"{path}/{key}") for key, value in spec.items()}}
    if isinstance(spec, (list, tuple)):
        raise UnsupportedSpecError(f"{path}: a {type(spec).__name__} of specs has no field names; use a dict of "
                                   "specs (each entry becomes a named field)")
    if isinstance(spec, specs.StringArray):
        return text_field(spec.string_type, spec.shape)
    if not isinstance(spec, specs.Array):
        raise UnsupportedSpecError(f"{path}: {spec!r} is not a dm_env spec (dm_env.specs.Array, StringArray, "
                                   "BoundedArray, DiscreteArray or a dict of them)")
    dtype = np.dtype(spec.dtype)
    if dtype == object:
        return text_field(str, spec.shape)
    if dtype.kind not in "biuf":
        raise UnsupportedSpecError(f"{path}: dtype {dtype.name} cannot be stored; use text, bool, integers or floats")
    return number_field(dtype, spec.shape)


def describe_environment(env: Any) -> dict[str, Field]:
    """``{observation, action, reward, discount: field}`` of a ``dm_env.Environment``'s specs (see the module
    docstring); an ``UnsupportedSpecError`` names the first field that cannot be stored."""
    getters = {"observation": "observation_spec", "action": "action_spec", "reward": "reward_spec",
               "discount": "discount_spec"}
    return {name: describe_spec(getattr(env, getter)(), name) for name, getter in getters.items()}


def describe_envlogger_specs(environment_specs: Mapping[str, Any]) -> dict[str, Field]:
    """The description of the specs EnvLogger stores itself (``envlogger.Reader``'s ``observation_spec()``...):
    for logs written without ``SPECS_KEY``. EnvLogger keeps no string type, so text reads as ``str``."""
    return {name: describe_spec(environment_specs[f"{name}_spec"], name) for name in SPEC_FIELDS}


def to_json(description: Mapping[str, Any]) -> str:
    """``description`` as the canonical JSON string stored in log metadata."""
    return json.dumps(description, sort_keys=True)


def from_json(text: str | bytes) -> dict[str, Field]:
    """The description stored by ``to_json``."""
    return json.loads(text)


def field_of_value(value: Any, path: str) -> Field:
    """The field a metadata value needs (text, number or dict), inferred from the value itself."""
    if isinstance(value, Mapping):
        return {"kind": "dict", "fields": {str(k): field_of_value(v, f"{path}/{k}") for k, v in value.items()}}
    if isinstance(value, (str, bytes)):
        return text_field(type(value))
    array = np.asarray(value)
    if array.dtype == object or array.dtype.kind in "SU":
        kinds = {type(x) for x in array.reshape(-1)}
        return text_field(bytes if kinds == {bytes} or array.dtype.kind == "S" else str, array.shape)
    if array.dtype.kind not in "biuf":
        raise UnsupportedSpecError(f"{path}: a value of dtype {array.dtype.name} cannot be stored: {value!r}")
    return number_field(array.dtype, array.shape)


def conform(field: Field, value: Any, where: str) -> Any:
    """``value`` as TFDS stores it under ``field``, or a ``ValueMismatchError`` naming ``where`` (episode, step and
    field): text must be ``str``/``bytes`` (arrays of them for a shaped field), numbers must take the field's
    dtype exactly and have its shape, dicts must hold every field (and nothing else)."""
    kind = field["kind"]
    if kind == "dict":
        if not isinstance(value, Mapping):
            raise ValueMismatchError(f"{where}: expected a dict with {sorted(field['fields'])}, got {value!r}")
        extra = sorted(set(value) - set(field["fields"]))
        missing = sorted(set(field["fields"]) - set(value))
        if extra or missing:
            raise ValueMismatchError(f"{where}: fields {sorted(value)} do not match the specs' {sorted(field['fields'])}"
                                     f" (missing {missing}, unexpected {extra})")
        return {k: conform(f, value[k], f"{where}/{k}") for k, f in field["fields"].items()}
    shape = tuple(field["shape"])
    if kind == "text":
        if shape == ():
            if isinstance(value, np.ndarray) and value.shape == ():
                value = value.item()
            if isinstance(value, np.str_):
                value = str(value)
            if not isinstance(value, (str, bytes)):
                raise ValueMismatchError(f"{where}: expected text (str or bytes), got {type(value).__name__}: "
                                         f"{value!r}")
            return value
        array = np.asarray(value, dtype=object)
        if array.shape != shape or not all(isinstance(x, (str, bytes)) for x in array.reshape(-1)):
            raise ValueMismatchError(f"{where}: expected text of shape {shape}, got {value!r}")
        return array
    dtype = np.dtype(field["dtype"])
    original = np.asarray(value)
    if original.shape != shape:
        raise ValueMismatchError(f"{where}: expected shape {shape}, got {original.shape}: {value!r}")
    if original.dtype.kind not in "biuf":
        raise ValueMismatchError(f"{where}: expected {dtype.name}, got {original.dtype.name}: {value!r}")
    converted = original.astype(dtype)
    if not np.array_equal(converted.astype(original.dtype), original, equal_nan=dtype.kind == "f"):
        raise ValueMismatchError(f"{where}: {value!r} does not fit {dtype.name} exactly")
    return converted


def tfds_feature(field: Field) -> Any:
    """The TFDS feature connector of a field (``float64`` as raw bytes, so it reads back exactly)."""
    import tensorflow_datasets as tfds

    kind, shape = field["kind"], tuple(field.get("shape", ()))
    if kind == "dict":
        return tfds.features.FeaturesDict({k: tfds_feature(f) for k, f in field["fields"].items()})
    if kind == "text":
        return tfds.features.Text() if shape == () else tfds.features.Tensor(shape=shape, dtype=np.object_)
    dtype = np.dtype(field["dtype"])
    if dtype == np.float64:
        return tfds.features.Tensor(shape=shape, dtype=dtype, encoding=tfds.features.Encoding.BYTES)
    return tfds.features.Scalar(dtype=dtype) if shape == () else tfds.features.Tensor(shape=shape, dtype=dtype)


def dataset_config(specs_fields: Mapping[str, Field], step_metadata: Mapping[str, Field],
                   episode_metadata: Mapping[str, Field], config_cls: Any = None, **kwargs: Any) -> Any:
    """A ``tfds.rlds.rlds_base.DatasetConfig`` (or ``config_cls``, a subclass) declaring an environment's fields:
    ``specs_fields`` (``describe_environment``) for the step's observation, action, reward and discount, plus step
    and episode metadata fields. ``kwargs``: the config's other fields (``name``, ``description``...)."""
    from tensorflow_datasets.rlds import rlds_base

    cls = config_cls or rlds_base.DatasetConfig
    return cls(observation_info=tfds_feature(specs_fields["observation"]),
               action_info=tfds_feature(specs_fields["action"]),
               reward_info=tfds_feature(specs_fields["reward"]),
               discount_info=tfds_feature(specs_fields["discount"]),
               step_metadata_info={k: tfds_feature(f) for k, f in step_metadata.items()},
               episode_metadata_info={k: tfds_feature(f) for k, f in episode_metadata.items()}, **kwargs)


def summary(field: Field) -> str:
    """A field in a few words, e.g. ``text`` or ``float64[3]`` or ``{text, board: int8[5]}``."""
    if field["kind"] == "dict":
        return "{" + ", ".join(f"{k}: {summary(f)}" for k, f in field["fields"].items()) + "}"
    base = "text" if field["kind"] == "text" else field["dtype"]
    if field["kind"] == "text" and field.get("string_type") == "bytes":
        base = "bytes"
    shape = field.get("shape") or []
    return base + (f"[{', '.join(map(str, shape))}]" if shape else "")


__all__ = ["SPECS_KEY", "SPEC_FIELDS", "UnsupportedSpecError", "ValueMismatchError", "conform", "dataset_config",
           "describe_environment", "describe_envlogger_specs", "describe_spec", "field_of_value", "from_json",
           "number_field", "summary", "text_field", "tfds_feature", "to_json"]
