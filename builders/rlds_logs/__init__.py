"""rlds_logs: any folder of logs that loggers.record wrote, as a TFDS dataset with features read from the specs."""
