"""TFDS dataset folders of rlds-lang (``tfds build builders/<name>``) and the helpers they share."""
