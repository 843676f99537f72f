"""response_trees dataset."""
