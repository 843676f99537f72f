"""Lossless recording of language environments through EnvLogger (Riegeli backend), and reading back.

``record`` plays a policy in an environment and writes every step with episode and step metadata;
``read_episodes`` turns what it wrote into RLDS episodes (SAR alignment, neutral last step);
``record_and_read`` does both through a temporary folder (how builders generate episodes). ``Durability``
(``PER_EPISODE`` by default, or group commit) chooses what a killed recording may lose (docs/guides/durability.md).
A damaged log file is a ``DamagedLogError`` naming it (docs/guides/damaged_input.md); a write that fails (a full
disk) stops the recording with a ``LogWriteError`` naming the folder and the file, every committed episode kept;
a second writer into a folder gets ``FolderLockedError`` (docs/guides/durability.md).
"""

from loggers.durability import PER_EPISODE, Durability
from loggers.folder_lock import FolderLockedError
from loggers.log_folder import LogWriteError
from loggers.reader import dataset_metadata, log_dirs, read_episodes, read_log_dir
from loggers.record import RecordResult, record
from loggers.riegeli_files import DamagedLogError
from loggers.roundtrip import record_and_read

__all__ = ["DamagedLogError", "FolderLockedError", "LogWriteError", "PER_EPISODE", "Durability", "RecordResult",
           "dataset_metadata", "log_dirs", "read_episodes", "read_log_dir", "record", "record_and_read"]
