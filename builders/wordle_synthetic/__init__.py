"""wordle_synthetic dataset."""
