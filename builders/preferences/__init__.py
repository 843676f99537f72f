"""preferences dataset."""
