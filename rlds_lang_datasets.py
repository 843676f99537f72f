"""The source tree's name for the datasets package the wheel installs as ``rlds_lang_datasets``.

The wheel maps the ``builders/`` folder to the package ``rlds_lang_datasets`` (``setup.cfg``, ``package_dir``);
this module is not installed. In a checkout it makes ``import rlds_lang_datasets`` (and ``tfds build NAME
--imports rlds_lang_datasets``) the very ``builders`` package, so each builder class is defined, and registered with
TFDS, once however it is reached.
"""

import sys

import builders

sys.modules[__name__] = builders
