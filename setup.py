"""The one packaging option ``setup.cfg`` cannot state: the ``builders/`` folder installs as ``rlds_lang_datasets``.

Everything else (metadata, requirements, package data, entry points) is in ``setup.cfg``. The source tree keeps the
folder ``builders/`` so that ``tfds build builders/<name>`` builds by folder; the wheel names the package
``rlds_lang_datasets`` so that it cannot collide with another project's ``builders``.
"""

from setuptools import find_packages, setup

#: the top-level packages installed under their own folder's name.
PACKAGES = ("rlds_lang", "loggers", "transforms", "trainers", "creator_web")
#: installed name -> source folder.
RENAMED = {"rlds_lang_datasets": "builders"}


def packages() -> tuple[list[str], dict[str, str]]:
    """Every package to install and the ``package_dir`` that maps each renamed one to its source folder."""
    found = find_packages(include=[pattern for name in PACKAGES for pattern in (name, f"{name}.*")])
    package_dir = {}
    for installed, folder in RENAMED.items():
        for name in find_packages(include=[folder, f"{folder}.*"]):
            renamed = installed + name[len(folder):]
            found.append(renamed)
            package_dir[renamed] = name.replace(".", "/")
    return found, package_dir


if __name__ == "__main__":
    PACKAGE_LIST, PACKAGE_DIR = packages()
    setup(packages=PACKAGE_LIST, package_dir=PACKAGE_DIR)
